"""The ``curate`` console entry point: SIGINT and SIGTERM handled from its first line.

Importing the command line (typer, every step, pyarrow, polars) takes a second or more;
a Ctrl+C then used to print a ``KeyboardInterrupt`` traceback (issue #29, item 10). Here
the one signal handler, :class:`curator.interrupts.Interrupts`, is installed before that
import and kept for the whole command: a signal outside a run ends the command with one
line (``error: [interrupted_sigint] ...``) and exit 130 / 143; a step's run installs
its own for its duration (its report, the engine's drain, resume). Outside a run the
signal is raised as :class:`~curator.interrupts.Interrupted`, a ``BaseException``, so
no library on the way catches it as an error of its own.
"""

from __future__ import annotations

import sys

from curator.interrupts import Interrupted, Interrupts  # light: signal, logging


def main() -> None:
    try:
        with Interrupts(command=True):
            from flows.cli import main as cli_main

            cli_main()
    except Interrupted as exc:  # outside a step's run: the imports, Prefect, the CLI
        print(f"error: {exc.error}", file=sys.stderr)
        sys.exit(exc.error.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
