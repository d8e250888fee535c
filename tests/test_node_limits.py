"""A node bounds every call whatever the client asks: time (the call answers
with what it has and the client continues), memory (the call is pushed back
and the client does the work), reply size (split, or refused past the client's
own limit), batch size. Results stay equal to pyarrow's.

The embedded store reads the limits from this process's environment at each
call; the Ceph OSDs from theirs (tests/conftest.py starts them with limits)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
import pytest

import skyhook
from skyhook.dev.cluster import LocalCluster
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import PlanRequest, ScanRequest
from skyhook.rpc.result_options import ResultOptions
from support.assertions import assert_same_table
from support.stores import BACKENDS, CEPH_NODE_LIMITS

F = pc.field
ROWS = 1_500_000


@pytest.fixture(scope="module")
def big_table() -> pa.Table:
    rng = random.Random(3)
    return pa.table(
        {
            "k": pa.array(range(ROWS), pa.int64()),
            "g": pa.array([rng.randrange(12) for _ in range(ROWS)], pa.int8()),
            "v": pa.array([rng.random() * 100 for _ in range(ROWS)], pa.float64()),
            "s": pa.array([f"s{i % 1000}" for i in range(ROWS)]),
        }
    )


@pytest.fixture
def one_object(store, big_table):
    """One object of all rows (16 row groups), so only continuations can split the work."""
    return store.write_dataset(
        "big", big_table, rows_per_object=ROWS, target_object_size=1 << 40, row_group_size=100_000
    )


@pytest.fixture
def limits(monkeypatch):
    """Sets node limits for the embedded store (this process is its node)."""

    def set_limits(**values: int) -> None:
        for name, value in values.items():
            monkeypatch.setenv(f"SKYHOOK_{name.upper()}", str(value))

    return set_limits


@pytest.fixture(scope="module")
def lone_osd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of one fresh OSD, for measuring what one call adds to its peak
    memory: the session's OSDs carry the whole suite's history (peaks of GBs
    set by earlier tests, RocksDB and BlueStore work in the background)."""
    if "ceph" not in BACKENDS:
        pytest.skip("SKYHOOK_TEST_CEPH=0")
    directory = tmp_path_factory.mktemp("lone") / "cluster"
    cluster = LocalCluster(directory)
    cluster.up(osds=1, node_limits=CEPH_NODE_LIMITS, worker=False)
    yield cluster
    cluster.down()
    shutil.rmtree(directory, ignore_errors=True)


def embedded_only(dataset) -> None:
    if not dataset.store.backend.runs_in_process:
        pytest.skip("the OSDs' limits are set when the cluster starts")


def test_slow_scan_finishes_through_continuations(one_object, big_table, limits):
    embedded_only(one_object)
    limits(max_call_ms=20)
    filter = (F("v") < 1.0) & (F("g") != 3)
    scanner = one_object.scanner(columns=["k", "s"], filter=filter, batch_size=1, pushdown=True)
    assert_same_table(scanner.to_table(), big_table.filter(filter).select(["k", "s"]))
    assert scanner.stats.continuations >= 2
    assert scanner.stats.rows_scanned == ROWS


@pytest.mark.parametrize(
    "function", ["sum", "mean", "stddev", "count", "min", "max", "first", "last", "count_distinct"]
)
def test_aggregates_merge_continued_partials(one_object, big_table, limits, function):
    embedded_only(one_object)
    limits(max_call_ms=20)
    column = "s" if function in ("first", "last", "count_distinct") else "v"
    filter = F("v") > 10.0
    result = one_object.group_by("g").aggregate([(column, function)], filter=filter).sort_by("g")
    expected = big_table.filter(filter).group_by("g", use_threads=False).aggregate([(column, function)]).sort_by("g")
    assert result.schema == expected.schema
    if function in ("sum", "mean", "stddev"):  # floating sums depend on their order
        assert pc.max(pc.abs(pc.subtract(result.column(0), expected.column(0)))).as_py() < 1e-6
        assert result.column("g").equals(expected.column("g"))
    else:
        assert result.equals(expected)


def test_continued_plan_skips_zones_the_filter_excludes(one_object, big_table, limits):
    embedded_only(one_object)
    limits(max_call_ms=20)
    filter = (F("k") >= 250_000) & (F("k") < 1_250_000) & (F("v") > 10.0)
    result = one_object.group_by("g").aggregate([("v", "count"), ("s", "max")], filter=filter).sort_by("g")
    expected = big_table.filter(filter).group_by("g", use_threads=False).aggregate([("v", "count"), ("s", "max")])
    assert result.equals(expected.sort_by("g"))
    stats = one_object.last_aggregate.stats
    assert stats.zones_skipped >= 4  # row groups 0-1 and 13-14 of 15
    assert stats.rows_scanned <= 1_100_000 and set(stats.where.values()) == {"storage"}


def test_reply_split_at_the_node_limit(one_object, big_table, limits):
    embedded_only(one_object)
    limits(max_reply_mb=4)
    scanner = one_object.scanner(columns=["k", "v", "s"], pushdown=True, reply_compression="none")
    assert_same_table(scanner.to_table(), big_table.select(["k", "v", "s"]))
    assert scanner.stats.continuations >= 5  # ~45 MB of results in <= 4 MiB replies


def test_client_limit_still_refuses(one_object):
    with pytest.raises(skyhook.ResultTooLargeError, match="request's limit"):
        one_object.to_table(columns=["k", "v"], pushdown=True, max_result_bytes=1 << 20)


def test_memory_limit_pushes_the_work_back(one_object, big_table, limits):
    embedded_only(one_object)
    limits(max_call_memory_mb=1)
    scanner = one_object.scanner(columns=["k"], filter=F("v") < 5.0, pushdown=True)
    assert_same_table(scanner.to_table(), big_table.filter(F("v") < 5.0).select(["k"]))
    assert scanner.stats.objects_pushed_back == 1
    # A group-by on a unique key: Acero's hash table passes the limit.
    result = one_object.group_by("k").aggregate([("v", "sum")])
    assert result.sort_by("k").equals(big_table.group_by("k").aggregate([("v", "sum")]).sort_by("k"))


def test_calls_over_the_node_memory_limit_are_pushed_back(one_object, big_table, limits):
    """The node's calls share one bound (each within its own): a call that
    would take the node past it is pushed back, and the client does the work."""
    embedded_only(one_object)
    limits(max_node_memory_mb=1)
    scanner = one_object.scanner(columns=["k"], filter=F("v") < 5.0, pushdown=True)
    assert_same_table(scanner.to_table(), big_table.filter(F("v") < 5.0).select(["k"]))
    assert scanner.stats.objects_pushed_back == 1
    result = one_object.group_by("g").aggregate([("k", "sum")], pushdown=True)
    assert result.sort_by("g").equals(big_table.group_by("g").aggregate([("k", "sum")]).sort_by("g"))
    assert set(one_object.last_aggregate.stats.where.values()) == {"pushed back"}
    with pytest.raises(skyhook.LimitExceededError, match="node's calls together need more than its limit of 1 MiB"):
        one_object.store.write_dataset("described", big_table, rows_per_object=ROWS, target_object_size=1 << 40)


def test_describe_over_the_memory_limit_is_a_clear_error(store, big_table, limits):
    if not store.backend.runs_in_process:
        pytest.skip("the OSDs' limits are set when the cluster starts")
    limits(max_call_memory_mb=1)
    with pytest.raises(skyhook.LimitExceededError, match="1 MiB of memory"):
        store.write_dataset("described", big_table, rows_per_object=ROWS, target_object_size=1 << 40)


def test_minimum_batch_size_and_limits_in_every_reply(one_object):
    name = one_object.manifest.partitions[0].object_name
    reply = decode_reply(
        one_object.store.backend.call(name, "scan", ScanRequest(result=ResultOptions(batch_size=1)).encode())
    )
    reply.raise_for_status("scan")
    assert reply.statistics["limit_min_batch_size"] >= 1
    sizes = [batch.num_rows for batch in reply.reader()]
    minimum = reply.statistics["limit_min_batch_size"]
    assert max(sizes) == minimum  # batch_size 1 was raised to it; row groups end some batches
    assert len(sizes) <= ROWS // minimum + 16
    for name in ("limit_call_ms", "limit_call_memory_bytes", "limit_node_memory_bytes", "limit_reply_bytes"):
        assert reply.statistics[name] > 0


def test_continuation_from_a_row(one_object, big_table):
    """start_row resumes anywhere, inside a row group too."""
    name = one_object.manifest.partitions[0].object_name
    for start in (0, 99_999, 100_000, 733_333, ROWS - 1, ROWS):
        reply = decode_reply(
            one_object.store.backend.call(name, "scan", ScanRequest(result=ResultOptions(start_row=start)).encode())
        )
        reply.raise_for_status("scan")
        table = reply.reader().read_all()
        assert table.equals(big_table.slice(start, table.num_rows)), start
        # A node limit may end the reply early (on Ceph, its reply limit): it says where.
        assert (reply.resume_row or ROWS) == start + table.num_rows


# -- on the OSDs, with the limits of support.stores.CEPH_NODE_LIMITS -----------


def _osd_status(cluster) -> dict[int, tuple[int, int]]:
    """PID and peak resident memory (VmHWM, KiB) of each OSD."""
    status = {}
    for osd in cluster.osd_ids():
        pid = cluster.pid(f"osd.{osd}")
        peak = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmHWM"))
        status[osd] = (pid, peak)
    return status


def _all_up(cluster) -> bool:
    return all(state == "up" for state in cluster.status()["osds"].values())


def test_osds_finish_a_scan_designed_to_be_slow(ceph_cluster, ceph_store):
    import numpy as np

    rows = 33_554_432  # 32 Mi int8 rows in one object
    values = np.random.default_rng(5).integers(-128, 128, rows, dtype=np.int8)
    table = pa.table({"x": pa.array(values)})
    dataset = ceph_store.write_dataset(
        "slow", table, rows_per_object=rows, target_object_size=1 << 40, row_group_size=1 << 22
    )
    before = _osd_status(ceph_cluster)
    # An OR with a null test (no IN list): the pre-filter on stored integers leaves it to
    # Arrow, one-row slice by slice.
    filter = (F("x") == 17) | (F("x") == 18) | F("x").is_null()
    scanner = dataset.scanner(filter=filter, batch_size=1, pushdown=True)
    result = scanner.to_table()
    assert result.num_rows == int(np.isin(values, [17, 18]).sum())
    assert result.equals(table.filter(filter))
    assert scanner.stats.continuations >= 1  # batch_size 1 took several calls of <= 3 s
    assert {osd: pid for osd, (pid, _) in _osd_status(ceph_cluster).items()} == {
        osd: pid for osd, (pid, _) in before.items()
    }
    assert _all_up(ceph_cluster)


def test_osds_split_a_reply_larger_than_their_limit(lone_osd):
    import numpy as np

    rows = 12_000_000
    table = pa.table(
        {
            "k": pa.array(np.arange(rows, dtype=np.int64)),
            "c": pa.array(np.random.default_rng(2).integers(0, 50, rows, dtype=np.int32)),
        }
    )
    with skyhook.connect(lone_osd.uri) as store:
        # zstd: the one object must stay under RADOS's object size limit (lz4, the default, would not)
        dataset = store.write_dataset(
            "wide", table, rows_per_object=rows, target_object_size=1 << 40, compression="zstd"
        )
        before = _osd_status(lone_osd)
        scanner = dataset.scanner(pushdown=True, reply_compression="none")  # zstd would fit one reply
        assert_same_table(scanner.to_table(), table)  # 144 MB of results
    replies = scanner.stats.continuations + 1
    assert replies >= 2 and scanner.stats.bytes_returned <= replies * (32 << 20)
    after = _osd_status(lone_osd)
    for osd, (pid, peak) in after.items():
        assert pid == before[osd][0]
        # Peak memory grew by less than one call's memory limit and two replies.
        assert (peak - before[osd][1]) * 1024 < (512 + 2 * 32) << 20
    assert _all_up(lone_osd)


def test_costly_expressions_get_smaller_slices(one_object, big_table, limits):
    """Limits are checked between slices: a slice of 65,536 rows under 2,000 IN
    values would run for seconds, so storage slices by rows x expression nodes."""
    embedded_only(one_object)
    limits(max_call_ms=100)
    filter = F("v").isin([float(i) for i in range(1000)]) | F("k").isin(list(range(-1000, 0)))
    request = ScanRequest(
        filter=bytes(pas.serialize_expressions([filter], ["f"], big_table.schema)),
        result=ResultOptions(batch_size=65_536),
    )
    name = one_object.manifest.partitions[0].object_name
    reply = decode_reply(one_object.store.backend.call(name, "scan", request.encode()))
    reply.raise_for_status("scan")
    assert 0 < reply.resume_row < 65_536 and reply.statistics["rows_scanned"] == reply.resume_row
    assert reply.reader().read_all().equals(big_table.slice(0, reply.resume_row).filter(filter))


def test_plan_time_limit_counts_the_plans_work(one_object, big_table, limits):
    """Acero decodes ahead of its work; the limit must still stop a plan whose
    work per slice is expensive (a long IN list), and its partials stay right."""
    embedded_only(one_object)
    limits(max_call_ms=100)
    filter = F("v").isin([float(i) for i in range(1000)]) | (F("g") == 3)
    execution = one_object.group_by("g").execution([("k", "count")], filter=filter)
    name = one_object.manifest.partitions[0].object_name
    reply = decode_reply(
        one_object.store.backend.call(
            name,
            PlanRequest.METHOD,
            PlanRequest(plan=execution.decomposition.sub_plan.plan).encode(),
        )
    )
    reply.raise_for_status("execute_plan")
    assert 0 < reply.resume_row < ROWS and reply.statistics["rows_scanned"] == reply.resume_row
    result = one_object.group_by("g").aggregate([("k", "count")], filter=filter).sort_by("g")
    assert result.equals(big_table.filter(filter).group_by("g").aggregate([("k", "count")]).sort_by("g"))
