"""Sorted integer columns sent as first differences (skyhook.delta batch
metadata) and restored by the client: every integer type with its extremes,
unsorted columns, nulls, empty and one-row batches, continuations and
aggregates' partials, all equal to pyarrow, on both backends; a malformed
skyhook.delta is a CorruptReplyError."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skyhook.errors import CorruptReplyError
from skyhook.rpc.reply import Reply
from skyhook.rpc.requests import PlanRequest, ScanRequest
from skyhook.rpc.result_options import ResultOptions
from support.assertions import assert_same_table

F = pc.field
ROWS = 3000
INTEGER_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()]


def _bounds(type: pa.DataType) -> tuple[int, int]:
    bits = type.bit_width
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(type) else (0, (1 << bits) - 1)


@pytest.fixture(scope="module")
def integers() -> pa.Table:
    """Per type: sorted from its minimum to its maximum, unsorted, sorted with nulls."""
    rng = random.Random(11)
    columns = {"row": pa.array(range(ROWS), pa.int64())}
    for type in INTEGER_TYPES:
        low, high = _bounds(type)
        values = sorted(rng.randint(low, high) for _ in range(ROWS - 2))
        columns[f"sorted_{type}"] = pa.array([low, *values, high], type)
        columns[f"unsorted_{type}"] = pa.array([rng.randint(low, high) for _ in range(ROWS)], type)
        with_nulls = [None if i % 7 == 0 else v for i, v in enumerate([low, *values, high])]
        columns[f"nulls_{type}"] = pa.array(with_nulls, type)
    return pa.table(columns)


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_every_integer_type_round_trips(store, integers, codec):
    ds = store.write_dataset("ints", integers, rows_per_object=1000)
    for filter in (
        None,
        (F("row") > 100) & (F("row") < 2500),
        F("row") == 17,
        F("row") < 0,
    ):  # all, some, one row, none
        scanner = ds.scanner(filter=filter, batch_size=300, pushdown=True, reply_compression=codec)
        expected = integers if filter is None else integers.filter(filter)
        assert_same_table(scanner.to_table(), expected)
        assert scanner.stats.objects_read_plain == 0


def test_storage_names_the_encoded_columns(store, integers):
    ds = store.write_dataset("ints", integers, rows_per_object=ROWS)
    names = [p.object_name for p in ds.manifest.partitions]
    request = ScanRequest(result=ResultOptions(compression="zstd", batch_size=1000))
    (reply,) = store.backend.call_each(names, request, "scanning")
    stream = pa.ipc.open_stream(reply.body)
    sorted_indices = [i for i, name in enumerate(integers.column_names) if name.startswith(("row", "sorted_"))]
    for _ in range(3):
        _, metadata = stream.read_next_batch_with_custom_metadata()
        assert metadata[b"skyhook.delta"] == ",".join(map(str, sorted_indices)).encode()
    assert_same_table(reply.reader().read_all(), integers)
    # Off (an old client, or uncompressed replies): no metadata, the values as they are.
    for result in (ResultOptions(compression="zstd", delta_sorted_integers=False), ResultOptions()):
        (plain,) = store.backend.call_each(names, ScanRequest(result=result), "scanning")
        stream = pa.ipc.open_stream(plain.body)
        assert stream.read_next_batch_with_custom_metadata()[1] is None
        assert_same_table(plain.reader().read_all(), integers)


def test_sorted_keys_move_fewer_bytes(store):
    rng = random.Random(4)
    table = pa.table({"key": pa.array(sorted(rng.randrange(1 << 40) for _ in range(200_000)), pa.int64())})
    ds = store.write_dataset("keys", table, rows_per_object=100_000)
    names = [p.object_name for p in ds.manifest.partitions]
    moved = {}
    for delta in (False, True):
        request = ScanRequest(result=ResultOptions(compression="zstd", delta_sorted_integers=delta))
        replies = list(store.backend.call_each(names, request, "scanning"))
        assert_same_table(pa.concat_tables(reply.reader().read_all() for reply in replies), table)
        moved[delta] = sum(reply.statistics["bytes_returned"] for reply in replies)
    assert moved[True] < 0.8 * moved[False]


def test_plans_and_aggregate_partials_round_trip(store, integers):
    """Partials travel through the same writer (execute_plan); Acero emits groups
    in hash order, so mostly they go as values, and must come back right either way."""
    ds = store.write_dataset("ints", integers, rows_per_object=1500)
    aggregations = [("sorted_int64", "min"), ("sorted_uint64", "max"), ("unsorted_int32", "sum"), ("row", "count")]
    for codec in ("lz4", "zstd"):
        grouped = ds.group_by("sorted_int16").aggregate(aggregations, pushdown=True, reply_compression=codec)
        expected = integers.group_by("sorted_int16").aggregate(aggregations)
        assert_same_table(grouped.sort_by("sorted_int16"), expected.sort_by("sorted_int16"))
        assert ds.last_aggregate.stats.aggregate_in_storage
    whole = [("sorted_uint64", "max"), ("sorted_int8", "min"), ("row", "count")]
    assert_same_table(ds.aggregate(whole, reply_compression="zstd"), integers.group_by([]).aggregate(whole))


def test_continued_replies_round_trip(store, monkeypatch):
    if not store.backend.runs_in_process:
        pytest.skip("the OSDs' limits are set when the cluster starts")
    rows = 600_000
    table = pa.table(
        {"k": pa.array(range(rows), pa.int64()), "v": pa.array([i % 977 for i in range(rows)], pa.uint16())}
    )
    ds = store.write_dataset("one", table, rows_per_object=rows, target_object_size=1 << 40, row_group_size=50_000)
    monkeypatch.setenv("SKYHOOK_MAX_CALL_MS", "1")
    scanner = ds.scanner(batch_size=1, pushdown=True, reply_compression="zstd")
    assert_same_table(scanner.to_table(), table)
    assert scanner.stats.continuations >= 1


def _reply(batch: pa.RecordBatch, delta: str) -> Reply:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch, custom_metadata={"skyhook.delta": delta})
    return Reply(0, "", body=sink.getvalue(), source="object x")


@pytest.mark.parametrize("delta", ["9", "-1", "1", "2", "0,0", "0,", "zero", "", "3"], ids=lambda text: repr(text))
def test_malformed_delta_metadata_is_a_corrupt_reply(delta):
    batch = pa.record_batch(
        {
            "k": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array(["a", "b", "c"]),
            "n": pa.array([1, None, 2], pa.int32()),
            "wraps": pa.array([1, -3, 1], pa.int8()),  # decodes to 1, -2, -1: not sorted
        }
    )
    with pytest.raises(CorruptReplyError, match="the reply of object x is malformed"):
        _reply(batch, delta).reader().read_all()


def test_delta_metadata_decodes_by_wrapping_sums():
    batch = pa.record_batch(
        {"k": pa.array([-128, -128, 127], pa.int8()), "u": pa.array([2**64 - 2, 1, 0], pa.uint64())}
    )
    restored = _reply(batch, "0,1").reader().read_all()
    assert restored.column("k").to_pylist() == [-128, 0, 127]
    assert restored.column("u").to_pylist() == [2**64 - 2, 2**64 - 1, 2**64 - 1]
    assert restored.schema.metadata is None


@pytest.mark.parametrize(
    "values, sorted_",
    [
        ([5, 0, 0, 7], True),  # no difference negative, no overflow: one pass each
        ([-(2**63), -1], True),  # -2**63 then 2**63 - 1: the difference wrapped
        ([2**63 - 1, 1], False),  # no difference negative, but the sum wraps: unsorted
        ([3, -1, 4], False),
    ],
)
def test_delta_columns_are_checked_sorted_whatever_path(values, sorted_):
    differences = pa.array(values, pa.int64())
    reply = _reply(pa.record_batch({"k": differences}), "0")
    if not sorted_:
        with pytest.raises(CorruptReplyError, match="does not decode to sorted values"):
            reply.reader().read_all()
        return
    restored = reply.reader().read_all().column("k").combine_chunks()
    expected = pc.cumulative_sum(differences)
    assert restored.equals(expected) and pc.all(pc.greater_equal(restored[1:], restored[:-1])).as_py()


def test_plan_requests_ask_for_deltas_when_compressed():
    fields = PlanRequest(plan=b"", result=ResultOptions(compression="zstd")).result.header_fields()
    assert fields["delta_sorted_integers"] == 1
    assert ResultOptions(compression="none").header_fields()["delta_sorted_integers"] is None
    assert ResultOptions().header_fields()["delta_sorted_integers"] is None
    assert (
        ResultOptions(compression="lz4", delta_sorted_integers=False).header_fields()["delta_sorted_integers"] is None
    )
