"""Integrity at the client: damaged replies and objects are SkyhookErrors, never
a crash, a raw library error or a silently wrong answer."""

from __future__ import annotations

import json
import pickle
import struct
import subprocess
import sys
import textwrap
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.rpc.frame import REPLY_MAGIC
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import DescribeRequest, ScanRequest
from skyhook.rpc.result_options import ResultOptions
from support.assertions import assert_same_table
from support.damage import flip_inside_a_data_page, with_int64_patched
from support.replies import frame, header
from support.tables import make_typed_table

F = pc.field
TABLE = make_typed_table(rows=3000, seed=5)


def real_replies(store: skyhook.Store) -> dict[str, bytes]:
    """Encoded replies of every kind, as storage sends them."""
    # Strings, lists, decimals, nulls: every kind of buffer; few columns keep the replies short.
    dataset = store.write_dataset("t", TABLE.select(["id", "s", "tags", "dec", "ts"]), rows_per_object=1000)
    name = dataset.manifest.partitions[0].object_name
    filter = dataset.scanner(filter=F("id") < 30).execution.plan.filter_substrait
    call = store.backend.call
    return {
        "scan": call(name, "scan", ScanRequest(filter=filter).encode()),
        "scan lz4": call(name, "scan", ScanRequest(filter=filter, result=ResultOptions(compression="lz4")).encode()),
        "describe": call(name, "describe", DescribeRequest().encode()),
        "error": call(name, "scan", ScanRequest(result=ResultOptions(batch_size=0)).encode()),
    }


# Runs in a child process: a crash there fails the test instead of killing pytest.
DECODE_DAMAGED = textwrap.dedent("""
    import json, pickle, random, sys
    from skyhook.errors import StorageError
    from skyhook.rpc.reply import decode_reply

    def decode(message):
        try:
            reply = decode_reply(message)
            reply.raise_for_status("test")
            reply.reader().read_all()
            return "ok"
        except StorageError:
            return "storage error"
        except Exception as error:  # other SkyhookErrors too: only status codes may raise them
            from skyhook.rpc.error_codes import ERROR_BY_CODE
            if type(error) in ERROR_BY_CODE.values():
                return "status"
            raise

    replies = pickle.load(sys.stdin.buffer)
    random_bytes = random.Random(1)
    outcomes = {}
    for kind, original in replies.items():
        damaged = []
        for bit in range(min(len(original), 2048) * 8):  # every bit of the prefix, header and more
            message = bytearray(original)
            message[bit // 8] ^= 1 << (bit % 8)
            damaged.append(bytes(message))
        for _ in range(3000):  # runs of random bytes anywhere, and truncations
            message = bytearray(original)
            start = random_bytes.randrange(len(message))
            for i in range(start, min(len(message), start + random_bytes.randint(1, 16))):
                message[i] = random_bytes.randrange(256)
            damaged.append(bytes(message))
        damaged.extend(original[:cut] for cut in range(0, len(original), 7))
        damaged.append(original + b"trailing")
        for message in damaged:
            outcome = decode(message)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print(json.dumps(outcomes))
""")


def test_damaged_replies_raise_storage_errors_and_never_crash(tmp_path):
    with skyhook.connect((tmp_path / "store").as_uri()) as store:
        replies = real_replies(store)
    child = subprocess.run(
        [sys.executable, "-c", DECODE_DAMAGED], input=pickle.dumps(replies), capture_output=True, timeout=900
    )
    assert child.returncode == 0, (
        f"decoding damaged replies failed ({child.returncode}): {child.stderr.decode()[-3000:]}"
    )
    outcomes = json.loads(child.stdout)
    assert outcomes["storage error"] > 1000


def test_a_result_without_the_requested_columns_is_a_corrupt_reply(tmp_path):
    with skyhook.connect((tmp_path / "store").as_uri()) as store:
        scanner = store.write_dataset("t", TABLE.select(["id", "s"])).scanner(columns=["s"])
        with pytest.raises(skyhook.CorruptReplyError, match="does not have the requested columns"):
            scanner.execution._conform(pa.table({"id": pa.array([1])}))


@pytest.mark.parametrize(
    "message, match",
    [
        (frame(header(message=pa.array([""]))), "no 'status'"),
        (frame(header(status=pa.array([0], pa.int32()))), "no 'message'"),
        (frame(header(status=pa.array([0], pa.int64()), message=pa.array([""]))), "'status' is int64"),
        (frame(header(status=pa.array([0, 0], pa.int32()), message=pa.array(["", ""]))), "2 header rows"),
        (frame(header(status=pa.array([None], pa.int32()), message=pa.array([""]))), "'status' is null"),
        (
            frame(header(status=pa.array([0], pa.int32()), message=pa.array([""]), executed=pa.array(["most"]))),
            "executed 'most'",
        ),
        (
            frame(header(status=pa.array([0], pa.int32()), message=pa.array([""]), executed=pa.array([1]))),
            "'executed' is int64",
        ),
    ],
)
def test_malformed_reply_headers(message, match):
    with pytest.raises(skyhook.CorruptReplyError, match=match):
        decode_reply(message, "object x")


def test_two_header_batches_are_malformed():
    one = header(status=pa.array([0], pa.int32()), message=pa.array([""]))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, one.schema) as writer:
        writer.write_batch(one)
        writer.write_batch(one)
    data = sink.getvalue().to_pybytes()
    data += bytes(-len(data) % 8)
    with pytest.raises(skyhook.CorruptReplyError, match="2 header batches"):
        decode_reply(struct.pack("<4sHHII", REPLY_MAGIC, 1, 0, len(data), 0) + data)


def test_non_utf8_error_message_is_decoded_safely():
    raw = b"column \xff\xfe is bad"
    message = pa.Array.from_buffers(pa.string(), 1, pa.array([raw], pa.binary()).buffers())
    reply = decode_reply(
        frame(pa.RecordBatch.from_arrays([pa.array([5], pa.int32()), message], names=["status", "message"]))
    )
    with pytest.raises(skyhook.CorruptObjectError, match="column \ufffd\ufffd is bad"):
        reply.raise_for_status("scanning")


def test_missing_statistic_is_a_corrupt_reply():
    reply = decode_reply(frame(header(status=pa.array([0], pa.int32()), message=pa.array([""]))), "object x")
    with pytest.raises(skyhook.CorruptReplyError, match="lacks the statistic 'rows_scanned'"):
        reply.statistics["rows_scanned"]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_flipped_bit_in_a_parquet_page_is_an_error_on_every_path(store, compression):
    table = pa.table({"id": pa.array(range(20_000)), "x": pa.array([i * 0.5 for i in range(20_000)])})
    dataset = store.write_dataset("t", table, rows_per_object=10_000, compression=compression)
    name = dataset.manifest.partitions[1].object_name
    original = store.backend.read_object(name).to_pybytes()
    store.backend.put_object(name, pa.py_buffer(flip_inside_a_data_page(original, "x")), {"skyhook.format": "parquet"})
    for pushdown in (True, False):
        with pytest.raises(skyhook.CorruptObjectError, match=name):
            dataset.to_table(columns=["x"], filter=F("x") > 1.0, pushdown=pushdown)
        with pytest.raises(skyhook.CorruptObjectError, match=name):
            dataset.to_table(pushdown=pushdown)
    with pytest.raises(skyhook.CorruptObjectError, match=name):
        dataset.aggregate([("x", "sum")])
    # The undamaged object still answers.
    assert_same_table(dataset.to_table(filter=F("id") < 10_000), table.slice(0, 10_000))


@pytest.mark.parametrize(
    "other_schema",
    [
        pa.schema([("id", pa.int32()), ("x", pa.float64())]),  # a narrower type: would be cast silently
        pa.schema([("id", pa.int64()), ("y", pa.float64())]),  # another column
        pa.schema([("id", pa.int64())]),  # a missing column
    ],
)
def test_an_object_inconsistent_with_the_manifest_is_corrupt(store, other_schema):
    table = pa.table({"id": pa.array(range(2000)), "x": pa.array([i * 0.5 for i in range(2000)])})
    dataset = store.write_dataset("t", table, rows_per_object=1000, format="ipc")
    name = dataset.manifest.partitions[1].object_name
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, other_schema) as writer:
        writer.write_table(pa.table({field.name: pa.array(range(1000), field.type) for field in other_schema}))
    store.backend.put_object(name, sink.getvalue(), {"skyhook.format": "ipc"})
    for pushdown in (True, False):
        with pytest.raises(skyhook.CorruptObjectError, match=f"{name}.*inconsistent"):
            dataset.to_table(columns=["id", "x"], filter=F("x") >= 0, pushdown=pushdown)
    with pytest.raises(skyhook.CorruptObjectError, match=f"{name}.*inconsistent"):
        dataset.aggregate([("id", "sum"), ("x", "sum")])


@pytest.mark.parametrize(
    "error, expected",
    [
        (MemoryError("malloc of size 1 GiB failed"), skyhook.OutOfMemoryError),
        (ValueError(5, "object is not a readable Parquet partition: bad page"), skyhook.CorruptObjectError),
        (ValueError(8, "an internal failure"), skyhook.StorageError),
    ],
)
def test_every_failure_of_a_plain_read_is_a_skyhook_error_naming_the_object(tmp_path, monkeypatch, error, expected):
    from skyhook.backends import object_codec

    def failing(*_):
        raise error

    with skyhook.connect((tmp_path / "store").as_uri()) as store:
        dataset = store.write_dataset("t", TABLE.select(["id", "s"]), rows_per_object=1000)
        monkeypatch.setattr(object_codec._embedded, "read_object", failing)
        name = dataset.manifest.partitions[0].object_name
        with pytest.raises(expected, match=name):
            dataset.to_table(columns=["s"], filter=F("id") > 5, pushdown=False)


def test_a_filter_that_fails_at_the_client_is_an_invalid_request(tmp_path):
    with skyhook.connect((tmp_path / "store").as_uri()) as store:
        dataset = store.write_dataset("t", TABLE.select(["id", "s"]), rows_per_object=1000)
        with pytest.raises(skyhook.InvalidRequestError, match=dataset.manifest.partitions[0].object_name):
            dataset.to_table(filter=F("s").cast(pa.int64()) > 5, pushdown=False)


# Types Parquet cannot hold: their objects have time32[ms], timestamp[ms] and date32 columns.
STORED_OTHERWISE = pa.table(
    {
        "t32": pa.array(range(10), pa.time32("s")),
        "ts": pa.array(range(10), pa.timestamp("s")),
        "d64": pa.array([86_400_000 * i for i in range(10)], pa.date64()),
    }
)


def test_plain_reads_accept_what_parquet_makes_of_a_type(tmp_path):
    with skyhook.connect((tmp_path / "store").as_uri()) as store:
        dataset = store.write_dataset("t", STORED_OTHERWISE)
        assert_same_table(dataset.to_table(pushdown=False), STORED_OTHERWISE)


def test_pushdown_on_types_parquet_stores_otherwise(tmp_path):
    with skyhook.connect((tmp_path / "store").as_uri()) as store:
        dataset = store.write_dataset("t", STORED_OTHERWISE)
        assert dataset.to_table(filter=F("t32") > pa.scalar(3, pa.time32("s")), pushdown=True).num_rows == 6


@pytest.mark.parametrize("nulls", [False, True])
def test_a_decimal_beyond_its_precision_is_a_corrupt_object(store, nulls):
    # decimal(15, 2) is stored as INT64, which holds more digits than 15: a
    # value patched to 10^15 (hundredths) must not reach compute or the client.
    values = [Decimal("1.25"), Decimal("9999999999999.99"), None if nulls else Decimal("3.00")]
    table = pa.table({"id": pa.array([0, 1, 2]), "d": pa.array(values, pa.decimal128(15, 2))})
    dataset = store.write_dataset("t", table)
    name = dataset.manifest.partitions[0].object_name
    damaged = with_int64_patched(table, 10**15 - 1, 10**15)
    store.backend.put_object(name, pa.py_buffer(damaged), {"skyhook.format": "parquet"})
    for pushdown in (True, False):
        with pytest.raises(skyhook.CorruptObjectError, match=name):
            dataset.to_table(filter=F("id") >= 0, pushdown=pushdown)
    with pytest.raises(skyhook.CorruptObjectError, match="precision"):
        dataset.aggregate([("d", "sum")], pushdown=True)
