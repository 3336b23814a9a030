"""The commands, one module each (``invoke matrix build`` is ``build.py``): each declares
``COMMAND`` (its summary and its own flags) and its handler ``run``. cli/table.py's
``REGISTRY`` lists them and imports a module by name when its command runs; nothing is
imported here, so that a command starts with its own module's imports only."""
