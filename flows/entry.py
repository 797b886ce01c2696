"""The ``curate`` console entry point: SIGINT and SIGTERM handled from its first line.

Importing the command line (typer, every step, pyarrow, polars) takes a second or more;
a Ctrl+C then used to print a ``KeyboardInterrupt`` traceback (issue #29, item 10). Here
the one signal handler, :class:`curator.interrupts.Interrupts`, is installed before that
import and kept for the whole command: a signal outside a run ends the command with one
line (``error: [interrupted_sigint] ...``) and exit 130 / 143; a step's run installs
its own for its duration (its report, the engine's drain, resume).
"""

from __future__ import annotations

import sys

from curator.errors import CuratorError
from curator.interrupts import Interrupts  # light: signal, logging, curator.errors


def main() -> None:
    with Interrupts():
        try:
            from flows.cli import main as cli_main
        except CuratorError as exc:  # a signal while the command line was imported
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(exc.exit_code)
        cli_main()


if __name__ == "__main__":  # pragma: no cover
    main()
