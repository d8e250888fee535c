"""Aggregates computed in storage as partials and merged at the client, against
pyarrow's group_by().aggregate() and DuckDB on the same data."""

from __future__ import annotations

import decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from substrait.gen.proto import plan_pb2

import skyhook
from skyhook.dev.tpch import Q1_SQL, Q6_SQL
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import PlanRequest
from support.aggregates import FUNCTIONS, aggregate_queries, assert_query_answers, assert_same_result
from support.tables import make_typed_table
from support.tpch_queries import assert_q1, q1, q6

F = pc.field
TABLE = make_typed_table(rows=4000, seed=3)


@pytest.fixture(scope="module")
def dataset(module_store):
    return module_store.write_dataset("t", TABLE, rows_per_object=900)


@pytest.mark.parametrize("keys", [[], ["s"], ["b", "i8"], ["d"]])
def test_every_function_matches_pyarrow(dataset, keys):
    aggregations = [(column, function) for function, columns in FUNCTIONS.items() for column in columns[:3]]
    filter = F("i32") > -500
    result = dataset.group_by(keys).aggregate(aggregations, filter=filter)
    assert_same_result(result, TABLE.filter(filter).group_by(keys, use_threads=False).aggregate(aggregations), keys)
    stats = dataset.last_aggregate.stats
    assert stats.objects_at_client == 0 and stats.partial_rows > 0


def test_no_rows_match(dataset):
    aggregations = [("i32", "sum"), ("i32", "count"), ("f64", "mean"), ("s", "count_distinct")]
    for keys in ([], ["s"]):
        expected = TABLE.slice(0, 0).group_by(keys).aggregate(aggregations)
        assert_same_result(dataset.group_by(keys).aggregate(aggregations, filter=F("id") < 0), expected, keys)


def test_computed_inputs_and_text_filter(dataset):
    amount = F("dec") * pa.scalar(decimal.Decimal("2.00"), pa.decimal128(12, 2))
    result = dataset.group_by("b").aggregate(
        [(amount, "sum", "twice"), ("i32", "mean")], filter="i8 > 0 and s != 'fig'"
    )
    local = TABLE.filter((F("i8") > 0) & (F("s") != "fig"))
    local = local.append_column(
        "twice", pc.multiply_checked(local.column("dec"), pa.scalar(decimal.Decimal("2.00"), pa.decimal128(12, 2)))
    )
    assert_same_result(
        result,
        local.group_by("b").aggregate([("twice", "sum"), ("i32", "mean")]).rename_columns(["b", "twice", "i32_mean"]),
        ["b"],
    )


@pytest.mark.parametrize("limits", [{"max_in_flight": 0}, {"max_slice_cpu_ns": 1}])
def test_pushback_leaves_results_unchanged(store, limits):
    dataset = store.write_dataset("t", TABLE, rows_per_object=900, row_group_size=200)
    aggregations = [("i32", "sum"), ("f64", "variance"), ("s", "count_distinct"), ("d", "first")]
    pushed = dataset.group_by("b").aggregate(aggregations, filter=F("i8") > -50, **limits)
    stats = dataset.last_aggregate.stats
    assert stats.objects_pushed_back == stats.objects_scanned == len(dataset.manifest.partitions)
    assert set(stats.where.values()) == {"pushed back"}
    assert_same_result(
        pushed, TABLE.filter(F("i8") > -50).group_by("b", use_threads=False).aggregate(aggregations), ["b"]
    )
    scanner = dataset.scanner(columns=["id", "s"], filter=F("i8") > -50, pushdown=True, **limits)
    assert scanner.to_table().equals(TABLE.filter(F("i8") > -50).select(["id", "s"]))
    assert scanner.stats.objects_pushed_back == len(dataset.manifest.partitions)


def test_filter_substrait_cannot_carry_is_completed_at_client(dataset):
    filter = F("id") > 1000.5  # an implicit safe cast: not expressible in Substrait
    result = dataset.aggregate([("i32", "sum"), ("f32", "max")], filter=filter)
    assert_same_result(result, TABLE.filter(filter).group_by([]).aggregate([("i32", "sum"), ("f32", "max")]), [])
    assert not dataset.last_aggregate.stats.filter_in_storage


def test_bad_aggregations(dataset):
    with pytest.raises(skyhook.UnknownColumnError, match="'nope'"):
        dataset.aggregate([("nope", "sum")])
    with pytest.raises(skyhook.UnknownColumnError, match="'nope'"):
        dataset.group_by("nope").aggregate([("i32", "sum")])
    with pytest.raises(skyhook.InvalidRequestError, match="unknown aggregate function 'median'"):
        dataset.aggregate([("i32", "median")])
    with pytest.raises(skyhook.TypeMismatchError, match="cannot aggregate"):
        dataset.aggregate([("s", "sum")])
    with pytest.raises(skyhook.InvalidRequestError, match="an aggregation is"):
        dataset.aggregate(["i32"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=aggregate_queries())
def test_random_group_bys_match_pyarrow(dataset, query):
    assert_query_answers(dataset, TABLE, query)


# TPC-H on generated lineitem, against DuckDB on the same Parquet file.
@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    from skyhook.dev.tpch import generate_lineitem

    return generate_lineitem(0.01, tmp_path_factory.mktemp("tpch"))


@pytest.mark.parametrize("pushdown", [True, "auto"])
def test_tpch_q1_and_q6_match_duckdb(lineitem, store, pushdown):
    ds = store.write_dataset("lineitem", str(lineitem), rows_per_object=15_000)
    result = q1(ds, pushdown=pushdown)
    # Every object's partials come from storage, the computed sums included.
    assert set(ds.last_aggregate.stats.where.values()) == {"storage"}
    assert ds.last_aggregate.stats.aggregate_in_storage and ds.last_aggregate.stats.storage_cpu_s > 0
    assert_q1(result, duckdb.sql(Q1_SQL.replace("lineitem", f"'{lineitem}'")).fetchall())

    revenue = q6(ds, pushdown=pushdown)
    ((expected,),) = duckdb.sql(Q6_SQL.replace("lineitem", f"'{lineitem}'")).fetchall()
    assert revenue.column("revenue")[0].as_py() == expected
    assert set(ds.last_aggregate.stats.where.values()) == {"storage"}
    assert pq.read_metadata(lineitem).num_rows == ds.manifest.num_rows


def test_explain_says_where_work_ran(dataset):
    text = str(dataset.analyze(filter="i8 > 0", keys=["b"], aggregations=[("i32", "mean"), ("s", "count_distinct")]))
    assert "sub-plan in storage, per object: partial sum, count" in text
    assert "i32_mean <- avg merge of p0/p1" in text and "count_distinct of the union" in text
    assert f"{len(dataset.manifest.partitions)} in storage" in text
    pushed = str(dataset.analyze(keys=["b"], aggregations=[("i32", "sum")], max_in_flight=0))
    assert f"{len(dataset.manifest.partitions)} in pushed back" in pushed
    scan = str(dataset.analyze(columns=["id"], filter=F("id") < 100))
    assert "pruned by statistics" in scan and "actual 2.50%" in scan


def execute_plan(dataset, plan: bytes):
    name = dataset.manifest.partitions[0].object_name
    return decode_reply(dataset.store.backend.call(name, PlanRequest.METHOD, PlanRequest(plan=plan).encode()))


@pytest.mark.parametrize("keys", [[], ["b"], ["s", "i8"]])
def test_storage_aggregates_decimal_arithmetic(dataset, keys):
    # Arrow 26's Substrait consumer crashed converting these aggregates (it types
    # decimal arithmetic as null); storage builds the aggregate itself.
    square, offset = F("dec") * F("dec"), F("dec") - pa.scalar(decimal.Decimal("1.5"), pa.decimal128(3, 1))
    aggregations = [
        (square, "sum", "square"),
        (offset, "mean", "offset_mean"),
        (offset, "min", "offset_min"),
        (square, "max", "square_max"),
        (offset, "count", "offset_count"),
        (offset, "stddev", "offset_stddev"),
    ]
    filter = F("i8") > 0
    execution = dataset.group_by(keys).execution(aggregations, filter=filter, pushdown=True)
    reply = execute_plan(dataset, execution.decomposition.sub_plan.plan)
    assert reply.code == 0 and reply.executed == "all"
    result = dataset.group_by(keys).aggregate(aggregations, filter=filter, pushdown=True)
    assert dataset.last_aggregate.stats.aggregate_in_storage
    local = TABLE.filter(filter)
    local = local.append_column("square", pc.multiply_checked(local.column("dec"), local.column("dec")))
    local = local.append_column("offset", pc.subtract_checked(local.column("dec"), decimal.Decimal("1.5")))
    expected = local.group_by(keys, use_threads=False).aggregate(
        [
            ("square", "sum"),
            ("offset", "mean"),
            ("offset", "min"),
            ("square", "max"),
            ("offset", "count"),
            ("offset", "stddev"),
        ]
    )
    assert_same_result(result, expected.rename_columns(keys + [a[2] for a in aggregations]), keys)


@pytest.mark.parametrize(
    "plan, message",
    [
        (b"\xff\xff\xff", "malformed Substrait plan"),
        (b"", "exactly one relation"),
        (bytes([0x1A, 0x02, 0x0A, 0x00]), "relation"),
    ],
)
def test_malformed_plans_are_refused(dataset, plan, message):
    reply = execute_plan(dataset, plan)
    assert reply.code == 1 and message in reply.message


def test_plan_of_another_shape_is_refused(dataset):
    execution = dataset.group_by("b").execution([("i32", "sum")])
    read_only = plan_pb2.Plan.FromString(execution.plan)
    aggregate = read_only.relations[0].root.input.aggregate
    read_only.relations[0].root.input.CopyFrom(aggregate.input.project.input)  # root: read
    reply = execute_plan(dataset, read_only.SerializeToString())
    assert reply.code == 1 and "expected [aggregate ->] project" in reply.message
