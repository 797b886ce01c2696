"""The cost of a checkpoint on object storage (curator/checkpoint_mirror.py), on moto.

    .venv/bin/python bench/checkpoint_mirror.py [--sizes 1000 10000 100000] [--repeat 5]

For a writer file holding N completed partitions (each with a four-counter statistics
record, as a step's are), measures on a ``python -m moto.server`` on loopback:

- ``copy_ms``: the consistent snapshot (``env.copy(compact=True)``), the only part
  that holds the store's lock (a commit waits at most this long);
- ``put_ms``: the one put of the snapshot (in the background thread);
- ``restore_ms``: a new driver's restore of that file into an empty directory;
- ``commit_ms``: one commit of 256 partitions (median), alone; and its median and
  maximum over 40 commits 50 ms apart while the mirror pushes every 0.5 s (a commit
  that comes during a copy waits for it).

Best of ``--repeat``. Prints one JSON line. A real bucket adds its network to put and
restore, nothing to the copy.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from curator_testing.moto import moto_server

STATS = {"filter.items_in": 1234, "filter.items_out": 1000, "filter.kept": 1000,
         "filter.dropped_min_words": 234}


def _fill(store, n: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(0, n, 256):
        store.mark_completed({f"{h:012x}": STATS for h in range(i, min(n, i + 256))})


def measure(url: str, root: Path, n: int, repeat: int) -> dict[str, float]:
    from curator.checkpoint import CheckpointStore
    from curator.checkpoint_mirror import CheckpointMirror

    mirror = CheckpointMirror(url, root / "a", interval=3600)
    store = CheckpointStore(root / "a" / "p", writer_id="w", mirror=mirror)
    _fill(store, n)
    copy, put = [], []
    for _ in range(repeat):
        before = len(mirror.pushes)
        mirror.push(store)
        _, size, c, p = mirror.pushes[before]
        copy.append(c)
        put.append(p)
    alone = []
    for r in range(repeat):
        t = time.perf_counter()
        store.mark_completed({f"x{r}-{j}": STATS for j in range(256)})
        alone.append(time.perf_counter() - t)
    store.close()
    restore = []
    for r in range(repeat):
        t = time.perf_counter()
        CheckpointMirror(url, root / f"r{r}").restore()
        restore.append(time.perf_counter() - t)
    pushing = CheckpointMirror(url, root / "b", interval=0.5)
    store = CheckpointStore(root / "b" / "p", writer_id="w2", mirror=pushing)
    _fill(store, n)
    busy, before = [], len(pushing.pushes)
    for r in range(40):
        t = time.perf_counter()
        store.mark_completed({f"y{r}-{j}": STATS for j in range(256)})
        busy.append(time.perf_counter() - t)
        time.sleep(0.05)
    store.close()
    alone.sort()
    busy.sort()
    return {"partitions": n, "bytes": size,
            "copy_ms": round(min(copy) * 1e3, 1), "put_ms": round(min(put) * 1e3, 1),
            "restore_ms": round(min(restore) * 1e3, 1),
            "commit_ms": round(alone[len(alone) // 2] * 1e3, 1),
            "commit_ms_pushing_median": round(busy[len(busy) // 2] * 1e3, 1),
            "commit_ms_pushing_max": round(busy[-1] * 1e3, 1),
            "pushes_while_committing": len(pushing.pushes) - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with moto_server() as server:
        client = server.client()
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.sizes:
                bucket = f"bench-{n}"
                client.create_bucket(Bucket=bucket)
                rows.append(measure(f"s3://{bucket}/ck", Path(tmp) / str(n), n, args.repeat))
        print(json.dumps({"load_average": os.getloadavg()[0], "rows": rows}))


if __name__ == "__main__":
    main()
