"""openssl-matrix tasks: `invoke matrix <command>` (see README.md and `invoke matrix help`).

The task is built from the command and flag tables in ``openssl_matrix/cli/table.py``; each
command's work is in ``openssl_matrix/cli/commands.py``. The same table runs as
``python -m openssl_matrix COMMAND`` and ``openssl-matrix COMMAND`` (cli/main.py).
"""

from __future__ import annotations

from openssl_matrix.cli.commands import HANDLERS
from openssl_matrix.cli.table import matrix_task

matrix = matrix_task(HANDLERS)
