"""The embedded store: files, atomic writes, several processes at once, input formats."""

from __future__ import annotations

import multiprocessing
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import skyhook
from skyhook.catalog.design import ObjectDesign
from support.assertions import assert_same_table

TABLE = pa.table(
    {
        "k": pa.array(range(20_000)),
        "v": pa.array([i * 0.5 for i in range(20_000)]),
        "name": pa.array([f"n{i % 97}" for i in range(20_000)]),
    }
)


def test_layout_and_attributes(tmp_path):
    store = skyhook.connect(str(tmp_path / "s"))
    dataset = store.write_dataset("t", TABLE, rows_per_object=6000, format="ipc")
    names = sorted(p.name for p in (tmp_path / "s" / "objects").iterdir())
    assert names == sorted(p.object_name for p in dataset.manifest.partitions)
    assert all(name.startswith(f"t.{dataset.manifest.generation}.") for name in names)
    design = ObjectDesign.from_bytes(os.getxattr(tmp_path / "s" / "objects" / names[0], "user.skyhook.design"))
    assert design == dataset.manifest.partitions[0].design and design.format == "ipc"
    assert [p.num_rows for p in dataset.manifest.partitions] == [6000, 6000, 6000, 2000]
    assert not [p for p in (tmp_path / "s").rglob(".*")], "temporary files left behind"


def test_target_object_size_splits_data(tmp_path):
    store = skyhook.connect(str(tmp_path / "s"))
    dataset = store.write_dataset("t", TABLE, target_object_size=100_000)
    sizes = [p.num_rows for p in dataset.manifest.partitions]
    assert len(sizes) > 3 and sum(sizes) == TABLE.num_rows
    assert max(sizes) * TABLE.nbytes / TABLE.num_rows <= 110_000


def test_refuses_a_directory_that_is_not_a_store(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(skyhook.SkyhookError, match="not a skyhook store"):
        skyhook.connect(tmp_path.as_uri())
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_failed_write_leaves_nothing(tmp_path):
    store = skyhook.connect(str(tmp_path / "s"))

    def batches():
        yield from TABLE.to_batches(max_chunksize=5000)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        store.write_dataset("t", pa.RecordBatchReader.from_batches(TABLE.schema, batches()), rows_per_object=5000)
    assert store.list_datasets() == []
    assert list((tmp_path / "s" / "objects").iterdir()) == []


@pytest.mark.parametrize("kind", ["parquet", "csv", "ipc", "directory"])
def test_import_files(tmp_path, kind):
    source = tmp_path / "in"
    source.mkdir()
    halves = [TABLE.slice(0, 10_000), TABLE.slice(10_000)]
    for i, half in enumerate(halves):
        if kind in ("parquet", "directory"):
            pq.write_table(half, source / f"part{i}.parquet")
        elif kind == "csv":
            pacsv.write_csv(half, source / f"part{i}.csv")
        else:
            feather.write_feather(half, source / f"part{i}.arrow")
    paths = str(source) if kind == "directory" else sorted(str(p) for p in source.iterdir())
    store = skyhook.connect(str(tmp_path / "s"))
    dataset = store.write_dataset("t", paths)
    assert dataset.schema.field("name").type == pa.string()
    result = dataset.to_table(filter=pc.field("k") >= 15_000)
    assert_same_table(result.sort_by("k"), TABLE.filter(pc.field("k") >= 15_000))


def _reader(uri: str, name: str, rounds: int, queue) -> None:
    store = skyhook.connect(uri)
    try:
        for _ in range(rounds):
            result = store.dataset(name).to_table(filter=pc.field("k") < 5000)
            assert result.num_rows == 5000
        queue.put("ok")
    except BaseException as error:  # reported to the parent
        queue.put(repr(error))


def _writer(uri: str, rounds: int, queue) -> None:
    store = skyhook.connect(uri)
    try:
        for i in range(rounds):
            store.write_dataset(f"new{i}", TABLE, rows_per_object=4000)
        queue.put("ok")
    except BaseException as error:
        queue.put(repr(error))


def test_two_readers_and_a_writer_in_separate_processes(tmp_path):
    uri = (tmp_path / "s").as_uri()
    skyhook.connect(uri).write_dataset("shared", TABLE, rows_per_object=4000)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    processes = [context.Process(target=_reader, args=(uri, "shared", 20, queue)) for _ in range(2)]
    processes.append(context.Process(target=_writer, args=(uri, 5, queue)))
    for process in processes:
        process.start()
    outcomes = [queue.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert outcomes == ["ok"] * 3
    store = skyhook.connect(uri)
    assert store.list_datasets() == ["new0", "new1", "new2", "new3", "new4", "shared"]
    assert_same_table(store.dataset("new4").to_table(), TABLE)
