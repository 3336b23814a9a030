"""``python -m openssl_matrix COMMAND ...``: the command line (see cli/main.py).

A signal that arrives while the package is still being imported (Ctrl-C, or a SIGTERM
from a stopping job, in the first fraction of a second) ends the process as an
interruption does later (exit 130, one line, no traceback): nothing was written yet.
A signal before this file runs at all is the interpreter's: it ends the process with
that signal (-2 or -15). So would one after the command has ended, while the interpreter
shuts down (its finalisation puts the default handlers back): the work is done and its
status on its way out, so both signals are blocked from then on and the status stands."""

import signal
import sys

from openssl_matrix.core.errors import INTERRUPTED
from openssl_matrix.core.interrupt import NOT_STARTED, install

install()
try:
    from openssl_matrix.cli.main import main
except KeyboardInterrupt:
    print(NOT_STARTED, file=sys.stderr)
    sys.exit(INTERRUPTED)

try:
    main()
finally:  # the command has ended: a late signal must not turn its status into -15
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
