"""NeMo Curator's English heuristic chain on one core; run by ``bench/peers/run.py``.

Runs in NeMo Curator's own venv (``bench/peers/.venvs/nemo``), never the project's. The
pipeline is the one NeMo Curator ships, ``nemo_curator/config/text/
heuristic_filter_english_pipeline.yaml`` (its ``JsonlReader``, 28 ``ScoreFilter``
stages of heuristic filters, no language ID, its ``JsonlWriter``), built with its own
``create_pipeline_from_yaml`` and ``Pipeline.build()`` (which splits the reader into
file partitioning + reading).

``--executor inline`` (default): the built stages run one after another in this
process (``setup()``, then ``process()`` on every task), so the figure is the chain's
own code on one core, without Ray; ``--executor xenna``: ``Pipeline.run()`` on its
default Xenna executor with a one-CPU Ray cluster (``RayClient(num_cpus=1)``), as a
user would run it (Ray's start-up is in the whole process, not in the step).
Prints one JSON line: the step's wall and CPU seconds, documents read and kept.

    python nemo_filter.py --data-dir DIR --out OUT     # every *.jsonl file in DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

from _timing import Stopwatch, count_lines, emit


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--executor", choices=["inline", "xenna"], default="inline")
    args = parser.parse_args()

    import importlib.resources

    from loguru import logger
    from nemo_curator.config.run import create_pipeline_from_yaml
    from nemo_curator.tasks import EmptyTask
    from omegaconf import OmegaConf

    logger.remove()  # its per-batch INFO lines would go to our stderr log only
    logger.add(lambda m: None, level="WARNING")
    yaml_path = importlib.resources.files("nemo_curator") / "config" / "text" / \
        "heuristic_filter_english_pipeline.yaml"
    cfg = OmegaConf.load(str(yaml_path))
    kept_dir = args.out / "kept"
    # a directory: its reader takes every *.jsonl in it (hydra would pass a list as a
    # ListConfig, which its file partitioning refuses)
    cfg.input_path = str(args.data_dir)
    cfg.output_path = str(kept_dir)
    pipeline = create_pipeline_from_yaml(cfg, log_config=False)
    n_filters = sum(1 for s in pipeline.stages if type(s).__name__ == "ScoreFilter")

    if args.executor == "xenna":
        from nemo_curator.core.client import RayClient

        client = RayClient(num_cpus=1)
        client.start()
        with Stopwatch() as sw:
            pipeline.run()
        client.stop()
    else:
        pipeline.build()
        for stage in pipeline.stages:
            stage.setup()
        tasks: list = [EmptyTask()]
        docs_in = None
        with Stopwatch() as sw:
            for stage in pipeline.stages:
                nxt = []
                for task in tasks:
                    result = stage.process(task)
                    if result is None:
                        continue
                    nxt.extend(result if isinstance(result, list) else [result])
                tasks = nxt
                if docs_in is None and tasks and type(tasks[0]).__name__ == "DocumentBatch":
                    docs_in = sum(t.num_items for t in tasks)
    emit({**sw.fields(), "docs_in": docs_in if args.executor == "inline" else None,
          "docs_kept": count_lines(kept_dir.rglob("*.jsonl")), "filters": n_filters,
          "executor": args.executor})


if __name__ == "__main__":
    main()
