"""Queries over column objects: an aggregate runs its partials in storage on
the one object of a partition that holds every column it reads (reply
statistics prove it read that object only), and completes at the client over
zipped rows when its columns span objects; mixed datasets (split and unsplit
partitions) use storage wherever they can; counts read the smallest object
that suffices; explain() names the objects read and their bytes; Arrow's
dataset and DuckDB answer as pyarrow does. Both backends."""

from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skyhook
from skyhook import TransformTarget
from skyhook.catalog.manifest import Partition
from skyhook.dev.tpch import Q1_SQL, Q6_SQL
from skyhook.execution.column_objects import holding
from skyhook.execution.cost import bytes_read
from skyhook.plan.expressions import filter_columns
from support.aggregates import aggregate_queries, assert_query_answers, assert_same_result
from support.assertions import assert_same_table
from support.strategies import filters
from support.tables import make_typed_table
from support.tpch_queries import assert_q1, money, q1, q6
from support.transform_answers import by_id

F = pc.field
TABLE = make_typed_table(rows=3000, seed=5)
# The partition's object keeps id, i8, u16, f32, bin, tsz, all_null, tags.
LAYOUT = [["i32", "dec", "d", "s"], ["f64", "ts", "b"]]
DAY = pa.scalar(datetime.date(1997, 1, 1))
STORAGE, ZIPPED = "storage", "client (columns span objects: zipped)"


def split(store: skyhook.Store, name: str, table: pa.Table, layout: list[list[str]], rows: int) -> skyhook.Dataset:
    """Objects of rows rows, the first two partitions split into layout, the rest appended unsplit."""
    dataset = store.write_dataset(name, table.slice(0, 2 * rows), rows_per_object=rows)
    dataset.run_plan(dataset.plan_transform(TransformTarget(column_objects=layout)))
    return store.dataset(name).append(table.slice(2 * rows))


@pytest.fixture(scope="module")
def typed(module_store):
    dataset = split(module_store, "t", TABLE, LAYOUT, 1000)
    assert [len(p.object_names) for p in dataset.manifest.partitions] == [3, 3, 1]
    return dataset


def read_objects_bytes(dataset: skyhook.Dataset, needed: list[str]) -> int:
    """The bytes of the objects a read of needed opens: the one holding them (or the smallest), or all."""
    total = 0
    for partition in dataset.manifest.partitions:
        index = holding(partition, needed)
        sizes = [partition.size_bytes, *(column.size_bytes for column in partition.column_objects)]
        total += sizes[index] if index is not None else sum(sizes)
    return total


def placements(dataset: skyhook.Dataset) -> list[str]:
    where = dataset.last_aggregate.stats.where
    return [str(where[number]) for number in sorted(where)]


# (keys, aggregations, filter, where the split partitions' partials ran): the
# columns in one column object, in the partition's object, or spanning objects;
# null keys, empty results, every common type.
QUERIES = [
    (
        ["s"],
        [("i32", "sum"), ("dec", "sum"), ("d", "min"), ("i32", "mean"), ("s", "count_distinct"), ("i32", "first")],
        F("d") > DAY,
        STORAGE,
    ),
    (["i8"], [("u16", "sum"), ("f32", "max"), ("id", "count_distinct"), ("tsz", "max")], F("id") > 100, STORAGE),
    (["b"], [("f64", "variance"), ("ts", "max"), ("f64", "count")], F("f64") < 0.5, STORAGE),
    (["b", "s"], [("f64", "stddev"), ("i32", "sum"), ("id", "last")], (F("f64") < 0.5) & (F("i32") > 0), ZIPPED),
    ([], [("f64", "mean"), ("dec", "sum"), ("tsz", "min")], F("s") == "fig", ZIPPED),
    ([], [([], "count_all")], None, STORAGE),
    ([], [("i32", "sum"), ("d", "max")], F("i32") > 10**6, STORAGE),  # no row passes
    (["s"], [("i32", "sum")], F("i32") > 10**6, STORAGE),
    (["d"], [("i32", "count"), ("dec", "max")], F("s").is_null(), STORAGE),
    ([], [("bin", "count"), ("all_null", "sum"), ("tags", "count")], F("i32") > 0, ZIPPED),
]


@pytest.mark.parametrize("keys, aggregations, filter, where", QUERIES)
def test_aggregates_run_in_storage_on_the_object_holding_their_columns(typed, keys, aggregations, filter, where):
    expected = (
        (TABLE if filter is None else TABLE.filter(filter)).group_by(keys, use_threads=False).aggregate(aggregations)
    )
    assert_same_result(typed.group_by(keys).aggregate(aggregations, filter=filter), expected, keys)
    # The split partitions' partials where their columns are; the unsplit one's in storage.
    assert placements(typed) == [where, where, STORAGE]
    stats = typed.last_aggregate.stats
    assert stats.aggregate_in_storage == (where == STORAGE)
    if where == STORAGE:  # storage read (by its reply statistics) the objects holding the columns, no others
        needed = sorted({*keys, *(a[0] for a in aggregations if a[0]), *pc_columns(filter)})
        plans = 1 + len(typed.last_aggregate.decomposition.distinct_plans)  # each reads the objects once
        assert 0 < stats.bytes_read <= plans * read_objects_bytes(typed, needed)


def pc_columns(filter: pc.Expression | None) -> set[str]:
    return set() if filter is None else filter_columns(filter, TABLE.schema)


def test_the_partial_reads_the_small_object_only(typed):
    """f64's object is under a third of its partition: a partial in storage reads it alone."""
    typed.group_by("b").aggregate([("f64", "sum")], filter=F("f64") > 0)
    stats = typed.last_aggregate.stats
    small = read_objects_bytes(typed, ["b", "f64"])
    assert stats.aggregate_in_storage and stats.bytes_read <= small
    whole = sum(partition.stored_bytes for partition in typed.manifest.partitions[:2])
    assert small - typed.manifest.partitions[2].size_bytes < whole / 3
    # Only partials crossed: a row per group and object, not the 3,000 rows a zipped scan returns.
    assert stats.partial_rows <= 3 * 3 and stats.rows_scanned == TABLE.num_rows


@pytest.mark.parametrize("options, where", [({"max_in_flight": 0}, "pushed back"), ({"pushdown": False}, "client")])
def test_pushed_back_and_plain_reads_move_the_object_holding_the_columns(typed, options, where):
    """Work storage declines (or the user keeps at the client) reads the column object alone."""
    keys, aggregations, filter = ["b"], [("f64", "sum"), ("ts", "max")], F("f64") > 0
    expected = TABLE.filter(filter).group_by(keys, use_threads=False).aggregate(aggregations)
    assert_same_result(typed.group_by(keys).aggregate(aggregations, filter=filter, **options), expected, keys)
    assert placements(typed) == [where] * 3
    assert 0 < typed.last_aggregate.stats.bytes_returned <= read_objects_bytes(typed, ["b", "f64", "ts"])
    scanned = typed.to_table(columns=["id", "f64"], filter=filter, **options)
    assert_same_table(by_id(scanned), by_id(TABLE.filter(filter).select(["id", "f64"])))
    assert typed.last_scan.stats.objects_read_plain == 5  # two objects of each split partition, and the unsplit one
    assert typed.last_scan.stats.bytes_returned <= read_objects_bytes(typed, ["id", "f64"])


@settings(max_examples=25, deadline=None)
@given(query=aggregate_queries())
def test_random_aggregates_over_column_objects_match_pyarrow(typed, query):
    assert_query_answers(typed, TABLE, query)


@settings(max_examples=12, deadline=None)
@given(filter=filters(), columns=st.lists(st.sampled_from(TABLE.column_names), unique=True, max_size=4))
def test_random_scans_through_skyhook_and_arrow_match_pyarrow(typed, filter, columns):
    columns = ["id", *[name for name in columns if name != "id"]]
    expected = pads.dataset(TABLE).to_table(columns=columns, filter=filter)
    assert_same_table(by_id(typed.to_table(columns=columns, filter=filter)), by_id(expected))
    arrow = pads.Scanner.from_dataset(typed, columns=columns, filter=filter)  # Arrow binds the filter first
    assert_same_table(by_id(arrow.to_table()), by_id(expected))
    assert typed.count_rows(filter=filter) == expected.num_rows


def test_counts_read_the_smallest_object_that_suffices(typed):
    for filter in [F("i32") > 0, F("f64").is_nan(), (F("i32") > 0) & (F("f64") < 1), F("id") > 10**6]:
        assert typed.count_rows(filter=filter) == TABLE.filter(filter).num_rows
        needed = sorted(pc_columns(filter))
        assert typed.last_scan.stats.bytes_read <= read_objects_bytes(typed, needed)
    assert typed.to_table(columns=[]).num_rows == TABLE.num_rows  # no column: the smallest object
    smallest = sum(min(o.size_bytes for o in p.objects(TABLE.column_names)) for p in typed.manifest.partitions)
    assert typed.last_scan.stats.bytes_read <= smallest
    assert typed.count_rows() == TABLE.num_rows


def test_explain_names_the_objects_read_and_their_bytes(typed):
    partitions = typed.manifest.partitions
    names = TABLE.column_names
    one = str(typed.explain(columns=["s"], filter=F("i32") > 0))
    for partition in partitions[:2]:
        assert (
            f"partition {partition.number}: {partition.column_objects[0].object_name} ['i32', 's']: one object" in one
        )
    assert f"partition 2: {partitions[2].object_name} ['i32', 's']: one object holds every column read" in one
    assert bytes_read(partitions[0], ["i32", "s"]) == partitions[0].column_objects[0].size_bytes  # that object only
    expected = sum(bytes_read(partition, ["i32", "s"]) for partition in partitions)
    assert f"bytes to read in storage: about {expected:,} (of the objects read" in one
    assert expected < sum(partition.stored_bytes for partition in partitions) / 2
    spanning = str(typed.explain(columns=["id", "f64"], filter=F("i32") > 0))
    objects = partitions[0].objects(names)
    assert (
        f"partition 0: {objects[0].object_name} ['id'], {objects[1].object_name} ['i32'], "
        f"{objects[2].object_name} ['f64']: columns span objects" in spanning
    )
    aggregate = str(typed.analyze(keys=["b"], aggregations=[("f64", "sum"), ("id", "count")], filter=F("i32") > 0))
    assert "columns span objects: their columns zipped by row, partial aggregates at the client" in aggregate
    assert f"2 in {ZIPPED}, 1 in storage" in aggregate
    stored = str(typed.analyze(keys=["s"], aggregations=[("i32", "sum")]))
    assert "one object holds every column read: partial aggregates in storage" in stored and "3 in storage" in stored


def test_arrow_dataset_and_duckdb_over_column_objects(typed):
    local = TABLE  # noqa: F841 - DuckDB finds both by name
    ds = typed  # noqa: F841
    for query in [
        "SELECT id, s, i32 FROM {} WHERE f64 < 0.5 ORDER BY id",  # filter on one object, columns of others
        "SELECT id, ts, dec FROM {} WHERE i32 > 200 AND b ORDER BY id",  # filter spanning objects
        "SELECT s, count(*) AS n, sum(i32) AS total, min(d) AS first FROM {} WHERE d >= DATE '1997-01-01' "
        "GROUP BY s ORDER BY s NULLS FIRST",
        "SELECT b, max(f32) AS top, sum(u16) AS total FROM {} WHERE i32 > 0 GROUP BY b ORDER BY b NULLS FIRST",
        "SELECT count(*) FROM {} WHERE i32 > 0",
        "SELECT count(*) FROM {} WHERE i32 > 1000000",
    ]:
        assert duckdb.sql(query.format("ds")).fetchall() == duckdb.sql(query.format("local")).fetchall(), query
    for columns, filter in [
        (["id", "s"], F("f64") < 0.5),
        (["id", "f64", "tags"], F("i32") > 200),
        (["id", "i32"], (F("i32") > 0) & (F("b") == True)),  # noqa: E712 - an Arrow expression
        (["id"], F("s") == "no such word"),
        (["id", "d", "ts"], None),
    ]:
        arrow = pads.Scanner.from_dataset(typed, columns=columns, filter=filter).to_table()
        expected = pads.dataset(TABLE).to_table(columns=columns, filter=filter)
        assert_same_table(by_id(arrow), by_id(expected))
        assert pads.Scanner.from_dataset(typed, filter=filter).count_rows() == expected.num_rows


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory) -> pa.Table:
    from skyhook.dev.tpch import generate_lineitem

    return generate_lineitem(0.01, tmp_path_factory.mktemp("tpch"))


def test_tpch_q1_and_q6_over_column_objects(store, lineitem):
    """Q6's columns in one small object: its partials in storage, on that
    object; Q1's span objects: completed at the client for the split
    partitions, in storage for the unsplit one. DuckDB's answers."""
    layout = [["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"], ["l_returnflag", "l_linestatus", "l_tax"]]
    ds = split(store, "lineitem", pq.read_table(lineitem), layout, 20_000)
    assert pq.read_metadata(lineitem).num_rows == ds.manifest.num_rows
    ((revenue,),) = duckdb.sql(Q6_SQL.replace("lineitem", f"'{lineitem}'")).fetchall()
    assert q6(ds).column("revenue")[0].as_py() == revenue
    assert placements(ds) == [STORAGE] * 3
    stats = ds.last_aggregate.stats
    split_partitions: list[Partition] = list(ds.manifest.partitions[:2])
    small = sum(p.column_objects[0].size_bytes for p in split_partitions) + ds.manifest.partitions[2].size_bytes
    assert stats.bytes_read <= small
    assert (
        sum(p.column_objects[0].size_bytes for p in split_partitions)
        < sum(p.stored_bytes for p in split_partitions) / 2
    )
    assert_q1(q1(ds), duckdb.sql(Q1_SQL.replace("lineitem", f"'{lineitem}'")).fetchall())
    assert placements(ds) == [ZIPPED, ZIPPED, STORAGE]
    # Grouped, in the second column object.
    taxed = F("l_tax") > money("0.02")
    flags = ds.group_by(["l_returnflag", "l_linestatus"]).aggregate([("l_tax", "sum"), ([], "count_all")], filter=taxed)
    assert placements(ds) == [STORAGE] * 3
    local = ds.manifest.schema  # the stored types (Parquet's string views as strings)
    expected = pq.read_table(lineitem, columns=["l_returnflag", "l_linestatus", "l_tax"])
    expected = expected.cast(pa.schema([local.field(name) for name in expected.column_names])).filter(taxed)
    expected = expected.group_by(["l_returnflag", "l_linestatus"], use_threads=False).aggregate(
        [("l_tax", "sum"), ([], "count_all")]
    )
    assert_same_result(flags, expected, ["l_returnflag", "l_linestatus"])
