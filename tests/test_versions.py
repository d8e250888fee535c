"""Versions and time travel, on both backends: after a dozen mixed commits
(writes, appends, an overwrite, a transform in place, statistics, a plan that
rewrites objects, a restore) every kept version reads exactly the rows a
snapshot taken at its commit holds, through skyhook and DuckDB; tags, as_of
and retention; garbage collection never breaks a reader of a kept version;
archives of a deleted dataset are never read as a new one's; manifests from
before versions read as version 0."""

from __future__ import annotations

import pickle
import threading
import time
from datetime import datetime, timedelta, timezone

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.catalog.manifest import Manifest
from skyhook.distributed.target import TransformTarget
from skyhook.errors import CorruptManifestError, DatasetChangedError, InvalidRequestError, VersionNotFoundError


def rows(start: int, count: int) -> pa.Table:
    ids = pa.array(range(start, start + count), pa.int64())
    return pa.table({"id": ids, "v": pc.multiply(ids, 3).cast(pa.float64()), "s": pc.cast(ids, pa.string())})


def sorted_rows(table: pa.Table) -> pa.Table:
    return table.select(["id", "v", "s"]).sort_by("id")


def test_every_kept_version_reads_exactly_what_it_held(store):
    snapshots: dict[int, pa.Table] = {}
    operations: dict[int, str] = {}

    def taken(operation: str) -> None:
        """Snapshots of the versions since the last: the rows now (a plan's steps each make one, same rows)."""
        current = store.dataset("t")
        for version in range(max(snapshots, default=0) + 1, current.version + 1):
            snapshots[version] = sorted_rows(current.to_table())
            operations[version] = operation

    store.write_dataset("t", rows(0, 500), rows_per_object=100).keep_versions(20)  # no new version
    taken("create")
    assert store.dataset("t").append(rows(500, 120)).version == 2
    taken("append")
    store.dataset("t").append(rows(620, 80))
    taken("append")
    before_overwrite = datetime.now(timezone.utc)
    time.sleep(0.01)
    store.write_dataset("t", rows(10_000, 300), mode="overwrite", rows_per_object=50)
    taken("overwrite")
    store.dataset("t").append(rows(20_000, 40))
    taken("append")
    store.dataset("t").transform(skyhook.Design("ipc"))  # in place: the objects keep their names
    taken("transform")
    store.dataset("t").compute_statistics()  # describes the same version
    assert store.dataset("t").version == max(snapshots)
    store.dataset("t").run_plan(store.dataset("t").plan_transform(TransformTarget(rows_per_object=200)))
    taken("plan")  # new objects, the old ones retired
    store.dataset("t").append(rows(30_000, 10))
    taken("append")
    assert store.dataset("t").restore(2).version == max(snapshots) + 1
    taken("restore")
    store.dataset("t").append(rows(40_000, 5))
    taken("append")
    assert len(snapshots) >= 10
    assert sorted_rows(store.dataset("t", version=max(snapshots) - 1).to_table()).equals(snapshots[2])
    listed = store.dataset("t").versions()
    assert listed.column("version").to_pylist() == list(snapshots)
    assert listed.column("operation").to_pylist() == list(operations.values())
    assert listed.column("num_rows").to_pylist() == [table.num_rows for table in snapshots.values()]
    for version, expected in snapshots.items():
        old = store.dataset("t", version=version)
        assert old.version == version
        assert sorted_rows(old.to_table()).equals(expected), version
        assert (
            old.count_rows(filter=pc.field("id") >= 10_000) == pc.sum(pc.greater_equal(expected["id"], 10_000)).as_py()
        )
        total = old.aggregate([("v", "sum")], filter="id < 600")
        assert total.column(0)[0].as_py() == pc.sum(expected.filter(pc.field("id") < 600)["v"]).as_py()
        via_duckdb = duckdb.connect().execute("select count(*), sum(id) from old").fetchone()
        assert via_duckdb == (expected.num_rows, pc.sum(expected["id"]).as_py())
        assert sorted_rows(pickle.loads(pickle.dumps(old)).to_table()).equals(expected)
    assert store.dataset("t", as_of=before_overwrite).version == 3
    assert store.fsck().orphans == []


def test_tags_retention_and_garbage_collection_keep_what_readers_use(backend, store):
    impatient = skyhook.connect(store.uri, retention_seconds=0)
    impatient.write_dataset("t", rows(0, 200), rows_per_object=50)
    first = impatient.dataset("t")
    first.tag("launch")
    first.keep_versions(2)
    for version in range(2, 7):
        impatient.write_dataset("t", rows(version * 1000, 100 + version), mode="overwrite")
    assert impatient.dataset("t").version == 6
    opened = impatient.dataset("t", version=5)  # kept: the two newest
    impatient.collect_garbage()
    assert impatient.dataset("t").versions().column("version").to_pylist() == [1, 5, 6]
    assert impatient.dataset("t").versions().column("tags").to_pylist() == [["launch"], [], []]
    assert sorted_rows(impatient.dataset("t", tag="launch").to_table()).equals(rows(0, 200))
    assert opened.count_rows() == 105
    with pytest.raises(VersionNotFoundError, match="no version 3"):
        impatient.dataset("t", version=3)
    impatient.write_dataset("t", rows(9000, 7), mode="overwrite")  # version 5 leaves what is kept
    with skyhook.connect(store.uri, retention_seconds=3600) as patient:
        patient.collect_garbage()
    assert opened.count_rows() == 105  # expired, its objects retired anew: a reader who opened it has the period
    with pytest.raises(VersionNotFoundError):
        impatient.dataset("t", version=5)
    impatient.collect_garbage()
    with pytest.raises(DatasetChangedError):
        opened.to_table()
    impatient.dataset("t").untag("launch")
    impatient.collect_garbage()
    impatient.collect_garbage()
    assert impatient.dataset("t").versions().column("version").to_pylist() == [6, 7]
    report = impatient.fsck()
    assert report.orphans == [] and report.dangling == []
    kept = [partition.object_name for partition in impatient.dataset("t", version=6).manifest.partitions]
    assert report.retired == kept  # replaced, but version 6 names it
    impatient.close()


def test_mistakes_are_clear_errors(store):
    dataset = store.write_dataset("t", rows(0, 10))
    with pytest.raises(VersionNotFoundError, match="kept: \\[1\\]"):
        store.dataset("t", version=4)
    with pytest.raises(InvalidRequestError, match="one of"):
        store.dataset("t", version=1, tag="x")
    with pytest.raises(VersionNotFoundError, match="no tag 'x'"):
        store.dataset("t", tag="x")
    with pytest.raises(InvalidRequestError, match="time zone"):
        store.dataset("t", as_of=datetime.now())
    with pytest.raises(VersionNotFoundError, match="as of"):
        store.dataset("t", as_of=datetime.now(timezone.utc) - timedelta(days=1))
    with pytest.raises(InvalidRequestError, match="invalid tag"):
        dataset.tag("no spaces")
    with pytest.raises(VersionNotFoundError):
        dataset.tag("later", 9)
    with pytest.raises(InvalidRequestError, match="keep_versions"):
        dataset.keep_versions(0)
    with pytest.raises(InvalidRequestError, match="a version is a number"):
        store.dataset("t", version="1")


def test_a_deleted_datasets_versions_are_never_read_as_a_new_ones(store):
    store.write_dataset("t", rows(0, 10))
    store.dataset("t").append(rows(10, 10))
    stale = store.backend.archived_manifest("t", 1)
    store.delete_dataset("t")
    assert store.backend.archived_versions("t") == []
    store.write_dataset("t", rows(100, 3))
    store.write_dataset("t", rows(200, 4), mode="overwrite")
    store.backend.put_archived_manifest("t", 1, stale)  # as if the delete had crashed before dropping it
    assert store.dataset("t").versions().column("version").to_pylist() == [2]
    with pytest.raises(VersionNotFoundError, match="no longer stored"):
        store.dataset("t", version=1)
    store.backend.put_archived_manifest("t", 1, b"not a manifest")
    with pytest.raises(CorruptManifestError):
        store.dataset("t", version=1)


def test_manifests_from_before_versions_read_as_version_zero(store):
    store.write_dataset("t", rows(0, 30))
    stored = store.backend.get_manifest("t")
    table = pa.ipc.open_file(pa.py_buffer(stored.data)).read_all()
    metadata = {k: v for k, v in table.schema.metadata.items() if k != b"skyhook.versioning"}
    metadata[b"skyhook.manifest_version"] = b"5"
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema.with_metadata(metadata)) as writer:
        writer.write_table(table.replace_schema_metadata(metadata))
    assert store.backend.replace_manifest("t", sink.getvalue().to_pybytes(), stored.version)
    legacy = store.dataset("t")
    assert legacy.version == 0 and legacy.count_rows() == 30
    legacy.append(rows(30, 5))
    assert store.dataset("t").version == 1
    assert store.dataset("t", version=0).count_rows() == 30
    assert Manifest.from_bytes(store.backend.get_manifest("t").data, "t").lineage == ""


def test_concurrent_appends_make_one_version_each(store):
    store.write_dataset("t", rows(0, 10))
    store.dataset("t").keep_versions(100)

    def append(start: int) -> None:
        for step in range(4):
            store.dataset("t").append(rows(start + step * 10, 10))

    threads = [threading.Thread(target=append, args=(1000 * (i + 1),)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    listed = store.dataset("t").versions()
    assert listed.column("version").to_pylist() == list(range(1, 14))
    assert listed.column("num_rows").to_pylist() == [10 * v for v in range(1, 14)]
    for version in range(1, 14):
        assert store.dataset("t", version=version).count_rows() == 10 * version


@pytest.mark.parametrize(
    "versioning",
    [
        b"[]",
        b'{"tags": ["a"]}',
        b'{"tags": {"a": 5}}',  # a version it does not have
        b'{"tags": {"../x": 1}}',
        b'{"version": -1}',
        b'{"version": true}',
        b'{"keep_versions": 0}',
        b'{"operation": 3}',
        b'{"lineage": "../x"}',
        b"{",
    ],
)
def test_hostile_versioning_is_a_corrupt_manifest(store, versioning):
    manifest = store.write_dataset("t", rows(0, 5)).manifest
    table = pa.ipc.open_file(pa.py_buffer(manifest.to_bytes())).read_all()
    metadata = {**table.schema.metadata, b"skyhook.versioning": versioning}
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema.with_metadata(metadata)) as writer:
        writer.write_table(table.replace_schema_metadata(metadata))
    with pytest.raises(CorruptManifestError, match="manifest of dataset 't'"):
        Manifest.from_bytes(sink.getvalue().to_pybytes(), "t")
