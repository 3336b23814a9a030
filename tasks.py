"""openssl-matrix tasks: `invoke matrix <command>` (see README.md and `invoke matrix help`).

The task is built from the commands' declarations, one module per command under
``openssl_matrix/cli/commands/``, listed in the registry of ``openssl_matrix/cli/table.py``.
The same table runs as ``python -m openssl_matrix COMMAND`` and ``openssl-matrix COMMAND``
(cli/main.py).
"""

from __future__ import annotations

from openssl_matrix.cli.shared import handlers
from openssl_matrix.cli.table import matrix_task

matrix = matrix_task(handlers())
