"""``curate <command> --config FILE`` that holds still at a chosen point, to be SIGKILLed.

    python curate_pause.py <command> --config FILE [--set k=v ...]

The CLI itself (``flows.cli.main``), with one hook in the driver chosen by the
environment, so the test's kill lands at a known point of the run, not after a sleep:

- ``KILLTEST_PHASE=<phase>`` and ``KILLTEST_AFTER=<n>``: once the checkpoint of that
  phase (``<checkpoint_path>/<step>/<phase>``) has durably recorded at least ``n``
  completed partitions (right after the LMDB commit of ``CheckpointStore.mark_completed``);
- ``KILLTEST_PUTS=<n>``: once ``n`` output files were put to object storage by the
  driver (``curator.io.storage.put_file``: every file goes up as it is written,
  ``curator.io.shared``; hidden names, work files and lists, are not counted);
- ``KILLTEST_LISTING=1``: right before the list of what the run published
  (``.curate-published-<step>.json``) is put: every file, the completion artifact too,
  is up, the list is not.

There the driver writes ``KILLTEST_MARKER`` (JSON: what it saw) and sleeps until it is
killed; the pool's workers go on with the partitions already handed to them (their
outputs land in the local copy, unrecorded), as they would at a real kill. Nothing else
changes: without these variables this is ``curate``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _hold(marker: str, seen: dict[str, Any]) -> None:
    tmp = Path(marker + ".tmp")
    tmp.write_text(json.dumps(seen), encoding="utf-8")
    os.replace(tmp, marker)  # whole or absent: the test never reads half of it
    print(f"killtest: holding at {seen}", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


def install() -> None:
    marker = os.environ["KILLTEST_MARKER"]
    phase, after = os.environ.get("KILLTEST_PHASE"), int(os.environ.get("KILLTEST_AFTER", "1"))
    puts = os.environ.get("KILLTEST_PUTS")
    listing = os.environ.get("KILLTEST_LISTING")
    planned: dict[str, int] = {}

    from curator.checkpoint import CheckpointStore
    from curator.pipeline import Pipeline

    plan_sources = Pipeline._plan_sources

    def plan(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
        sources = plan_sources(self, *args, **kwargs)
        planned[self.name] = len(sources)  # "<step>-<phase>"
        return sources

    Pipeline._plan_sources = plan  # type: ignore[method-assign]

    if phase:
        mark_completed = CheckpointStore.mark_completed

        def mark(self: CheckpointStore, sources: Any) -> None:
            mark_completed(self, sources)  # committed: durable on disk
            step = self.root.parent.name
            if self.root.name == phase and len(self._completed) >= after:
                _hold(marker, {"phase": f"{step}-{phase}",
                               "completed": sorted(self._completed), "planned": planned})

        CheckpointStore.mark_completed = mark  # type: ignore[method-assign]

    if puts or listing:
        from curator.io import storage

        put_file = storage.put_file
        done: list[str] = []

        def put(local: Any, url: str) -> None:
            put_file(local, url)
            if not puts:
                return
            done.append(url)
            visible = [u for u in done if "/." not in u.split("://", 1)[-1]]
            if len(visible) >= int(puts):
                _hold(marker, {"puts": done, "planned": planned})

        storage.put_file = put  # type: ignore[assignment]
        write_bytes = storage.write_bytes

        def pipe(url: str, data: bytes) -> None:  # lists and snapshots: from memory
            if listing and url.rsplit("/", 1)[-1].startswith(".curate-published-"):
                _hold(marker, {"puts": done, "planned": planned})
            write_bytes(url, data)

        storage.write_bytes = pipe  # type: ignore[assignment]


if __name__ == "__main__":
    install()
    from flows.cli import main

    sys.argv = ["curate", *sys.argv[1:]]
    main()
