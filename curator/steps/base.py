"""One run base for every step: the order of things, the producer block, the artifacts.

A step subclasses :class:`StepRun` and fills in four methods; :meth:`StepRun.run`
keeps the order every step follows:

1. ``config.preflight()`` and :meth:`refuse`: every check that can fail before the
   output is touched. A refusal leaves the output directory exactly as it was (the
   artifacts there still describe the data beside them) and writes nothing.
2. prepare work keyed on the config digest (:func:`prepare_work`): the work files and
   checkpoint of the same configuration are resumed, anything else starts afresh and
   :meth:`clear_outputs` removes this step's earlier outputs;
3. :meth:`execute`: the phases on the executor (:meth:`phase`), statistics merged
   from disk;
4. :meth:`artifacts`: the reports, built from merged statistics, written atomically
   with the completion artifact last, on failure too (with ``error``, without
   ``producer.completed_at``);
5. :meth:`cleanup`: work files and checkpoint go, only after a completed run's
   artifacts are written (a run killed before that still resumes);
6. :meth:`verdict`: a completed run whose result is a judgement (the audit) raises its
   error here, after its complete artifacts are written: the artifact is complete
   (``producer.completed_at``), the verdict failed.

Temp files that a killed run's writers left in :meth:`output_dirs` are cleared once
the output is touched and again at cleanup.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from curator.artifacts import canonical_digest, tool_revision, utc_now, write_json_atomic
from curator.checkpoint import METADATA_DIRNAME
from curator.checkpoint_mirror import CheckpointMirror, resolve_checkpoint
from curator.config import CorpusStepConfig, StepConfig, url_problems
from curator.errors import CuratorError
from curator.execution import Executor
from curator.interrupts import Interrupts
from curator.io import parquet_copy, shared, storage
from curator.io.parquet_copy import ShardUnits
from curator.io.parquet_export import PARQUET_DIR, export_parquet, shard_order
from curator.io.writers import clear_stale_temps, write_atomic
from curator.locking import DirLock, checkpoint_lock, output_lock
from curator.pipeline import Pipeline, PipelineResult, Progress
from curator.stages import ProcessingStage
from curator.steps.spec import Problem, StepSpec
from curator.tasks import EmptyTask

log = logging.getLogger("curator.steps")

#: ``on_progress(phase, progress)``: how a step reports its phases' progress.
ProgressHook = Callable[[str, Progress], None]


def partition_ids(partitions: ProcessingStage) -> list[str]:
    """The source ids of a partitioning stage's plan, in plan order."""
    return [t.get_deterministic_id() for t in partitions.process(EmptyTask())]


def can_resume(work: Path, ckpt_root: Path | None, config_digest: str) -> bool:
    """The one resume predicate: a checkpoint holding completions, and work files made
    by the same configuration (``config_digest``)."""
    marker = shared.localize(work / "config_hash")  # a new driver: from the area's URL
    return (ckpt_root is not None and marker.is_file()
            and marker.read_text() == config_digest
            and any(ckpt_root.glob(f"*/{METADATA_DIRNAME}/*.mdb")))


def prepare_work(work: Path, ckpt_root: Path | None, config_digest: str,
                 mirror: CheckpointMirror | None = None) -> bool:
    """Keep a resumable run's work files, else start afresh; return whether resuming.

    Another configuration's partial results are never mixed in: its checkpoint (and
    the checkpoint's mirror) and work files are removed.
    """
    resuming = can_resume(work, ckpt_root, config_digest)
    if not resuming:
        if ckpt_root is not None and ckpt_root.exists():
            log.warning("checkpoint %s belongs to another configuration or its work files "
                        "are gone: starting afresh", ckpt_root)
            shutil.rmtree(ckpt_root, ignore_errors=True)
        if ckpt_root is not None and mirror is not None:
            mirror.discard(ckpt_root)
        shared.remove_tree(work)
    work.mkdir(parents=True, exist_ok=True)
    write_atomic(work / "config_hash", config_digest)
    return resuming


def refuse(problems: list[Problem]) -> None:
    """Raise the first problem (a step run stops at the first; a flow lists them all)."""
    if problems:
        error_id, message = problems[0]
        raise CuratorError(error_id, message)


def error_block(error: BaseException | None) -> dict[str, str] | None:
    """``{"error_id", "message"}`` of a failure, as every artifact writes it."""
    if error is None:
        return None
    if isinstance(error, CuratorError):
        return {"error_id": error.error_id, "message": error.message}
    if isinstance(error, KeyboardInterrupt):
        return {"error_id": "interrupted_sigint", "message": "interrupted"}
    return {"error_id": "internal_error", "message": f"{type(error).__name__}: {error}"}


def _rebase(data: Any, local: str, url: str) -> Any:
    """``data`` with the local copy's path replaced by the remote URL in every string."""
    if isinstance(data, str):
        return data.replace(local, url) if local in data else data
    if isinstance(data, dict):
        return {k: _rebase(v, local, url) for k, v in data.items()}
    if isinstance(data, list):
        return [_rebase(v, local, url) for v in data]
    return data


class StepRun:
    """One run of a step: its state, so a failure at any point still yields artifacts.

    Subclasses set :attr:`schema_version` and implement :meth:`execute` and
    :meth:`artifacts` (and, when they have them, :meth:`refuse`, :meth:`prepare`,
    :meth:`clear_outputs`, :meth:`config_extra`, :meth:`verdict`). The step's key, its
    URL keys and everything else about it come from its spec, bound to its config class
    (``config.step_spec``).
    """

    schema_version: ClassVar[int] = 1

    def __init__(self, config: StepConfig, executor: Executor | None = None,
                 on_progress: ProgressHook | None = None) -> None:
        self.config = config
        self.executor = executor
        self.on_progress = on_progress
        # a URL checkpoint_path: LMDB files on this disk, mirrored to the URL
        # (curator.checkpoint_mirror); a local path as it is
        local_ckpt, self.ckpt_mirror = resolve_checkpoint(config.execution.checkpoint_path)
        ckpt = str(local_ckpt) if local_ckpt is not None else None
        #: the checkpoint directory on this disk (the URL's local copy for a URL)
        self.local_checkpoint = ckpt
        # a remote output_dir (s3://...) is written to a local copy, then published
        # (curator.io.storage, docs/storage.md); everything else sees a local directory
        url = config.output_dir  # type: ignore[attr-defined]
        self.output_url: str | None = url.rstrip("/") if storage.is_remote(url) else None
        self.out = (storage.local_copy_dir(url, ckpt, self.key) if self.output_url
                    else Path(url).resolve())
        #: a URL output's area: the local copy on each node, the URL the truth
        self.area = (shared.SharedArea(str(self.out), self.output_url) if self.output_url
                     else None)
        self.ckpt_root = Path(ckpt).resolve() / self.key if ckpt else None
        self.work = self.out / f".{self.key}-work"
        self.started_at = utc_now()
        self._t0 = time.perf_counter()
        self.error: BaseException | None = None
        self.completed = False
        self.touched_output = False
        self.resuming = False
        self.partitions_total = 0
        self.resumed_partitions = 0
        self._locks: list[DirLock] = []
        self._interrupts = Interrupts()
        #: the Parquet copy's block (``output_format: jsonl+parquet``), once written
        self.parquet: dict[str, Any] | None = None
        #: a failed phase's result so far (what its completed partitions counted), by name
        self.partial: dict[str, PipelineResult] = {}

    @property
    def spec(self) -> StepSpec:
        """The step's :class:`~curator.steps.spec.StepSpec` (its config class names it)."""
        return type(self.config).step_spec

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def step_id(self) -> str:
        return self.spec.step_id

    # -- the order every step follows ------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Run the step; return its completion artifact (also written to disk).

        The run holds the locks of its output directory and checkpoint
        (:mod:`curator.locking`) from before it touches them to its end: a second run
        on either is refused (``output_dir_locked``/``checkpoint_locked``, exit 2).
        A SIGTERM or SIGINT anywhere in the run (:mod:`curator.interrupts`) ends it with
        ``interrupted_sigterm``/``interrupted_sigint`` and its report; never while the
        reports are being written.
        """
        try:
            with self._interrupts, shared.driving(self.area):
                return self._run()
        finally:
            for lock in reversed(self._locks):
                lock.release()

    def lock(self, checkpoint: bool = True) -> None:
        """Take the output directory's (and the checkpoint's) lock, or raise."""
        wanted = [output_lock(self.out)]
        if checkpoint and self.ckpt_root is not None:
            wanted.append(checkpoint_lock(self.ckpt_root.parent, self.key))
        for lock in wanted[len(self._locks):]:
            lock.acquire()
            self._locks.append(lock)

    def _run(self) -> dict[str, Any]:
        try:
            refuse(self.config.url_problems())
            refuse(self.config.preflight())
            if self.out.is_dir():  # before refuse(): it reads what a running run writes
                self.lock(checkpoint=False)
            self.refuse()
            self.lock()
            if self.ckpt_mirror is not None and self.ckpt_root is not None:
                with storage.store_errors(f"{self.step_id}: restoring the checkpoint from "
                                          f"{self.ckpt_mirror.url}", True):
                    self.ckpt_mirror.restore()  # a new driver: the completions so far
                    self.ckpt_mirror.push_local(self.ckpt_root)
            self.prepare()
            blocked = next((p for p in (self.work, *self.work.parents) if p.exists()), None)
            if blocked is not None and not blocked.is_dir():
                raise CuratorError("work_dir_not_a_directory",
                                   f"{self.step_id}: its work directory {self.work} cannot be "
                                   f"made: {blocked} is a file (name a directory, or none: "
                                   "the default is inside output_dir)")
            if self.area is not None:
                shared.mark_driver(self.area)
            self.resuming = prepare_work(self.work, self.ckpt_root, self.config_hash(),
                                         self.ckpt_mirror)
            if not self.resuming:
                self.clear_outputs()
                if isinstance(self.config, CorpusStepConfig):  # an earlier Parquet copy
                    shutil.rmtree(self.out / PARQUET_DIR, ignore_errors=True)
                if self.output_url:  # what an earlier run published there goes too
                    self.unpublish()
            self.touched_output = True
            clear_stale_temps(*self.output_dirs())  # what a killed run's writers left
            self.execute()
            self._interrupts.check()  # a signal whose raise was swallowed (interrupts.py)
            if (isinstance(self.config, CorpusStepConfig)
                    and self.config.output_format == "jsonl+parquet"):
                self.parquet = self.make_parquet_copy()
            self.completed = True
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            if self.touched_output:
                with self._interrupts.deferred():
                    result = self.write_reports()
        with self._interrupts.deferred():
            self.cleanup()
        log.info("%s: done in %.1f s, output in %s", self.step_id,
                 time.perf_counter() - self._t0, self.out)
        self.verdict(result)
        return result

    def write_reports(self) -> dict[str, Any]:
        """:meth:`write_artifacts`, on a full or read-only disk too: a failed run's error
        is kept (not replaced by the report's own ``OSError``); a completed run whose
        report cannot be written fails with ``report_not_written``."""
        try:
            return self.write_artifacts()
        except OSError as exc:
            if self.error is not None:
                log.error("%s: the report of the failed run could not be written: %s",
                          self.step_id, exc)
                return {}
            self.completed = False
            raise CuratorError("report_not_written",
                               f"{self.step_id}: the report could not be written to "
                               f"{self.out}: {exc}") from exc

    def write_artifacts(self) -> dict[str, Any]:
        """Write every artifact in order, the completion artifact (the last) with the
        producer: a mapping as JSON, text or bytes as they are (a summary for people)."""
        written = self.artifacts()
        if self.parquet is not None and written:  # the completion artifact lists the copy
            path, data = written[-1]
            written[-1] = (path, {**data, "parquet": self.parquet})
        result: dict[str, Any] = {}
        for path, data in written:
            if isinstance(data, str | bytes):
                if path is not None:
                    write_atomic(path, data)
                continue
            if self.output_url:  # the reports name the URL, not the local copy
                data = _rebase(data, str(self.out), self.output_url)
            if path is not None:
                write_json_atomic(path, data)
            result = data
        if self.output_url:
            self.publish([p for p, _ in written if p is not None])
        return result

    def unpublish(self) -> None:
        """Remove what an earlier run published at the remote ``output_dir``."""
        assert self.output_url is not None
        try:
            storage.unpublish(self.output_url, self.key)
        except CuratorError:
            raise
        except Exception as exc:  # the store's own errors: credentials, permissions
            raise CuratorError(
                "object_storage_error",
                f"{self.step_id}: cannot remove the earlier outputs at {self.output_url}: "
                f"{type(exc).__name__}: {exc}", url=self.output_url) from exc

    def publish(self, artifacts: list[Path]) -> None:
        """List what this run put at the remote ``output_dir``, the artifacts last
        (:func:`curator.io.storage.publish`; the files went up as they were written)."""
        assert self.output_url is not None and self.area is not None
        last = [rel for rel in (self.area.relative(p) for p in artifacts) if rel]
        try:
            storage.publish(self.output_url, self.key, last=last)
        except CuratorError:
            raise
        except Exception as exc:  # the store's own errors (botocore, gcsfs) included
            if self.error is not None:
                log.error("%s: the outputs of the failed run could not be published to "
                          "%s: %s", self.step_id, self.output_url, exc)
                return
            self.completed = False
            raise CuratorError(
                "output_not_published",
                f"{self.step_id}: the outputs could not be published to {self.output_url}: "
                f"{type(exc).__name__}: {exc}; the local copy {self.out} and the checkpoint "
                "are kept: rerun to resume and publish again", url=self.output_url) from exc

    def cleanup(self) -> None:
        clear_stale_temps(*self.output_dirs())
        shared.remove_tree(self.work)  # from the area's URL too
        if self.ckpt_root is not None:
            shutil.rmtree(self.ckpt_root, ignore_errors=True)
            if self.ckpt_mirror is not None:  # a completed run leaves nothing there
                self.ckpt_mirror.discard(self.ckpt_root)
                self.ckpt_mirror.finish()
        if self.output_url:  # published: the remote copy is the output
            with storage.store_errors(f"{self.step_id}: cannot end the run at "
                                      f"{self.output_url}", True, url=self.output_url):
                storage.end_run(self.output_url, self.key)
            shutil.rmtree(self.out, ignore_errors=True)

    # -- what a step fills in ----------------------------------------------------------
    def refuse(self) -> None:
        """Every check that needs more than the config, before the output is touched."""

    def prepare(self) -> None:
        """Heavy set-up the run needs (a holdout index, a language model), after
        :meth:`refuse` and before the output is touched: what fails here is still a
        refusal that leaves the output as it was. Checks belong in :meth:`refuse`."""

    def clear_outputs(self) -> None:
        """Remove this step's earlier outputs (a fresh, not a resumed, run)."""

    def output_dirs(self) -> list[Path]:
        """Where it writes (temp files of dead writers are cleared there)."""
        return [self.out]

    def execute(self) -> None:
        raise NotImplementedError

    def corpus_files(self) -> list[Path]:
        """The JSONL shards of the corpus it wrote, in order (what ``output_format:
        jsonl+parquet`` copies): ``<output_dir>/part_<i>.jsonl`` unless it says otherwise."""
        return shard_order(shared.listing(self.out, "part_*.jsonl"))  # any node's

    def make_parquet_copy(self) -> dict[str, Any]:
        """The Parquet copy of :meth:`corpus_files`, made by the units in two phases
        (:mod:`curator.io.parquet_copy`); the driver reads only their summaries."""
        shards = self.corpus_files()
        if not shards:
            return export_parquet(self.out, [])
        units = ShardUnits(shards=tuple(str(s) for s in shards))
        where = {"out": str(self.out), "work_dir": str(self.work)}
        self.phase(parquet_copy.SCHEMA_PHASE, units, parquet_copy.SchemaStage(**where))
        as_json, schema = parquet_copy.plan(self.out, self.work, shards)
        self.phase(parquet_copy.COPY_PHASE, units,
                   parquet_copy.CopyStage(**where, as_json=as_json, schema=schema))
        return parquet_copy.block(self.out, self.work, shards, as_json, schema)

    def artifacts(self) -> list[tuple[Path | None, Any]]:
        """``(path, data)`` to write in order, every file the step writes besides its
        corpus and work area: a mapping is written as JSON, text or bytes as they are;
        the last is the completion artifact (a mapping; ``path`` ``None``: not written,
        e.g. ``emit_manifest: null``)."""
        raise NotImplementedError

    def verdict(self, result: dict[str, Any]) -> None:
        """Judge a completed run's result (its artifacts are written and complete):
        raise to fail it (the audit's ``audit_findings``, exit 1). Errors raised here
        carry ``complete=True`` in their details, so a flow knows the step's artifacts
        are complete though the step failed."""

    def config_extra(self) -> dict[str, Any]:
        """What the result depends on besides the config (the filter's resolved policy)."""
        return {}

    # -- shared pieces -----------------------------------------------------------------
    def inside_output(self, path: str) -> bool:
        """Whether ``path`` (a file or an object) lies in this run's output: its local
        copy or, for a remote ``output_dir``, the URL (never read as input)."""
        return storage.within(path, self.out) or bool(
            self.output_url and storage.within(path, self.output_url))

    def refuse_overwrites(self, writes: list[Path | None], reads: list[str | None]) -> None:
        """``report_overwrites_input``: a file this run would write (a report, wherever
        its config puts it) is one it reads (an input file, a policy): refused before
        anything is written, under any name of the file."""
        read = {Path(r).resolve() for r in reads if r and not storage.is_remote(str(r))}
        for path in writes:
            if path is not None and Path(path).resolve() in read:
                raise CuratorError(
                    "report_overwrites_input",
                    f"{self.step_id} would write {path}, which is one of its inputs: "
                    "choose another path (a report never replaces what the run reads)",
                    path=str(path))

    def outside_output(self, found: list[str], key: str, spec: Any) -> list[str]:
        """The input files ``key`` (``spec``) matched that are not in this run's output;
        ``output_overlaps_input`` when it matched files and all of them are there (the
        output would be the input: never "matches no files" while the files exist)."""
        kept = [f for f in found if not self.inside_output(f)]
        if found and not kept:
            where = self.output_url or str(self.out)
            here = self.out.resolve()
            what = ("is the input directory" if any(
                not storage.is_remote(f) and Path(f).resolve().parent == here for f in found)
                    else "contains the input")
            raise CuratorError(
                "output_overlaps_input",
                f"output_dir {where} {what}: every file {key} {spec!r} matches ({len(found)}) "
                "lies in it, and a step never reads its own output; choose an output_dir "
                "outside the input", output_dir=where, key=key)
        return kept

    def config_hash(self) -> str:
        """Digest of what determines the result (execution settings excluded)."""
        body: dict[str, Any] = {"config": self.config.model_dump(mode="json",
                                                                 exclude={"execution"})}
        body.update(self.config_extra())
        return canonical_digest(body)

    def phase(self, name: str, partitions: ProcessingStage, stage: Any) -> PipelineResult:
        """One engine pass: ``partitions`` then ``stage``, checkpointed per phase.

        A partition that failed with the project's own error (a stage's refusal) fails
        the phase with that error's id and the engine's message (which says what a
        rerun resumes); what the completed partitions counted is kept in
        :attr:`partial`."""
        self._interrupts.check()  # a signal whose raise was swallowed (interrupts.py)
        pipeline = Pipeline(name=f"{self.key}-{name}")
        pipeline.add_stage(partitions)
        pipeline.add_stage(stage)
        hook = self.on_progress
        try:
            result = pipeline.run(
                executor=self.executor,
                checkpoint_path=self.ckpt_root / name if self.ckpt_root is not None else None,
                on_progress=(lambda p: hook(name, p)) if hook else None,
                checkpoint_mirror=self.ckpt_mirror,
            )
        except CuratorError as exc:
            partial = exc.details.get("result")
            if isinstance(partial, PipelineResult):  # what the completed partitions counted
                self.partial[name] = partial
            cause = exc.__cause__
            if exc.error_id == "partition_failed" and isinstance(cause, CuratorError):
                # the partition's own refusal (e.g. metadata_field_absent_from_some_records)
                # is what the user can act on; keep the engine's message (resume hint)
                raise CuratorError(cause.error_id, exc.message, **exc.details) from cause
            raise
        self.partitions_total = max(self.partitions_total, result.sources_total)
        self.resumed_partitions += result.sources_skipped
        self._interrupts.check()
        return result

    def producer(self) -> dict[str, Any]:
        """The one producer block: who made the artifact, from what, when, where."""
        ex = self.config.execution
        # the executor that ran (a Python caller may pass one the config does not name)
        used = self.executor.describe() if self.executor is not None else {}
        block: dict[str, Any] = {
            "step_id": self.step_id,
            "tool_revision": tool_revision(),
            "config_hash": self.config_hash(),
            "started_at": self.started_at,
            "seconds": round(time.perf_counter() - self._t0, 3),
            "output_dir": str(self.out),
            "resumed_partitions": self.resumed_partitions,
            "execution": {"executor": used.get("executor", ex.executor),
                          "workers": used.get("workers", ex.workers),
                          "partitions": self.partitions_total, "retries": used.get("retries", 0)},
        }
        if self.completed:
            block["completed_at"] = utc_now()
        return block

    def error_block(self) -> dict[str, str] | None:
        return error_block(self.error)


__all__ = ["ProgressHook", "StepRun", "can_resume", "partition_ids", "prepare_work",
           "url_problems"]
