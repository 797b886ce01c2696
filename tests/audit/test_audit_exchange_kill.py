"""A real ``curate audit`` SIGKILLed in the middle of the exchange, in the map (some
scan units have sent their buckets) and in the reduce (some buckets netted), resumes to
the report of an uninterrupted run (slow: a CLI and a process pool each time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.ingest._support import Cli, write_config


def _world(root: Path) -> dict[str, Any]:
    """A reference of many small files and a target that drops some ids and adds one."""
    ref, tgt = root / "ref", root / "tgt"
    ref.mkdir(parents=True)
    tgt.mkdir()
    for f in range(24):
        rows = [{"id": f"d{f}-{i}", "text": f"document {f} {i}"} for i in range(40)]
        body = "".join(json.dumps(r) + "\n" for r in rows)
        (ref / f"part_{f:03d}.jsonl").write_text(body)
        kept = rows[::2] + ([{"id": "planted", "text": "x"}] if f == 5 else [])
        (tgt / f"part_{f:03d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    return {"target_glob": str(tgt), "reference_glob": str(ref), "mode": "containment",
            "comparison_fields": ["id", "text"], "id_field": "id"}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("where", ["map", "reduce"])
def test_killed_in_the_exchange_resumes_to_the_same_report(tmp_path: Path, prefect_api: str,
                                                           where: str) -> None:
    keys = _world(tmp_path / "w")

    def run(name: str, **execution: Any) -> tuple[Path, Path]:
        out = tmp_path / name
        cfg = write_config(tmp_path / f"{name}.yaml", {
            **keys, "output_dir": str(out),
            "execution": {"executor": "local", "workers": 1, "exchange_buckets": 64,
                          "checkpoint_path": str(tmp_path / f"{name}-ckpt"), **execution}})
        return out, cfg

    ref_out, ref_cfg = run("reference")
    with Cli(ref_cfg, tmp_path / "logs", "reference", command="audit") as cli:
        assert cli.wait(300) == 1, cli.stderr()[-3000:]  # findings: exit 1
    out, cfg = run("out")
    work = out / ".audit-work"
    if where == "map":
        def ready() -> bool:
            return len(list((work / "scan").glob("*.json"))) >= 4
    else:
        def ready() -> bool:
            return len(list((work / "net" / "summary").glob("*.json"))) >= 4
    with Cli(cfg, tmp_path / "logs", f"killed-{where}", command="audit") as cli:
        cli.kill_when(ready, where, timeout=300)
    scans = len(list((work / "scan").glob("*.json")))
    summaries = len(list((work / "net" / "summary").glob("*.json")))
    if where == "map":
        assert scans < 48 and summaries == 0, (scans, summaries)
    else:
        assert scans == 48 and 4 <= summaries < 64, (scans, summaries)
    assert not (out / "audit_report.json").exists() or \
        "completed_at" not in json.loads((out / "audit_report.json").read_text())["producer"]
    with Cli(cfg, tmp_path / "logs", f"resumed-{where}", command="audit") as cli:
        assert cli.wait(300) == 1, cli.stderr()[-3000:]
    got = json.loads((out / "audit_report.json").read_text())
    want = json.loads((ref_out / "audit_report.json").read_text())
    assert got["producer"]["resumed_partitions"] > 0
    assert {k: v for k, v in got.items() if k != "producer"} == \
        {k: v for k, v in want.items() if k != "producer"}
    assert got["containment"]["missing_row_count"] == 1
