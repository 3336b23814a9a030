"""``python -m openssl_matrix COMMAND ...``: the command line (see cli/main.py).

A signal that arrives while the package is still being imported (Ctrl-C, or a SIGTERM
from a stopping job, in the first fraction of a second) ends the process as an
interruption does later (exit 130, one line, no traceback): nothing was written yet.
A signal before this file runs at all is the interpreter's: it ends the process with
that signal (-2 or -15)."""

import sys

from openssl_matrix.core.errors import INTERRUPTED
from openssl_matrix.core.interrupt import install

install()
try:
    from openssl_matrix.cli.main import main
except KeyboardInterrupt:
    print("\ninterrupted before the command started: nothing was written", file=sys.stderr)
    sys.exit(INTERRUPTED)

main()
