"""The command line: the command and flag table (invoke, python -m openssl_matrix) and the
commands.
"""
