"""The commit protocol: objects a publication replaced are retired, not deleted,
so readers of the version before keep reading it until the retention is over,
then get DatasetChangedError; garbage is collected after it; a writer killed
before or after its manifest swap leaves nothing that fsck cannot account for.
The datasets here keep no earlier version (keep_versions(1)): tests/test_versions.py
covers what kept versions add. Oracles: the pyarrow tables each version was written from."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook.backends.retirement import retire_objects, retirements
from skyhook.cli import app
from skyhook.store import Store
from support.assertions import assert_same_table
from support.consistency import assert_consistent, partition_objects

ROWS = 300
ROWS_PER_OBJECT = 100


def version_table(version: int) -> pa.Table:
    return pa.table({"version": pa.array([version] * ROWS, pa.int32()), "row": pa.array(range(ROWS), pa.int64())})


def retaining(store: Store, seconds: float) -> Store:
    """The same store, keeping replaced objects for seconds."""
    return Store(store.backend, retention_seconds=seconds)


def object_names(dataset: skyhook.Dataset) -> list[str]:
    return sorted(partition.object_name for partition in dataset.manifest.partitions)


def test_readers_never_fail_while_a_writer_overwrites(store):
    kept = retaining(store, 600)
    versions = 5
    first = kept.write_dataset("t", version_table(0), rows_per_object=ROWS_PER_OBJECT)
    store.dataset("t").keep_versions(1)  # no earlier version kept: overwrites retire
    stop, failures, answers = threading.Event(), [], []

    def read(reopen: bool) -> None:
        dataset = first
        while not stop.is_set():
            try:
                if reopen:
                    dataset = kept.dataset("t")
                table = dataset.to_table().sort_by("row")
                version = table.column("version")[0].as_py()
                assert_same_table(table, version_table(version))
                total = dataset.to_table(columns=["row"], filter=pc.field("row") >= 150).num_rows
                assert total == 150
                answers.append(version)
            except Exception as error:  # noqa: BLE001 (every failure is the test's finding)
                failures.append(repr(error))

    # Two readers open the current version each time; one keeps the first version open.
    readers = [threading.Thread(target=read, args=(reopen,)) for reopen in (True, True, False)]
    for reader in readers:
        reader.start()
    try:
        for version in range(1, versions + 1):
            kept.write_dataset("t", version_table(version), mode="overwrite", rows_per_object=ROWS_PER_OBJECT)
            time.sleep(0.05)
    finally:
        stop.set()
        for reader in readers:
            reader.join(timeout=60)
    assert failures == [] and answers
    assert set(answers) <= set(range(versions + 1))
    assert_same_table(first.to_table(), version_table(0))  # the first version, retired, still reads
    report = kept.fsck("t")
    assert report.clean and report.orphans == [] and len(report.retired) == versions * 3, report
    assert_consistent(store, "t", version_table(versions))  # retention 0: all collected
    assert retirements(store.backend)[0] == []


def test_retired_objects_go_after_the_retention_then_readers_get_dataset_changed(store):
    kept = retaining(store, 0.5)
    old = kept.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    store.dataset("t").keep_versions(1)  # no earlier version kept: overwrites retire
    new = kept.write_dataset("t", version_table(2), mode="overwrite", rows_per_object=ROWS_PER_OBJECT)
    assert kept.collect_garbage("t").deleted == []
    assert partition_objects(store, "t") == sorted(object_names(old) + object_names(new))
    assert_same_table(old.to_table(), version_table(1))
    time.sleep(0.6)
    assert kept.collect_garbage().deleted == object_names(old)
    with pytest.raises(skyhook.DatasetChangedError, match="open it again"):
        old.to_table()
    with pytest.raises(skyhook.DatasetChangedError):
        old.group_by("version").aggregate([("row", "sum")])
    assert_same_table(new.to_table(), version_table(2))
    assert_consistent(kept, "t", version_table(2))


def test_a_later_write_collects_what_is_due(store):
    kept = retaining(store, 0.3)
    old = kept.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    store.dataset("t").keep_versions(1)  # no earlier version kept: overwrites retire
    middle = kept.write_dataset("t", version_table(2), mode="overwrite", rows_per_object=ROWS_PER_OBJECT)
    time.sleep(0.4)
    newest = kept.write_dataset("t", version_table(3), mode="overwrite", rows_per_object=ROWS_PER_OBJECT)
    # The first version's objects are due; the second's were retired just now.
    assert partition_objects(store, "t") == sorted(object_names(middle) + object_names(newest))
    assert not set(object_names(old)) & set(partition_objects(store))


def test_delete_retires_the_objects(store):
    kept = retaining(store, 600)
    dataset = kept.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    kept.delete_dataset("t")
    assert kept.list_datasets() == []
    assert_same_table(dataset.to_table(), version_table(1))  # a reader that opened it still reads it
    report = kept.fsck("t")
    assert report.clean and report.retired == object_names(dataset), report
    repaired = store.fsck(repair=True)  # retention 0: due
    assert repaired.collected == object_names(dataset) and repaired.clean
    assert partition_objects(store) == [] and retirements(store.backend)[0] == []
    with pytest.raises(skyhook.DatasetChangedError, match="deleted"):
        dataset.to_table()


def test_a_record_of_a_swap_not_yet_happened_deletes_nothing_and_is_kept(store):
    dataset = store.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    retire_objects(store.backend, "t", "", object_names(dataset))  # a delete, about to swap
    assert store.collect_garbage().deleted == []
    assert_same_table(store.dataset("t").to_table(), version_table(1))
    # The record outlives collections while its objects are named (it was
    # dropped as due here once, and a swap after that orphaned the objects).
    assert len(retirements(store.backend)[0]) == 1 and store.fsck().clean
    stored = store.backend.get_manifest("t")
    assert stored is not None and store.backend.delete_manifest("t", stored.version)  # the swap
    assert store.collect_garbage().deleted == object_names(dataset)
    assert partition_objects(store) == [] and retirements(store.backend)[0] == [] and store.fsck().clean
    with pytest.raises(skyhook.InvalidRequestError, match="not an object of dataset"):
        retire_objects(store.backend, "u", "1700000000aaaaaa", object_names(dataset))


def test_a_record_of_a_swap_that_never_happened_goes_with_its_objects(store):
    dataset = store.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    store.dataset("t").keep_versions(1)  # no earlier version kept: overwrites retire
    retire_objects(store.backend, "t", "1700000000aaaaaa", object_names(dataset))  # its writer died
    newer = store.write_dataset("t", version_table(2), mode="overwrite", rows_per_object=ROWS_PER_OBJECT)
    assert partition_objects(store) == object_names(newer) and retirements(store.backend)[0] == []
    assert_consistent(store, "t", version_table(2))


@pytest.mark.parametrize(
    "record",
    [b"not json", b'{"objects":["other.1700000000aaaaaa.0"],"retired_at":0,"replaced_by":""}', b'{"objects":1}'],
)
def test_an_untrusted_record_is_reported_and_never_acted_upon(store, record):
    other = store.write_dataset("other", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    store.backend.put_retirement("t", "1700000000bbbbbb", record)
    assert store.collect_garbage().deleted == []
    report = store.fsck()
    assert len(report.corrupt_retirements) == 1 and not report.clean
    assert store.fsck(repair=True).repaired and store.fsck().clean
    assert_consistent(store, "other", version_table(1))
    assert object_names(other) == partition_objects(store)


def test_fsck_reports_a_missing_object_and_cannot_repair_it(store):
    dataset = store.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    lost = object_names(dataset)[1]
    store.backend.delete_object(lost)
    for repair in (False, True):
        report = store.fsck("t", repair=repair)
        assert report.dangling == [f"t: {lost}"] and not report.clean, report
    assert partition_objects(store, "t") == [name for name in object_names(dataset) if name != lost]
    with pytest.raises(skyhook.ObjectNotFoundError):  # still the current version: not "changed"
        store.dataset("t").to_table()


# A writer killed just before or just after it swaps the manifest: the objects
# are either the new write's (orphans: no manifest names them) or the old
# version's (retired before the swap), never unaccounted for.
_KILLED_WRITER = """
import os, sys
import pyarrow as pa
import skyhook
where = sys.argv[2]
store = skyhook.connect(sys.argv[1], retention_seconds=600)
backend = store.backend
swap = backend.replace_manifest
def killed(*args):
    if where == "after":
        swap(*args)
    os._exit(3)
backend.replace_manifest = killed
table = pa.table({"version": pa.array([2] * 300, pa.int32()), "row": pa.array(range(300), pa.int64())})
store.write_dataset("t", table, mode="overwrite", rows_per_object=100)
"""


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_writer_killed_around_its_swap_leaves_nothing_orphaned(store, where):
    old = store.write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    store.dataset("t").keep_versions(1)  # no earlier version kept: overwrites retire
    killed = subprocess.run([sys.executable, "-c", _KILLED_WRITER, store.uri, where], capture_output=True)
    assert killed.returncode == 3, killed.stderr.decode()
    current = version_table(2 if where == "after" else 1)
    grace = 0 if store.backend.runs_in_process else 0.5  # RADOS knows a dead writer by its silence
    time.sleep(grace + 0.1)
    kept = retaining(store, 600)
    report = kept.fsck("t", grace_seconds=grace)
    assert len(report.abandoned_writes) == 1 and report.dangling == []
    if where == "after":  # the old version's objects were retired before the swap
        assert report.retired == object_names(old) and report.orphans == []
    else:  # the new objects were never published; the old ones are still current
        assert report.retired == [] and len(report.orphans) == 3
    kept.fsck("t", grace_seconds=grace, repair=True)
    assert_same_table(store.dataset("t").to_table().sort_by("row"), current)
    store.fsck("t", grace_seconds=grace, repair=True)  # retention 0: the retired go
    assert_consistent(store, "t", current)
    assert retirements(store.backend)[0] == []


def test_cli_fsck_of_one_dataset_reports_retired_objects_and_collects_them(store):
    old = retaining(store, 600).write_dataset("t", version_table(1), rows_per_object=ROWS_PER_OBJECT)
    store.dataset("t").keep_versions(1)  # no earlier version kept: overwrites retire
    retaining(store, 600).write_dataset("t", version_table(2), mode="overwrite", rows_per_object=ROWS_PER_OBJECT)
    checked = CliRunner().invoke(app, ["fsck", "t", "--store", store.uri])
    assert checked.exit_code == 0 and "retired objects: 3 (deleted now: 0, kept: 3)" in checked.output
    assert "clean" in checked.output
    assert set(object_names(old)) <= set(partition_objects(store, "t"))
    repaired = CliRunner().invoke(app, ["fsck", "t", "--store", store.uri, "--repair", "--retention-seconds", "0"])
    assert repaired.exit_code == 0 and "deleted now: 3" in repaired.output, repaired.output
    assert_consistent(store, "t", version_table(2))
    store.backend.delete_object(object_names(store.dataset("t"))[0])
    missing = CliRunner().invoke(app, ["fsck", "t", "--store", store.uri, "--repair"])
    assert missing.exit_code == 1 and "missing objects" in missing.output and "cannot restore" in missing.output
