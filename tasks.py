"""openssl-matrix tasks: `invoke matrix <command>` (see README.md and `invoke matrix help`).

The task is built from the command and flag tables in ``openssl_matrix/cli.py``; each
command's work is in ``openssl_matrix/commands.py``.
"""

from __future__ import annotations

from openssl_matrix.cli import matrix_task
from openssl_matrix.commands import HANDLERS

matrix = matrix_task(HANDLERS)
