"""A two-node Ray cluster that runs the retry scenarios of tests/chaos/test_retries.py.

    python tests/chaos/_retry_cluster.py DIR

Starts a head and one worker node (``ray.cluster_utils.Cluster``, one CPU each, a small
object store, bound to 127.0.0.1: the caller sets ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
and a short ``RAY_TMPDIR``), connects to it, and writes ``DIR/ready.json`` (the node
ids). Then reads stdin, one JSON request a line, ``{"scenario", "workdir",
"max_attempts"}``: runs the pipeline of :func:`pipeline` over ``workdir/in`` on a
:class:`~executors.ray.RayExecutor` and writes ``workdir/result.json``. EOF shuts the
cluster down. A process of its own, so it never meets a Ray that the test session
started; its stdout and stderr (Ray's raylets write there) go to a log file.

Scenarios (:class:`Probe`'s ``mode``; the victim is the partition of ``b.jsonl``):
``crash_once`` (the victim SIGKILLs its own worker on its first attempt),
``crash_always`` (on every attempt), ``raise`` (the victim raises ``ValueError``),
``node`` (every unit waits a second on the head, so Ray sends some to the worker node; a
unit there waits until the node is removed, not gracefully).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curator.errors import CuratorError
from curator.io.partitioning import FilePartitioningStage
from curator.io.writers import output_stem, write_atomic
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage
from curator.tasks import FileGroupTask

VICTIM = "b.jsonl"


def attempt_marks(marks: Path, name: str) -> list[Path]:
    """The attempt files of input ``name``: one per attempt that started."""
    return sorted(marks.glob(f"{name}.attempt-*"))


@dataclass
class Probe(ProcessingStage[FileGroupTask, FileGroupTask]):
    """Records each attempt in ``marks`` (``<file>.attempt-<n>``, made exclusively), then
    does what ``mode`` says to the victim's partition (module docstring)."""

    marks: str = ""
    mode: str = "none"
    head: str = ""  # the head node's id (``node`` mode: a unit elsewhere waits)
    name: str = "probe"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        files = [Path(p).name for p in task.data]
        marks = Path(self.marks)
        attempt = 0
        for name in files:
            attempt = 1
            while True:
                try:
                    fd = os.open(marks / f"{name}.attempt-{attempt}",
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    attempt += 1
                    continue
                os.close(fd)
                break
        victim = VICTIM in files
        if victim and (self.mode == "crash_always"
                       or (self.mode == "crash_once" and attempt == 1)):
            os.kill(os.getpid(), signal.SIGKILL)  # this Ray worker process dies here
        if self.mode == "raise" and victim:
            raise ValueError(f"a deterministic failure of {VICTIM} (attempt {attempt})")
        if self.mode == "node":
            ray = sys.modules["ray"]
            node = ray.get_runtime_context().get_node_id()
            (marks / f"{files[0]}.on-{node}").touch()
            # on the head, long enough for Ray to send the next units to the worker node;
            # on the worker node, until the node is removed
            time.sleep(1.0 if node == self.head else 60)
        return task


@dataclass
class CopyWriter(ProcessingStage[FileGroupTask, FileGroupTask]):
    """The sink: each partition's input bytes to ``<path>/<source id>.jsonl``, atomically."""

    path: str = ""
    name: str = "copy_writer"

    def process(self, task: FileGroupTask) -> FileGroupTask:
        data = b"".join(Path(p).read_bytes() for p in task.data)
        write_atomic(Path(self.path) / f"{output_stem(task)}.jsonl", data)
        return task


def pipeline(workdir: Path, mode: str, head: str = "", out: Path | None = None,
             name: str = "") -> Pipeline:
    """``workdir/in`` to ``out`` (default ``workdir/out``), attempts in ``workdir/marks``
    (``out``'s sibling ``marks`` when ``out`` is given)."""
    out = out or workdir / "out"
    marks = out.parent / "marks" if out != workdir / "out" else workdir / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    return Pipeline(name or f"retry-{mode}", [
        FilePartitioningStage(file_paths=str(workdir / "in"), files_per_partition=1),
        Probe(marks=str(marks), mode=mode, head=head),
        CopyWriter(path=str(out)),
    ])


def make_inputs(folder: Path, names: tuple[str, ...] = ("a", "b", "c", "d")) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        lines = [json.dumps({"id": f"{name}{j}", "text": f"doc {name} {j} " * (i + 1)})
                 for j in range(5)]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def remove_when_busy(cluster: Any, node: Any, marks: Path, removed: list[float],
                     done: threading.Event) -> None:
    """Remove ``node`` (not gracefully) once a unit has started on it."""
    while not done.wait(0.05):
        if any(marks.glob(f"*.on-{node.node_id}")):
            cluster.remove_node(node, allow_graceful=False)
            removed.append(time.monotonic())
            return


def producer(executor: Any, workdir: Path) -> dict[str, Any]:
    """The producer block a step run on ``executor`` writes, read through its model."""
    from curator.config import validate_config
    from curator.models import Producer
    from curator.steps.base import StepRun
    from curator.steps.registry import BY_KEY

    spec = BY_KEY["ingest"]
    config = validate_config(spec.config, {"input": str(workdir / "in" / "*.jsonl"),
                                           "output_dir": str(workdir / "step-out")})
    return Producer.model_validate(StepRun(config, executor).producer()).dump()


def run(cluster: Any, request: dict[str, Any]) -> dict[str, Any]:
    from executors.ray import RayExecutor

    workdir = Path(request["workdir"])
    mode = request["scenario"]
    removed: list[float] = []
    done = threading.Event()
    watcher = None
    if mode == "node":
        watcher = threading.Thread(target=remove_when_busy, daemon=True, args=(
            cluster, next(iter(cluster.worker_nodes)), workdir / "marks", removed, done))
    started = time.monotonic()
    out: dict[str, Any] = {"scenario": mode}
    executor = RayExecutor(workers=2, max_attempts=request["max_attempts"])
    try:
        job = pipeline(workdir, mode, head=cluster.head_node.node_id)
        if watcher is not None:
            watcher.start()
        result = job.run(executor=executor, checkpoint_path=workdir / "ckpt")
        out.update(completed=result.sources_completed, pending=result.sources_pending)
        out.update(producer=producer(executor, workdir))
    except CuratorError as exc:
        out.update(error_id=exc.error_id, message=exc.message,
                   cause=type(exc.__cause__).__name__ if exc.__cause__ else None)
    finally:
        done.set()
        if watcher is not None and watcher.is_alive():
            watcher.join()
        executor.close()  # joined, not started: Ray stays up
    out.update(describe=executor.describe(), seconds=round(time.monotonic() - started, 1),
               node_removed=bool(removed),
               removed_at=round(removed[0] - started, 1) if removed else None)
    return out


def main() -> int:
    folder = Path(sys.argv[1])
    os.environ["RAY_TMPDIR"] = str(folder)
    import ray
    from ray.cluster_utils import Cluster

    node_args = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024,
                 "node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True,
                      head_node_args={**node_args, "temp_dir": str(folder / "ray")})
    try:
        cluster.add_node(**node_args)
        cluster.wait_for_nodes()
        os.chdir("/")  # the driver's working directory goes on the workers' sys.path
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        write_atomic(folder / "ready.json", json.dumps(
            {"head": cluster.head_node.node_id,
             "workers": [n.node_id for n in cluster.worker_nodes]}))
        for line in sys.stdin:  # until the caller closes the pipe
            request = json.loads(line)
            if len(cluster.worker_nodes) < 1:  # an earlier scenario removed it
                cluster.add_node(**node_args)
                cluster.wait_for_nodes()
            result = run(cluster, request)
            write_atomic(Path(request["workdir"]) / "result.json", json.dumps(result))
    finally:
        ray.shutdown()
        cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
