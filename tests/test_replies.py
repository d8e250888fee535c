"""Replies: compression chosen per request, the rule that a reply is never
larger than a plain read of its object, and DuckDB's count(*), on both backends."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skyhook.errors import CorruptReplyError, InvalidRequestError
from skyhook.execution.placement import sample_admission
from skyhook.rpc.requests import ScanRequest
from skyhook.rpc.result_options import ResultOptions
from support.assertions import assert_same_table

F = pc.field


@pytest.fixture(scope="module")
def repetitive() -> pa.Table:
    """A dictionary-friendly column: tiny in Parquet, large as decoded Arrow."""
    rng = random.Random(5)
    rows = 40_000
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "word": pa.array([rng.choice(["alpha" * 20, "beta" * 25, None]) for _ in range(rows)]),
        }
    )


@pytest.mark.parametrize("codec", [None, "none", "lz4", "zstd"])
def test_reply_compression_round_trips(store, typed_table, codec):
    ds = store.write_dataset("typed", typed_table, rows_per_object=700)
    filter = (F("id") < 1500) | F("s").is_null()
    for columns in (None, ["id", "s", "dec"], {"twice": F("id") * 2}):
        scanner = ds.scanner(columns=columns, filter=filter, pushdown=True, reply_compression=codec)
        expected = ds.scanner(columns=columns, filter=filter, pushdown=False).to_table()
        assert_same_table(scanner.to_table(), expected)
        stats = scanner.stats
        assert stats.objects_read_plain == 0 and stats.bytes_returned > 0
        if (codec or store.backend.reply_compression) == "none":
            assert stats.bytes_decoded == stats.bytes_returned
        else:
            assert stats.bytes_decoded > stats.bytes_returned


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_aggregate_reply_compression(store, typed_table, codec):
    ds = store.write_dataset("typed", typed_table, rows_per_object=700)
    result = ds.group_by("s").aggregate([("i32", "sum"), ("id", "count")], reply_compression=codec, pushdown=True)
    expected = typed_table.group_by("s").aggregate([("i32", "sum"), ("id", "count")])
    assert_same_table(result.sort_by("s"), expected.sort_by("s"))


def test_unknown_compression_is_a_clear_error(store, typed_table):
    ds = store.write_dataset("typed", typed_table, rows_per_object=700)
    with pytest.raises(InvalidRequestError, match="reply_compression must be one of none, lz4, zstd"):
        ds.to_table(reply_compression="gzip")
    with pytest.raises(InvalidRequestError, match="reply_compression"):
        ds.aggregate([("id", "sum")], reply_compression="brotli")


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd"])
def test_reply_is_never_larger_than_its_object(store, repetitive, codec):
    ds = store.write_dataset("rep", repetitive, rows_per_object=10_000)
    sizes = sum(p.size_bytes for p in ds.manifest.partitions)
    scanner = ds.scanner(pushdown=True, reply_within_object=True, reply_compression=codec)
    assert_same_table(scanner.to_table(), repetitive)
    stats = scanner.stats
    assert stats.bytes_returned <= sizes
    if codec == "none":  # an Arrow reply of these strings is many times the Parquet object
        assert stats.objects_over_object == len(ds.manifest.partitions) == stats.objects_read_plain
        assert stats.bytes_abandoned > 0 and stats.wasted_storage_cpu_s > 0
    # Opting out moves the larger replies: the rule is what kept the bytes down.
    unchecked = ds.scanner(pushdown=True, reply_within_object=False, reply_compression="none")
    assert_same_table(unchecked.to_table(), repetitive)
    assert unchecked.stats.bytes_returned > sizes and unchecked.stats.objects_over_object == 0


def test_over_object_sample_makes_plain_reads(store, repetitive):
    ds = store.write_dataset("rep", repetitive, rows_per_object=10_000)
    # The rule by default across a link; asked for here so that it runs on every backend.
    within = {"reply_within_object": True} if store.backend.runs_in_process else {}
    scanner = ds.scanner(columns=["word"], filter=F("id") >= 7, reply_compression="none", **within)
    assert_same_table(scanner.to_table(), repetitive.filter(F("id") >= 7).select(["word"]))
    stats = scanner.stats
    # The sample's reply, and those of the calls that started beside it before it decided.
    assert sample_admission(store.backend).admits(stats.objects_over_object - 1) and stats.objects_over_object >= 1
    assert stats.objects_read_plain == len(ds.manifest.partitions)
    assert "would pass its size" in stats.cost_model
    assert stats.bytes_returned <= ds.manifest.size_bytes


def test_aggregate_reply_over_object_is_done_at_the_client(store, repetitive):
    ds = store.write_dataset("rep", repetitive, rows_per_object=10_000)
    keys = ["id", "word"]  # one group per row: partials larger than the object
    expected = repetitive.group_by(keys).aggregate([("id", "count")])
    within = {"reply_within_object": True} if store.backend.runs_in_process else {}
    result = ds.group_by(keys).aggregate([("id", "count")], reply_compression="none", pushdown="auto", **within)
    assert_same_table(result.sort_by("id"), expected.sort_by("id"))
    assert ds.last_aggregate.stats.objects_pushed_back == len(ds.manifest.partitions)


def test_replies_in_process_may_pass_their_object(store, repetitive):
    """No link between an embedded store and its client: a reply larger than its
    object is kept by default (a push-back would throw storage's work away)."""
    if not store.backend.runs_in_process:
        pytest.skip("across a link the rule is on by default (the tests above)")
    ds = store.write_dataset("rep", repetitive, rows_per_object=10_000)
    keys = ["id", "word"]
    result = ds.group_by(keys).aggregate([("id", "count")], pushdown="auto")
    assert_same_table(result.sort_by("id"), repetitive.group_by(keys).aggregate([("id", "count")]).sort_by("id"))
    assert ds.last_aggregate.stats.objects_pushed_back == 0
    scanner = ds.scanner(columns=["word"], filter=F("id") >= 7)
    assert_same_table(scanner.to_table(), repetitive.filter(F("id") >= 7).select(["word"]))
    assert scanner.stats.objects_over_object == 0 and scanner.stats.bytes_returned > ds.manifest.size_bytes


def test_continuations_count_towards_the_object(store, monkeypatch):
    """Replies split by the node's reply limit: each part fits its object, their
    sum does not, so storage pushes the object back at the part that passes it."""
    if not store.backend.runs_in_process:
        pytest.skip("the OSDs' limits are set when the cluster starts")
    rng = random.Random(9)
    table = pa.table({"v": pa.array([rng.randrange(1 << 20) for _ in range(600_000)], pa.int64())})
    ds = store.write_dataset("split", table, rows_per_object=600_000, target_object_size=1 << 40)
    monkeypatch.setenv("SKYHOOK_MAX_REPLY_MB", "1")
    (size,) = [p.size_bytes for p in ds.manifest.partitions]
    assert size < table.nbytes and size > 1 << 20
    within = ds.scanner(pushdown=True, reply_compression="none", reply_within_object=True)
    assert_same_table(within.to_table(), table)
    assert within.stats.objects_over_object == 1 and within.stats.objects_read_plain == 1
    assert within.stats.bytes_abandoned >= 1 << 20  # the parts moved before it passed
    assert size < within.stats.bytes_returned <= size + within.stats.bytes_abandoned
    small = ds.scanner(
        columns=["v"], filter=F("v") < 1 << 18, pushdown=True, reply_compression="none", reply_within_object=True
    )
    assert_same_table(small.to_table(), table.filter(F("v") < 1 << 18))
    assert small.stats.continuations >= 1 and small.stats.objects_over_object == 0
    assert small.stats.bytes_returned <= size


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    from skyhook.dev.tpch import generate_lineitem

    return generate_lineitem(0.01, tmp_path_factory.mktemp("tpch"))


COUNTS = [
    "select count(*) from {}",
    "select count(*) from {} where l_shipmode not in ('MAIL', 'SHIP') and l_linenumber not in (1, 2)",
]


@pytest.mark.parametrize("sql", COUNTS)
def test_duckdb_count_moves_little(store, lineitem, sql):
    ds = store.write_dataset("lineitem", str(lineitem), rows_per_object=20_000)
    local = duckdb.read_parquet(str(lineitem))  # noqa: F841 - DuckDB finds it by name
    assert duckdb.sql(sql.format("ds")).fetchall() == duckdb.sql(sql.format("local")).fetchall()
    stats = ds.last_scan.stats
    assert ds.last_scan.columns == ["l_orderkey"]  # DuckDB asks for its first column's values
    if store.backend.runs_in_process and "where" not in sql:  # every row passes: read plainly
        assert stats.objects_read_plain == len(ds.manifest.partitions)
        return
    assert stats.objects_read_plain == 0
    # The differences of a sorted key: under 1 % of the Parquet objects as zstd (0.85 % here;
    # at SF 1 it was 25 % uncompressed, 1.02 % as zstd values); the embedded store's replies
    # cross no link, uncompressed: one key column, 22 % of the objects here.
    bound = {"zstd": 0.01, "none": 0.3}[ds.store.backend.reply_compression]
    assert stats.bytes_returned < bound * ds.manifest.size_bytes


def test_statistics_decide_compressed_replies_only_when_small(store, typed_table):
    ds = store.write_dataset("cost", typed_table, rows_per_object=500)
    everything = ds.scanner(reply_compression="zstd")  # decoded reply about the object's size
    assert_same_table(everything.to_table(), typed_table)
    if store.backend.runs_in_process:  # no row to drop, no link to spare: plain reads, nothing sampled
        assert "every row passes, in process: plain reads" in str(ds.explain(reply_compression="zstd"))
        assert everything.stats.objects_read_plain == len(ds.manifest.partitions)
    else:
        assert "zstd unknown: sampled object 0" in str(ds.explain(reply_compression="zstd"))
        # Plain reads for the objects whose calls had not started, and those pushed back.
        stats = everything.stats
        started = len(ds.manifest.partitions) - stats.objects_read_plain + stats.objects_over_object
        assert 1 <= started and sample_admission(store.backend).admits(started - 1)
    tiny = ds.scanner(columns=["i8"], reply_compression="zstd", pushdown_threshold=0.5)
    assert_same_table(tiny.to_table(), typed_table.select(["i8"]))
    assert tiny.stats.cost_model.startswith("statistics: every row passes") and tiny.stats.objects_read_plain == 0


def test_replies_decoded_beside_the_calls_keep_their_order_and_errors(store, monkeypatch):
    """Reply bodies are decoded on threads of their own: the rows still come
    in object order (as with use_threads=False), and a damaged body among
    many raises its error naming its object."""
    table = pa.table({"id": pa.array(range(6000), pa.int64()), "x": pa.array([i % 7 for i in range(6000)], pa.int32())})
    dataset = store.write_dataset("order", table, rows_per_object=500)
    expected = table.filter(F("x") > 2).select(["id"])
    for threads in (True, False):
        result = dataset.to_table(columns=["id"], filter=F("x") > 2, pushdown=True, use_threads=threads)
        assert result.equals(expected, check_metadata=False)  # same order, not only the same rows
    damaged = dataset.manifest.partitions[7].object_name
    call_many = store.backend.call_many

    def damaging(method: str, calls, admission=None):
        calls = list(calls)
        for (name, _), reply in zip(calls, call_many(method, calls, admission)):
            yield reply[:-100] if name == damaged else reply

    monkeypatch.setattr(store.backend, "call_many", damaging)
    with pytest.raises(CorruptReplyError, match=f"the reply of object {damaged} is malformed"):
        dataset.to_table(columns=["id"], filter=F("x") > 2, pushdown=True)


def test_a_selective_reply_joins_its_row_groups_into_one_batch(store):
    """A few rows from each of many row groups travel as one batch (up to the
    request's batch size): the client pays per batch it decodes, and zstd per buffer."""
    x = pa.array(range(40_000), pa.int64())
    table = pa.table({"x": x, "digit": pc.remainder(x, 10)})
    ds = store.write_dataset("groups", table, rows_per_object=40_000, row_group_size=1_000)
    names = [p.object_name for p in ds.manifest.partitions]
    filter = pc.field("digit") == 0  # 100 rows of each of 40 row groups
    for batch_size, batches in ((64 * 1024, [4_000]), (1_024, [1_000] * 4)):
        request = ScanRequest(
            filter=ds.scanner(filter=filter).execution.plan.filter_substrait,
            result=ResultOptions(compression="zstd", batch_size=batch_size),
        )
        (reply,) = store.backend.call_each(names, request, "scanning")
        assert [len(batch) for batch in pa.ipc.open_stream(reply.body)] == batches
        assert_same_table(reply.reader().read_all(), table.filter(filter))
