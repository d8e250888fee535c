"""Deleting rows in storage, on both backends: the rows left equal pyarrow's
filter of the table (nulls kept, as SQL's DELETE), objects where nothing
matches untouched, objects where everything matches gone, almost nothing
through the client; earlier versions keep the deleted rows; readers and an
appender running meanwhile see whole versions and lose nothing; a delete
racing an overwrite of its objects changes nothing; fsck stays clean."""

from __future__ import annotations

import threading

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skyhook.errors import DatasetChangedError, InvalidRequestError
from support.assertions import assert_same_table

ROWS = 6000


def table(start: int = 0, rows: int = ROWS) -> pa.Table:
    ids = pa.array(range(start, start + rows), pa.int64())
    maybe = pa.array([None if i % 11 == 0 else i % 13 for i in range(start, start + rows)], pa.int64())
    bucket = pa.array([i % 100 for i in range(start, start + rows)], pa.int64())
    return pa.table(
        {"id": ids, "maybe": maybe, "s": pc.cast(ids, pa.string()), "v": pc.multiply(ids, 0.5), "bucket": bucket}
    )


def by_id(result: pa.Table) -> pa.Table:
    return result.sort_by("id")


@pytest.mark.parametrize("design", ["parquet", "ipc"])
def test_deleted_rows_are_gone_and_nothing_else(store, design):
    dataset = store.write_dataset("t", table(), rows_per_object=1000, format=design)
    before = {p.object_name for p in dataset.manifest.partitions}
    change = dataset.delete((pc.field("maybe") == 3) & (pc.field("id") < 4000))
    whole = table()
    matched = pc.fill_null(pc.and_kleene(pc.equal(whole["maybe"], 3), pc.less(whole["id"], 4000)), False)
    expected = whole.filter(pc.invert(matched))
    assert change.rows_deleted == ROWS - expected.num_rows
    assert change.objects_rewritten == 4 and change.objects_dropped == 0
    after = store.dataset("t")
    assert_same_table(by_id(after.to_table()), by_id(expected))
    assert after.count_rows(filter="maybe IS NULL") == pc.sum(pc.is_null(expected["maybe"])).as_py()  # nulls kept
    untouched = {p.object_name for p in after.manifest.partitions} & before
    assert len(untouched) == 2  # ids 4000 and up: statistics ruled them out
    assert [p.design.format for p in after.manifest.partitions] == [design] * 6
    assert after.versions().column("operation").to_pylist()[-1] == "delete"
    assert_same_table(by_id(store.dataset("t", version=1).to_table()), by_id(table()))
    assert duckdb.connect().execute("select count(*) from after").fetchone()[0] == expected.num_rows
    assert store.fsck().clean


def test_whole_objects_go_and_a_filter_matching_nothing_changes_nothing(store):
    dataset = store.write_dataset("t", table(), rows_per_object=1000)
    nothing = dataset.delete(pc.field("id") > 10**9)
    assert (nothing.rows_deleted, nothing.manifest) == (0, None)
    assert store.dataset("t").version == 1
    change = store.dataset("t").delete("id < 2500")
    assert (change.rows_deleted, change.objects_dropped, change.objects_rewritten) == (2500, 2, 1)
    assert len(store.dataset("t").manifest.partitions) == 4
    assert_same_table(by_id(store.dataset("t").to_table()), table(2500, ROWS - 2500))
    store.dataset("t").delete("id >= 0")
    assert store.dataset("t").count_rows() == 0 and store.dataset("t").to_table().schema == table().schema


def test_a_delete_moves_almost_nothing_through_the_client(store):
    dataset = store.write_dataset("t", table(0, 60_000), rows_per_object=5000)
    change = dataset.delete(pc.field("bucket") == 7)  # 1 % of the rows, in every object
    assert change.rows_deleted == 600 and change.objects_rewritten == 12
    assert 0 < change.bytes_returned < 0.05 * dataset.manifest.size_bytes
    assert store.dataset("t").count_rows() == 59_400


def test_readers_and_an_appender_meanwhile_see_whole_versions(store):
    store.write_dataset("t", table(), rows_per_object=500)
    stop, failures = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            try:
                ids = store.dataset("t").to_table(columns=["id"])["id"]
                below = pc.sum(pc.less(ids, ROWS)).as_py() or 0
                assert below in (ROWS, ROWS - ROWS // 10)  # before or after the delete, never between
            except Exception as error:  # noqa: BLE001 - reported below
                failures.append(error)

    def append() -> None:
        for step in range(5):
            store.dataset("t").append(table(100_000 + step * 100, 100))

    threads = [threading.Thread(target=read) for _ in range(4)] + [threading.Thread(target=append)]
    for thread in threads:
        thread.start()
    store.dataset("t").delete((pc.field("bucket") < 10) & (pc.field("id") < ROWS))
    threads[-1].join()
    stop.set()
    for thread in threads[:-1]:
        thread.join()
    assert failures == []
    final = store.dataset("t").to_table(columns=["id"])["id"]
    assert len(final) == ROWS - ROWS // 10 + 500  # every appended row, none of the deleted
    assert pc.sum(pc.less(final, ROWS)).as_py() == ROWS - ROWS // 10
    assert store.fsck().clean


def test_a_delete_racing_an_overwrite_changes_nothing_and_mistakes_are_clear(store):
    dataset = store.write_dataset("t", table(), rows_per_object=1000)
    store.write_dataset("t", table(0, 10), mode="overwrite")
    with pytest.raises(DatasetChangedError):
        from skyhook.distributed.row_changes import delete_rows

        delete_rows(store.backend, dataset.manifest, pc.field("id") < 3)
    assert store.dataset("t").count_rows() == 10
    assert store.fsck().clean
    with pytest.raises(InvalidRequestError, match="takes a filter"):
        store.dataset("t").delete(None)
    with pytest.raises(InvalidRequestError, match="cannot run in storage"):
        store.dataset("t").delete(pc.field("s").cast(pa.large_binary()) == b"3")


def test_the_command_line_deletes_and_says_what_it_did(store):
    from typer.testing import CliRunner

    from skyhook.cli import app

    store.write_dataset("t", table(), rows_per_object=1000)
    deleted = CliRunner().invoke(app, ["delete", "t", "--where", "id < 1500", "--store", store.uri])
    assert deleted.exit_code == 0, deleted.output
    assert "deleted 1,500 rows: 1 object rewritten in storage, 1 object dropped; version 2" in deleted.output
    nothing = CliRunner().invoke(app, ["delete", "t", "--where", "id < 0", "--store", store.uri])
    assert nothing.exit_code == 0 and "nothing deleted" in nothing.output
    assert store.dataset("t").count_rows() == ROWS - 1500


@pytest.mark.parametrize("failing", ["copy_object", "replace_manifest"])
def test_a_delete_failing_midway_leaves_the_dataset_as_it_was(store, monkeypatch, failing):
    """A store call failing after some copies were rewritten (or at the swap):
    the dataset stays at its version, the copies are gone, fsck is clean."""
    store.write_dataset("t", table(), rows_per_object=1000)
    original = getattr(type(store.backend), failing)
    calls = []

    def fails_late(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 3 or failing == "replace_manifest":
            raise OSError("injected")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(store.backend), failing, fails_late)
    with pytest.raises(OSError, match="injected"):
        store.dataset("t").delete("bucket = 5")
    monkeypatch.undo()
    assert store.dataset("t").version == 1
    assert_same_table(by_id(store.dataset("t").to_table()), table())
    report = store.fsck(grace_seconds=0)
    assert report.clean and not report.orphans, report
