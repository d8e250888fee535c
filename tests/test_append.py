"""Appends: new objects under a new manifest version, published by compare-and-swap.
Readers of an earlier version keep reading exactly its rows; concurrent appenders
all land; an append racing an overwrite or delete leaves no orphan. Oracles are
the pyarrow tables written."""

from __future__ import annotations

import dataclasses
import multiprocessing
import pickle
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.catalog.manifest import Manifest
from skyhook.catalog.object_format import FORMAT_ATTRIBUTE
from skyhook.names import new_generation, object_name, object_owner
from support.assertions import assert_same_table
from support.consistency import assert_consistent, partition_objects

ROWS = 90
CONTEXT = multiprocessing.get_context("forkserver")


def chunk(number: int, rows: int = ROWS) -> pa.Table:
    """The number-th append: distinct rows, nulls and strings included."""
    values = pa.array([None if i % 7 == 0 else number * 1000 + i for i in range(rows)], pa.int64())
    return pa.table(
        {
            "chunk": pa.array([number] * rows, pa.int32()),
            "value": values,
            "text": pc.cast(values, pa.string()),
        }
    )


def test_appends_read_like_pyarrow_and_earlier_versions_stay(store):
    first = store.write_dataset("t", chunk(0), rows_per_object=40)
    second = first.append(chunk(1), rows_per_object=40)
    third = store.write_dataset("t", [chunk(2).to_batches()[0], chunk(3)], mode="append")
    expected = pa.concat_tables([chunk(n) for n in range(4)])
    assert_same_table(store.dataset("t").to_table(), expected)
    assert_same_table(third.to_table(), expected)
    # Earlier versions read exactly their rows: appends add objects, change none.
    assert_same_table(first.to_table(), chunk(0))
    assert_same_table(second.to_table(), pa.concat_tables([chunk(0), chunk(1)]))
    assert first.count_rows(filter=pc.field("chunk") == 1) == 0
    filtered = third.to_table(filter=pc.field("value") > 2000)
    assert_same_table(filtered, expected.filter(pc.field("value") > 2000))
    assert third.scanner(filter=pc.field("chunk") == 3).count_rows() == ROWS
    grouped = third.group_by("chunk").aggregate([("value", "sum")]).sort_by("chunk")
    assert_same_table(grouped, expected.group_by("chunk").aggregate([("value", "sum")]).sort_by("chunk"))
    generations = {object_owner(p.object_name).generation for p in third.manifest.partitions}
    assert len(generations) == 3 and len(third.manifest.history) == 2
    assert_consistent(store, "t", expected)


def test_pruning_uses_every_generation(store):
    dataset = store.write_dataset("t", chunk(0))
    for number in range(1, 4):
        dataset = dataset.append(chunk(number))
    scanner = dataset.scanner(filter=pc.field("chunk") == 2)
    assert_same_table(scanner.to_table(), chunk(2))
    assert scanner.stats.objects_pruned == 3


def test_overwrite_and_delete_remove_every_generation(store):
    dataset = store.write_dataset("t", chunk(0), rows_per_object=40)
    dataset.append(chunk(1), rows_per_object=40)
    store.write_dataset("t", chunk(9), mode="overwrite")
    assert_consistent(store, "t", chunk(9))
    store.dataset("t").append(chunk(10))
    store.delete_dataset("t")
    assert partition_objects(store) == [] and store.fsck().clean


def test_appended_columns_may_widen_or_be_left_out(store):
    schema = pa.schema([("i", pa.int64()), ("u", pa.int32()), ("f", pa.float64()), ("s", pa.large_string())])
    base = pa.table({"i": [1, None], "u": [2, 3], "f": [0.5, None], "s": ["a", None]}, schema)
    dataset = store.write_dataset("t", base)
    narrower = pa.table(
        {
            "s": pa.array(["x", None, "x"]).dictionary_encode(),  # another order, a dictionary
            "f": pa.array([1.5, None, float("nan")], pa.float32()),
            "i": pa.array([-(2**31), 7, None], pa.int32()),
            "u": pa.array([65535, 0, None], pa.uint16()),
        }
    )
    missing = pa.table({"i": [5], "u": pa.array([6], pa.int8()), "f": [7.0]})  # "s" is nullable: it reads as null
    dataset = dataset.append(narrower).append(missing)
    expected = pa.concat_tables(
        [
            base,
            narrower.select(schema.names).cast(schema),
            missing.append_column("s", pa.nulls(1, pa.large_string())).cast(schema),
        ]
    )
    assert_same_table(dataset.to_table(), expected)
    assert dataset.schema == schema


@pytest.mark.parametrize(
    "appended, problem",
    [
        (pa.table({"i": [1], "extra": [2]}), "no column 'extra'"),
        (pa.table({"i": pa.array([1], pa.uint64())}), "column 'i' is int64, the input's uint64"),
        (pa.table({"i": ["1"]}), "column 'i' is int64, the input's string"),
        (pa.table({"j": [1]}), "lacks the non-nullable column 'i'"),
    ],
)
def test_appends_that_do_not_fit_store_nothing(store, appended, problem):
    schema = pa.schema([pa.field("i", pa.int64(), nullable=False)])
    dataset = store.write_dataset("t", pa.table({"i": [1, 2]}, schema))
    with pytest.raises(skyhook.SchemaMismatchError, match=problem):
        dataset.append(appended)
    with pytest.raises(skyhook.InvalidRequestError, match="names column 'x'"):
        dataset.append(pa.table({"i": [3]}, schema), design=skyhook.Design(sort_by="x"))
    assert store.manifest("t") == dataset.manifest
    assert_consistent(store, "t", pa.table({"i": [1, 2]}, schema))


def test_append_mode_creates_and_dataset_append_needs_the_dataset(store):
    created = store.write_dataset("t", chunk(0), mode="append")
    assert_same_table(created.to_table(), chunk(0))
    store.delete_dataset("t")
    with pytest.raises(skyhook.DatasetNotFoundError):
        created.append(chunk(1))
    assert store.list_datasets() == [] and partition_objects(store) == []


def test_an_append_racing_a_delete_stores_nothing(store):
    dataset = store.write_dataset("t", chunk(0))

    def delete_meanwhile(rows: int, size: int) -> None:
        store.delete_dataset("t")

    with pytest.raises(skyhook.DatasetNotFoundError, match="was deleted"):
        dataset.append(chunk(1), progress=delete_meanwhile)
    assert store.list_datasets() == [] and partition_objects(store) == [] and store.fsck().clean


def test_an_append_racing_an_overwrite_lands_after_it(store):
    dataset = store.write_dataset("t", chunk(0))

    def overwrite_meanwhile(rows: int, size: int) -> None:
        store.write_dataset("t", chunk(5), mode="overwrite")

    dataset.append(chunk(1), progress=overwrite_meanwhile)
    assert_consistent(store, "t", pa.concat_tables([chunk(5), chunk(1)]))

    def change_schema_meanwhile(rows: int, size: int) -> None:
        store.write_dataset("t", pa.table({"other": [1]}), mode="overwrite")

    with pytest.raises(skyhook.SchemaMismatchError, match="replaced while appending"):
        store.dataset("t").append(chunk(2), progress=change_schema_meanwhile)
    assert_consistent(store, "t", pa.table({"other": [1]}))


def test_a_pickled_dataset_reads_its_version_after_appends(store):
    dataset = store.write_dataset("t", chunk(0))
    pickled = pickle.dumps(dataset.filter(pc.field("value") > 10))
    appended = dataset.append(chunk(1))
    restored = pickle.loads(pickled)
    assert_same_table(restored.to_table(), chunk(0).filter(pc.field("value") > 10))
    assert_same_table(pickle.loads(pickle.dumps(appended)).to_table(), pa.concat_tables([chunk(0), chunk(1)]))
    store.write_dataset("t", chunk(2), mode="overwrite")  # its version is kept: still read exactly
    assert_same_table(pickle.loads(pickled).to_table(), chunk(0).filter(pc.field("value") > 10))
    store.dataset("t").keep_versions(1)
    store.collect_garbage()
    with pytest.raises(skyhook.DatasetChangedError):
        pickle.loads(pickled)


def test_appends_under_concurrent_readers_lose_nothing(store):
    """4 reader threads scan while appends land: every scan sees a whole number of appends."""
    appends, readers = 12, 4
    dataset = store.write_dataset("t", chunk(0), rows_per_object=30)
    done, failures, seen = threading.Event(), [], [set() for _ in range(readers)]

    def read(index: int) -> None:
        try:
            while not done.is_set():
                opened = store.dataset("t")
                table = opened.to_table()
                count = table.num_rows // ROWS
                assert_same_table(table, pa.concat_tables([chunk(n) for n in range(count)]))
                total = opened.aggregate([("value", "count"), ("chunk", "max")])
                assert total.column(1)[0].as_py() == count - 1
                seen[index].add(count)
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=read, args=(index,)) for index in range(readers)]
    for thread in threads:
        thread.start()
    for number in range(1, appends + 1):
        dataset = dataset.append(chunk(number), rows_per_object=30)
    done.set()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures[0]
    assert all(seen), seen
    assert_consistent(store, "t", pa.concat_tables([chunk(n) for n in range(appends + 1)]))


def _append(uri: str, number: int, barrier, outcomes) -> None:
    try:
        with skyhook.connect(uri) as store:
            dataset = store.dataset("t")
            barrier.wait(timeout=60)
            dataset.append(chunk(number), rows_per_object=30)
        outcomes.put((number, "ok"))
    except BaseException as error:
        outcomes.put((number, repr(error)))


def test_concurrent_appenders_all_land(store):
    appenders = 6
    store.write_dataset("t", chunk(0))
    barrier, outcomes = CONTEXT.Barrier(appenders), CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=_append, args=(store.uri, n, barrier, outcomes)) for n in range(1, appenders + 1)
    ]
    for process in processes:
        process.start()
    results = dict(outcomes.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=60)
    assert set(results.values()) == {"ok"}, results
    table = store.dataset("t").to_table()
    expected = pa.concat_tables([chunk(n) for n in range(appenders + 1)])
    assert_same_table(table.sort_by([("chunk", "ascending")]), expected)
    order = [chunk_number.as_py() for chunk_number in pc.unique(table.column("chunk"))]
    assert_consistent(store, "t", pa.concat_tables([chunk(n) for n in order]))


def test_fsck_owns_every_generation_a_manifest_names(store):
    dataset = store.write_dataset("t", chunk(0)).append(chunk(1)).append(chunk(2))
    # What a crashed appender leaves: an object of a generation no manifest names.
    orphan = object_name("t", new_generation(), 0)
    data = store.backend.read_object(dataset.manifest.partitions[0].object_name)
    store.backend.put_object(orphan, data, {FORMAT_ATTRIBUTE: "parquet"})
    report = store.fsck(repair=True)
    assert report.orphans == [orphan] and report.repaired
    assert_consistent(store, "t", pa.concat_tables([chunk(0), chunk(1), chunk(2)]))


def test_manifests_with_a_bad_history_are_corrupt(store):
    manifest = store.write_dataset("t", chunk(0)).append(chunk(1)).manifest
    (earlier, count), other = manifest.history[0], new_generation()
    bad = {
        "an object of a generation it does not name": dataclasses.replace(manifest, history=((other, count),)),
        "more partitions than it has": dataclasses.replace(manifest, history=((earlier, 5),)),
        "an invalid generation": dataclasses.replace(manifest, history=(("../x", count),)),
    }
    for crafted in bad.values():
        with pytest.raises(skyhook.CorruptManifestError, match="manifest of dataset 't' is corrupt"):
            Manifest.from_bytes(crafted.to_bytes(), "t")
    assert Manifest.from_bytes(manifest.to_bytes(), "t").at_generation(earlier).num_rows == ROWS
