"""Tasks and sentinels: ids owned by the framework, payloads; the table round trips of
the test-support ``DocumentBatch`` (``curator_testing.batch``) the engine tests use."""

from __future__ import annotations

import re

import polars as pl
import pyarrow as pa
import pytest

from curator.tasks import EmptyTask, FailedTask, FileGroupTask, NoneTask, SentinelTask
from curator_testing.batch import DocumentBatch

HEX12 = re.compile(r"^[0-9a-f]{12}$")


def test_file_group_id_is_independent_of_path_order() -> None:
    a = FileGroupTask(data=["/data/b.jsonl", "/data/a.jsonl", "/data/c.jsonl"])
    b = FileGroupTask(data=["/data/c.jsonl", "/data/a.jsonl", "/data/b.jsonl"])
    assert a.data == ["/data/a.jsonl", "/data/b.jsonl", "/data/c.jsonl"]
    assert a.get_deterministic_id() == b.get_deterministic_id()
    assert HEX12.match(a.get_deterministic_id())
    assert "_" not in a.get_deterministic_id()


def test_file_group_id_depends_on_the_paths_and_the_byte_range() -> None:
    whole = FileGroupTask(data=["/data/big.jsonl"])
    first = FileGroupTask(data=["/data/big.jsonl"], _metadata={"byte_range": (0, 100)})
    second = FileGroupTask(data=["/data/big.jsonl"], _metadata={"byte_range": (100, 200)})
    other = FileGroupTask(data=["/data/other.jsonl"])
    ids = {t.get_deterministic_id() for t in (whole, first, second, other)}
    assert len(ids) == 4
    assert all(HEX12.match(i) and "_" not in i for i in ids)
    assert first.byte_range == (0, 100)
    assert whole.byte_range is None
    # stable: the same partition always gets the same id
    again = FileGroupTask(data=["/data/big.jsonl"], _metadata={"byte_range": [0, 100]})
    assert again.get_deterministic_id() == first.get_deterministic_id()


#: Source ids as released: they are the keys of existing checkpoints, so a changed
#: hash would silently redo every completed partition of a resumed run.
PINNED_IDS = [
    (["/data/web/b.jsonl", "/data/web/a.jsonl"], None, "075015a03aa8"),
    (["/data/web/a.jsonl"], None, "94d70336acd7"),
    (["/data/web/a.jsonl"], (0, 67108864), "b0ef63f51985"),
    (["/data/web/a.jsonl"], [67108864, 134217728], "7ded8f061308"),  # as read back from JSON
    (["s3://bucket/corpus/part-00001.jsonl.zst"], None, "33d7cf774ad2"),
]


@pytest.mark.parametrize(("paths", "byte_range", "expected"), PINNED_IDS)
def test_file_group_ids_are_pinned(paths: list[str], byte_range: object, expected: str) -> None:
    meta = {} if byte_range is None else {"byte_range": byte_range}
    assert FileGroupTask(data=paths, _metadata=meta).get_deterministic_id() == expected


@pytest.mark.parametrize(
    "task",
    [FileGroupTask(data=["x"]), DocumentBatch(data=pa.table({"a": [1]})), NoneTask(), FailedTask()],
    ids=["file_group", "document_batch", "none", "failed"],
)
def test_task_id_is_empty_on_construction_and_read_only(task) -> None:
    assert task.task_id == ""
    assert task.source_id is None
    with pytest.raises(AttributeError):
        task.task_id = "0_1"
    with pytest.raises(AttributeError):
        task.source_id = "1"
    assert task.task_id == ""


def test_empty_task_is_the_root_with_id_0() -> None:
    root = EmptyTask()
    assert root.task_id == "0"
    assert root.data is None
    assert root.num_items == 0
    with pytest.raises(AttributeError):
        root.task_id = "1"


@pytest.mark.parametrize("kind", [EmptyTask, NoneTask, FailedTask, SentinelTask])
def test_sentinels_carry_no_payload(kind) -> None:
    sentinel = kind()
    assert sentinel.data is None
    assert sentinel.num_items == 0
    assert sentinel.validate()
    with pytest.raises((AssertionError, ValueError)):
        kind(data=[1, 2, 3])


def test_sentinel_kinds() -> None:
    assert NoneTask().dataset_name == "none"
    assert FailedTask(reason="boom").dataset_name == "failed"
    assert FailedTask(reason="boom").reason == "boom"
    assert EmptyTask().dataset_name == "empty"
    for kind in (EmptyTask, NoneTask, FailedTask):
        assert isinstance(kind(), SentinelTask)


def _table() -> pa.Table:
    return pa.table({"id": [1, 2, 3], "text": ["a", "bb", None], "score": [0.5, 1.5, 2.5]})


def test_document_batch_from_arrow_round_trips() -> None:
    table = _table()
    doc = DocumentBatch(data=table)
    assert doc.num_items == 3
    assert doc.to_arrow().equals(table)
    assert doc.to_polars().to_dict(as_series=False) == table.to_pydict()
    # through Polars and back to Arrow
    assert DocumentBatch(data=doc.to_polars()).to_arrow().to_pydict() == table.to_pydict()


def test_document_batch_from_polars() -> None:
    df = pl.DataFrame({"id": [1, 2], "text": ["x", "y"]})
    doc = DocumentBatch(data=df)
    assert doc.num_items == 2
    assert doc.to_polars() is df
    assert doc.to_arrow().to_pydict() == {"id": [1, 2], "text": ["x", "y"]}


def test_empty_document_batch() -> None:
    doc = DocumentBatch()
    assert doc.num_items == 0
    assert doc.to_arrow().num_rows == 0
    assert doc.to_polars().height == 0
    assert DocumentBatch(data=pa.table({"a": pa.array([], pa.int64())})).num_items == 0
