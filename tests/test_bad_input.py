"""Bad input gets a clear error and loses nothing."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
import pytest

import skyhook
from skyhook.rpc.frame import encode_request_frame
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import ScanRequest

F = pc.field
TABLE = pa.table(
    {
        "id": pa.array(range(5000)),
        "s": pa.array([f"v{i % 13}" for i in range(5000)]),
        "x": pa.array([float(i) for i in range(5000)]),
    }
)


@pytest.fixture
def dataset(store):
    return store.write_dataset("t", TABLE, rows_per_object=2000)


def call_scan(dataset, request: bytes, partition: int = 0):
    reply = decode_reply(
        dataset.store.backend.call(dataset.manifest.partitions[partition].object_name, "scan", request)
    )
    reply.raise_for_status("scan")
    return reply


def assert_intact(dataset):
    assert dataset.store.dataset(dataset.name).to_table().equals(TABLE)


def test_unknown_column_in_projection(dataset):
    with pytest.raises(skyhook.UnknownColumnError, match="'nope'.*id, s, x"):
        dataset.to_table(columns=["id", "nope"])


def test_unknown_column_in_filter(dataset):
    with pytest.raises(skyhook.UnknownColumnError, match="'nope'"):
        dataset.to_table(filter=F("nope") > 1)
    with pytest.raises(skyhook.UnknownColumnError, match="'nope'"):
        dataset.to_table(filter="nope > 1")


def test_type_mismatch(dataset):
    with pytest.raises(skyhook.TypeMismatchError, match="int64, string"):
        dataset.to_table(filter=F("id") == "seven")
    with pytest.raises(skyhook.TypeMismatchError, match="string column"):
        dataset.to_table(filter="s > 3")


def test_non_boolean_filter_and_bad_arguments(dataset):
    with pytest.raises(skyhook.SkyhookError):
        dataset.to_table(filter=F("id") + 1)
    with pytest.raises(skyhook.InvalidRequestError, match="Expression"):
        dataset.to_table(filter=42)
    with pytest.raises(skyhook.InvalidRequestError, match="list of names"):
        dataset.to_table(columns="id")
    with pytest.raises(skyhook.InvalidRequestError, match="cannot parse"):
        dataset.to_table(filter="id >")


def test_evaluation_error_in_storage_is_reported(dataset):
    with pytest.raises(skyhook.InvalidRequestError, match="overflow"):
        dataset.to_table(filter=F("id") * pa.scalar(2**62) > 0)
    assert_intact(dataset)


@pytest.mark.parametrize(
    "request_bytes, error, message",
    [
        (b"", skyhook.InvalidRequestError, "shorter than"),
        (b"garbage that is not a request", skyhook.InvalidRequestError, "does not start with"),
        (struct.pack("<4sHHII", b"SKRQ", 99, 0, 0, 0), skyhook.UnsupportedVersionError, "version 99"),
        (struct.pack("<4sHHII", b"SKRQ", 1, 0, 10**6, 0), skyhook.InvalidRequestError, "truncated"),
        (struct.pack("<4sHHII", b"SKRQ", 1, 0, 8, 0) + b"\xff" * 8, skyhook.InvalidRequestError, "malformed header"),
    ],
)
def test_malformed_requests(dataset, request_bytes, error, message):
    with pytest.raises(error, match=message):
        call_scan(dataset, request_bytes)
    assert_intact(dataset)


def test_truncated_request(dataset):
    request = ScanRequest(filter=bytes(pas.serialize_expressions([F("id") > 3], ["f"], TABLE.schema))).encode()
    for cut in (5, 20, len(request) // 2, len(request) - 1):
        with pytest.raises(skyhook.InvalidRequestError):
            call_scan(dataset, request[:cut])
    assert_intact(dataset)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"filter": b"\x08\x96\x01 not substrait"}, "Substrait filter"),
        ({"projection": b"\xff\xff\xff"}, "Substrait projection"),
        ({"compression": "snappy"}, "unknown compression"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_result_bytes": -1}, "max_result_bytes"),
        ({"batch_size": "many"}, "must be int64"),
    ],
)
def test_invalid_request_fields(dataset, fields, message):
    with pytest.raises(skyhook.InvalidRequestError, match=message):
        call_scan(dataset, encode_request_frame({"method": "scan", **fields}))


def test_non_boolean_substrait_filter_rejected_in_storage(dataset):
    filter = bytes(pas.serialize_expressions([F("id") + 1], ["f"], TABLE.schema))
    with pytest.raises(skyhook.InvalidRequestError, match="boolean"):
        call_scan(dataset, ScanRequest(filter=filter).encode())


def test_storage_checks_columns_against_the_object(dataset):
    other = pa.schema([("id", pa.string()), ("zz", pa.int64())])
    missing = bytes(pas.serialize_expressions([F("zz") > 1], ["f"], other))
    with pytest.raises(skyhook.UnknownColumnError, match="'zz' does not exist"):
        call_scan(dataset, ScanRequest(filter=missing).encode())
    mistyped = bytes(pas.serialize_expressions([F("id") == "1"], ["f"], other))
    with pytest.raises(skyhook.TypeMismatchError, match="'id' is int64 in the object"):
        call_scan(dataset, ScanRequest(filter=mistyped).encode())


def test_result_too_large(dataset):
    with pytest.raises(skyhook.ResultTooLargeError, match="limit of 1000 bytes"):
        dataset.scanner(max_result_bytes=1000, pushdown=True).to_table()
    assert dataset.scanner(max_result_bytes=1000, filter=F("id") == 3).to_table().num_rows == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_format", "no_format"])
def test_corrupt_object(store, damage):
    good = store.write_dataset("good", TABLE)
    victim = store.write_dataset("victim", TABLE, rows_per_object=2000)
    backend = store.backend
    name = victim.manifest.partitions[1].object_name
    original = backend.read_object(name).to_pybytes()
    damaged = {
        "garbage": (b"this is not parquet" * 100, {"skyhook.format": "parquet"}),
        "truncated": (original[: len(original) // 2], {"skyhook.format": "parquet"}),
        "wrong_format": (original, {"skyhook.format": "ipc"}),
        "no_format": (original, {}),
    }[damage]
    backend.put_object(name, pa.py_buffer(damaged[0]), damaged[1])
    with pytest.raises(skyhook.CorruptObjectError, match="not a readable|no skyhook.design"):
        victim.to_table(filter=F("x") > 0, pushdown=True)
    with pytest.raises(skyhook.CorruptObjectError):
        store.describe_object(name)
    # Nothing else is lost: other objects and datasets still answer.
    assert victim.to_table(filter=F("id") < 100).num_rows == 100
    assert good.to_table().equals(TABLE)


def test_missing_object(store, dataset):
    store.backend.delete_object(dataset.manifest.partitions[2].object_name)
    with pytest.raises(skyhook.ObjectNotFoundError):
        dataset.to_table()


def test_empty_dataset(store):
    empty = store.write_dataset("empty", TABLE.slice(0, 0))
    assert len(empty.manifest.partitions) == 0
    assert empty.to_table().equals(TABLE.slice(0, 0))
    assert empty.to_table(columns=["s"], filter=F("id") > 3).schema == pa.schema([("s", pa.string())])
    assert empty.count_rows(filter=F("id") > 3) == 0
    assert store.dataset("empty").count_rows() == 0


def test_filter_matching_nothing(dataset):
    result = dataset.scanner(columns=["s"], filter=F("id") > 10**9)
    assert result.to_table().equals(pa.table({"s": pa.array([], pa.string())}))
    assert result.stats.objects_pruned == 3  # statistics rule every object out


def test_dataset_names_and_existence(store, dataset):
    with pytest.raises(skyhook.DatasetNotFoundError, match="no dataset named 'absent'"):
        store.dataset("absent")
    with pytest.raises(skyhook.DatasetExistsError, match="overwrite"):
        store.write_dataset("t", TABLE)
    for bad in ("", "../escape", "a b", "x" * 200, ".hidden"):
        with pytest.raises(skyhook.InvalidRequestError, match="invalid dataset name"):
            store.write_dataset(bad, TABLE)
    with pytest.raises(skyhook.InvalidRequestError, match="unknown format"):
        store.write_dataset("other", TABLE, format="orc")
    with pytest.raises(skyhook.InvalidRequestError, match="cannot write dict"):
        store.write_dataset("other", {"a": [1]})
    assert store.list_datasets() == ["t"]
    assert_intact(dataset)


def test_overwrite_replaces_objects(store, dataset):
    old_objects = [p.object_name for p in dataset.manifest.partitions]
    replaced = store.write_dataset("t", TABLE.slice(0, 10), mode="overwrite")
    assert replaced.to_table().equals(TABLE.slice(0, 10))
    assert store.dataset("t", version=1).count_rows() == TABLE.num_rows  # kept for time travel
    replaced.keep_versions(1)
    store.collect_garbage()
    with pytest.raises(skyhook.ObjectNotFoundError):
        store.backend.read_object(old_objects[0])
    store.delete_dataset("t")
    assert store.list_datasets() == []
    with pytest.raises(skyhook.DatasetNotFoundError):
        store.delete_dataset("t")


def test_an_unknown_option_is_an_invalid_request_and_does_nothing(store):
    dataset = store.write_dataset("options", pa.table({"a": [1, 2]}))
    calls = [
        lambda: dataset.to_table(pushdwn=False),
        lambda: dataset.count_rows("a > 1", max_inflight=3),
        lambda: dataset.aggregate([("a", "sum")], pushdwn=False),
        lambda: dataset.append(pa.table({"a": [3]}), rows_per_objekt=1),
    ]
    for call in calls:
        with pytest.raises(skyhook.InvalidRequestError, match="takes no option"):
            call()
    assert store.dataset("options").to_table().num_rows == 2
