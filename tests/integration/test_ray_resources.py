"""A stage's ``Resources`` on the Ray backend: each unit's Ray task reserves them.

On the session's Ray (2 CPUs), units of a chain whose largest stage declares
``cpus=2`` never run at the same time, even when the first waits for a second to
start; with ``cpus=1`` two run at once. Each unit records when it ran to a file of its
own; the test measures the overlap.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from curator.errors import CuratorError
from curator.execution import WorkerChain
from curator.pipeline import Pipeline
from curator.stages import ProcessingStage, Resources
from curator_testing.jsonl import DocumentBatch
from executors import RayExecutor
from executors.ray import chain_resources, fits_a_node
from tests.integration._support import Proc, ray_env
from tests.unit._support import Emit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

UNITS = 4
SLEEP = 1.5  # each unit's work
PATIENCE = 60.0  # at most this long for Ray to start a second worker


@dataclass
class Timed(ProcessingStage[DocumentBatch, DocumentBatch]):
    """Sleeps, and writes when it ran to ``<folder>/<source>.json``.

    With ``wait_for_peer``, a unit first waits (that long at most) until another unit
    has started: where two may run at once they then do, however long Ray takes to
    start its second worker on a busy machine. Where they may not, no peer comes.
    """

    folder: str = ""
    resources: Resources = field(default_factory=Resources)
    wait_for_peer: float = 0.0
    name: str = "timed"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        start = time.time()
        Path(self.folder, f"{task.source_id}.started").touch()
        while time.time() < start + self.wait_for_peer and len(
            list(Path(self.folder).glob("*.started"))
        ) < 2:
            time.sleep(0.02)
        time.sleep(SLEEP)
        Path(self.folder, f"{task.source_id}.json").write_text(
            json.dumps({"start": start, "end": time.time(), "pid": os.getpid()}))
        return task


@dataclass
class Light(ProcessingStage[DocumentBatch, DocumentBatch]):
    """A stage that declares nothing (the default Resources)."""

    name: str = "light"

    def process(self, task: DocumentBatch) -> DocumentBatch:
        return task


def most_at_once(folder: Path) -> int:
    """The largest number of recorded intervals that overlap at one instant."""
    spans = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    assert len(spans) == UNITS
    edges = sorted([(s["start"], 1) for s in spans] + [(s["end"], -1) for s in spans])
    now = most = 0
    for _, step in edges:  # at equal times an end (-1) sorts before a start
        now += step
        most = max(most, now)
    return most


def run_timed(tmp_path: Path, cpus: float, executor: RayExecutor | None = None,
              wait_for_peer: float = 0.0) -> int:
    folder = tmp_path / f"spans-{cpus:g}"
    folder.mkdir()
    timed = Timed(folder=str(folder), resources=Resources(cpus=cpus),
                  wait_for_peer=wait_for_peer)
    pipeline = Pipeline("resources", [Emit(n=UNITS), Light(), timed])
    executor = executor or RayExecutor()
    result = pipeline.run(executor, checkpoint_path=tmp_path / f"ck-{cpus:g}")
    assert result.sources_completed == UNITS
    return most_at_once(folder)


def test_cpus_2_on_2_cpus_runs_one_unit_at_a_time(tmp_path: Path, ray_local: None) -> None:
    import ray

    assert ray.cluster_resources()["CPU"] == 2
    assert run_timed(tmp_path, cpus=2, wait_for_peer=SLEEP) == 1


def test_cpus_1_on_2_cpus_runs_two_units_at_once(tmp_path: Path, ray_local: None) -> None:
    assert run_timed(tmp_path, cpus=1, wait_for_peer=PATIENCE) == 2


def test_cpus_per_partition_replaces_the_stages_cpus(tmp_path: Path, ray_local: None) -> None:
    executor = RayExecutor(cpus_per_partition=1)
    assert run_timed(tmp_path, cpus=2, executor=executor, wait_for_peer=PATIENCE) == 2


def chain_of(*stages: ProcessingStage) -> WorkerChain:
    from curator.adapter import StageAdapter

    return WorkerChain.from_adapters("t", [StageAdapter(s) for s in stages])


def test_the_chain_needs_the_largest_of_each_figure() -> None:
    chain = chain_of(Light(), Timed(resources=Resources(cpus=0.5, gpus=1)),
                     Timed(resources=Resources(cpus=3, memory=2**30)))
    assert chain_resources(chain) == Resources(cpus=3, gpus=1, memory=2**30)
    assert chain_resources(chain_of()) == Resources()
    assert Resources.largest([]) == Resources()


@pytest.mark.parametrize("bad", [{"cpus": -1}, {"gpus": float("nan")}, {"memory": float("inf")},
                                 {"cpus": "2"}, {"gpus": True}])
def test_resources_refuse_what_no_scheduler_can_reserve(bad: dict) -> None:
    with pytest.raises(CuratorError) as err:
        Resources(**bad)
    assert err.value.error_id == "invalid_resources"


def test_capacity_follows_the_requirement(ray_local: None) -> None:
    for cpus, slots in ((1, 2), (2, 1), (0.5, 4)):
        executor = RayExecutor()
        executor.start(chain_of(Timed(resources=Resources(cpus=cpus))))
        try:
            assert executor.capacity == slots
        finally:
            executor.stop()


def test_fits_a_node() -> None:
    nodes = [{"CPU": 2.0, "memory": 4e9}, {"CPU": 8.0, "GPU": 1.0, "memory": 1e9}]
    assert fits_a_node(Resources(cpus=8, gpus=1), nodes)
    assert fits_a_node(Resources(cpus=2, memory=3 * 10**9), nodes)
    assert not fits_a_node(Resources(cpus=8, memory=3 * 10**9), nodes)  # no single node
    assert not fits_a_node(Resources(gpus=2), nodes)


def test_a_unit_no_node_can_hold_is_warned_on_a_ray_it_found(
    ray_local: None, caplog: pytest.LogCaptureFixture
) -> None:
    executor = RayExecutor()
    with caplog.at_level(logging.WARNING, logger="curator.executors.ray"):
        executor.start(chain_of(Timed(resources=Resources(gpus=1))))
    executor.stop()
    assert any("no node of this Ray has that" in r.getMessage() for r in caplog.records)


def test_a_unit_no_node_can_hold_is_refused_on_a_ray_it_started(
    tmp_path: Path, ray_tmp: Path
) -> None:
    """A Ray the executor started gets no more nodes: waiting would be for ever."""
    script = tmp_path / "gpu.py"
    script.write_text(textwrap.dedent("""
        import sys
        from dataclasses import dataclass, field
        from curator.errors import CuratorError
        from curator.pipeline import Pipeline
        from curator.stages import ProcessingStage, Resources
        from executors import RayExecutor
        from tests.unit._support import Emit

        @dataclass
        class NeedsGpu(ProcessingStage):
            resources: Resources = field(default_factory=lambda: Resources(gpus=1))

            def process(self, task):
                return task

        if __name__ == "__main__":
            executor = RayExecutor(workers=1, init_kwargs={"num_gpus": 0})
            try:
                Pipeline("gpu", [Emit(n=2), NeedsGpu()]).run(executor)
            except CuratorError as exc:
                print(exc.error_id)
            finally:
                executor.close()
        """))
    with Proc([sys.executable, str(script)], tmp_path / "logs", "gpu",
              env=ray_env(ray_tmp)) as proc:
        assert proc.wait(120) == 0, proc.stderr()[-3000:]
        assert proc.stdout().strip().splitlines()[-1] == "stage_resources_unavailable"
