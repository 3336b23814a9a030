"""``python -m openssl_matrix COMMAND ...``: the command line (see cli/main.py)."""

from openssl_matrix.cli.main import main

main()
