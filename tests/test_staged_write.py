"""Writes whose objects several workers store, published by one commit
(skyhook.ingest.staged_write; Ray's datasink uses it): all the parts' rows
or none, in part order, the store left clean either way."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

import skyhook
from skyhook.ingest import staged_write
from skyhook.ingest.staged_write import StagedWrite, stage
from skyhook.ingest.write import WriteOptions
from skyhook.names import object_owner

TABLE = pa.table({"id": pa.array(range(3000), pa.int64()), "name": pa.array([f"n{i % 7}" for i in range(3000)])})


def objects_of(store: skyhook.Store, name: str) -> list[str]:
    owners = ((object, object_owner(object)) for object in store.backend.object_names())
    return sorted(object for object, owner in owners if owner is not None and owner.dataset == name)


def staged(store: skyhook.Store, name: str, mode: str = "create", **options) -> StagedWrite:
    return StagedWrite(store.backend, name, mode, WriteOptions(**options), store.retention_seconds)


def test_parts_publish_in_part_order_in_one_commit(store):
    write = staged(store, "t", rows_per_object=400)
    target = pickle.loads(pickle.dumps(write.target))  # what a worker receives
    parts = [stage(store.backend, target, part, TABLE.slice(part * 1000, 1000)) for part in (2, 0, 1)]
    assert "t" not in store.list_datasets() and store.fsck().in_progress == [f"t.{target.generation}"]
    dataset = write.publish([pickle.loads(pickle.dumps(part)) for part in parts])
    assert dataset.num_rows == 3000 and store.dataset("t").to_table().equals(TABLE)
    assert [p.number for p in dataset.partitions] == list(range(9))
    assert objects_of(store, "t") == sorted(p.object_name for p in dataset.partitions)
    report = store.fsck()
    assert not report.orphans and not report.in_progress

    more = staged(store, "t", mode="append")
    appended = more.publish([stage(store.backend, more.target, 0, TABLE.slice(0, 10).select(["name", "id"]))])
    assert appended.num_rows == 3010 and store.dataset("t").to_table().slice(3000).equals(TABLE.slice(0, 10))


def test_a_failed_or_inconsistent_write_leaves_nothing(store):
    write = staged(store, "t", rows_per_object=500)
    stage(store.backend, write.target, 0, TABLE)
    write.abandon()
    assert "t" not in store.list_datasets() and objects_of(store, "t") == []

    write = staged(store, "t")
    parts = [
        stage(store.backend, write.target, 0, TABLE),
        stage(store.backend, write.target, 1, TABLE.cast(pa.schema([("id", pa.int32()), ("name", pa.string())]))),
    ]
    with pytest.raises(skyhook.SchemaMismatchError, match="differ"):
        write.publish(parts)
    assert "t" not in store.list_datasets() and objects_of(store, "t") == [] and not store.fsck().in_progress


def test_a_retried_part_leaves_no_orphans_and_bad_requests_are_refused(store, monkeypatch):
    write = staged(store, "t", rows_per_object=100)
    stage(store.backend, write.target, 0, TABLE.slice(0, 1000))  # a first attempt that "failed"
    retried = stage(store.backend, write.target, 0, TABLE.slice(0, 300))
    dataset = write.publish([retried])
    assert dataset.num_rows == 300 and objects_of(store, "t") == sorted(p.object_name for p in dataset.partitions)
    with pytest.raises(skyhook.DatasetExistsError):
        staged(store, "t")
    with pytest.raises(skyhook.InvalidRequestError, match="part"):
        stage(store.backend, staged(store, "u").target, -1, TABLE)
    with pytest.raises(skyhook.InvalidRequestError, match="callbacks"):
        staged(store, "v", progress=lambda rows, size: None)
    monkeypatch.setattr(staged_write, "PART_OBJECTS", 3)  # a part never reaches into the next one's numbers
    crowded = staged(store, "w", rows_per_object=10)
    with pytest.raises(skyhook.InvalidRequestError, match="at most 3 objects"):
        stage(store.backend, crowded.target, 0, TABLE.slice(0, 40))
    assert objects_of(store, "w") == []
