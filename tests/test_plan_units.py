"""Decomposition and merge without a backend: a table split into pieces (the
objects), each piece's sub-plans run here on Acero as storage would run them,
the partials merged, against pyarrow's group_by().aggregate() on the whole table."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import skyhook
from skyhook.plan.aggregate import AggregateQuery, SubPlan, decompose, full_plan
from skyhook.plan.aggregate_functions import AGGREGATE_FUNCTIONS, function_of_measure
from skyhook.plan.expressions import to_substrait
from skyhook.plan.merge import ORDER, merge
from support.aggregates import FUNCTIONS, KEYS, aggregate_queries, assert_same_result
from support.tables import make_typed_table

F = pc.field
TABLE = make_typed_table(rows=1200, seed=23)


def split(table: pa.Table, cuts: list[int]) -> list[pa.Table]:
    """Pieces between sorted cut positions; equal cuts make empty pieces."""
    bounds = [0, *sorted(cuts), table.num_rows]
    return [table.slice(start, end - start) for start, end in zip(bounds, bounds[1:])]


def decomposed(
    table: pa.Table,
    keys: list[str],
    aggregations: list[tuple[str, str]],
    filter: pc.Expression | None,
    pieces: list[pa.Table],
    in_storage: list[bool],
) -> pa.Table:
    """The query over pieces as the client runs it: per piece, the sub-plan on
    Acero (a reply that executed all) or its input rows aggregated with the
    sub-plan's own functions (executed filter only, or pushed back). A filter
    Substrait cannot carry faithfully is applied to the pieces instead."""
    query = AggregateQuery.make(table.schema, keys, aggregations, filter)
    output_schema = query.output_schema(table.schema)
    in_plan = filter is None or to_substrait([filter], ["filter"], table.schema, is_filter=True) is not None
    decomposition = decompose(full_plan(table.schema, query, output_schema, in_plan), keys, table.schema)
    # A client's read filters its rows before the input plan projects them.
    filtered = pieces if filter is None else [piece.filter(filter) for piece in pieces]
    if not in_plan:
        pieces = filtered

    def run(plan: bytes, piece: pa.Table) -> pa.Table:
        provider = lambda names, schema: piece.select(schema.names).cast(schema)  # noqa: E731
        return pas.run_query(pa.py_buffer(plan), table_provider=provider, use_threads=False).read_all()

    def everywhere(sub: SubPlan) -> pa.Table:
        tables = []
        for number, (piece, read, storage) in enumerate(zip(pieces, filtered, in_storage)):
            result = run(sub.plan, piece) if storage else sub.aggregate_rows(run(decomposition.input_plan, read))
            tables.append(result.append_column(ORDER, pa.array([number] * result.num_rows, pa.int64())))
        return pa.concat_tables(tables)

    distinct = [everywhere(sub) for sub in decomposition.distinct_plans]
    return merge(query, decomposition, everywhere(decomposition.sub_plan), distinct, output_schema)


def expected(table: pa.Table, keys: list[str], aggregations: list, filter: pc.Expression | None) -> pa.Table:
    local = table if filter is None else table.filter(filter)
    return local.group_by(keys, use_threads=False).aggregate(aggregations)


EVERY_FUNCTION = [(column, function) for function, columns in FUNCTIONS.items() for column in columns]


def supported(keys: list[str], aggregations: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The aggregations pyarrow computes with these keys (first of decimals needs keys)."""

    def works(aggregation: tuple[str, str]) -> bool:
        try:
            expected(TABLE.slice(0, 0), keys, [aggregation], None)
        except pa.ArrowNotImplementedError:
            return False
        return True

    return [aggregation for aggregation in aggregations if works(aggregation)]


@pytest.mark.parametrize("keys", [[], ["s"], ["b", "i8"], ["d"]])
@pytest.mark.parametrize(
    "cuts", [[], [0, 0, 600], [1, 2, 3, 1199], [300, 300, 900, 1200]], ids=["one", "empty first", "tiny", "empty"]
)
def test_every_function_over_pieces(keys, cuts):
    pieces, aggregations = split(TABLE, cuts), supported(keys, EVERY_FUNCTION)
    for in_storage in ([True] * len(pieces), [i % 2 == 0 for i in range(len(pieces))]):
        result = decomposed(TABLE, keys, aggregations, F("i32") > -500, pieces, in_storage)
        assert_same_result(result, expected(TABLE, keys, aggregations, F("i32") > -500), keys)


@pytest.mark.parametrize("keys", [[], ["s"]])
def test_no_rows(keys):
    aggregations = [("i32", "sum"), ("f64", "mean"), ("f32", "variance"), ("s", "count_distinct"), ("d", "min")]
    pieces = split(TABLE, [400, 800])
    result = decomposed(TABLE, keys, aggregations, F("id") < 0, pieces, [True, False, True])
    assert_same_result(result, expected(TABLE, keys, aggregations, F("id") < 0), keys)
    empty = TABLE.slice(0, 0)
    assert_same_result(
        decomposed(empty, keys, aggregations, None, [empty, empty], [True, False]),
        expected(empty, keys, aggregations, None),
        keys,
    )


def test_all_null_groups_and_values():
    table = pa.table(
        {
            "k": pa.array([None, None, "a", None, "a"], pa.string()),
            "v": pa.array([None, 1.5, None, None, -2.0], pa.float64()),
            "n": pa.array([None] * 5, pa.int64()),
        }
    )
    aggregations = [
        (column, function)
        for column in ("v", "n")
        for function in ("count", "sum", "mean", "variance", "stddev", "min", "max", "first", "last")
    ] + [("v", "count_distinct")]
    result = decomposed(table, ["k"], aggregations, None, split(table, [1, 1, 3]), [True, False, True, False])
    assert_same_result(result, expected(table, ["k"], aggregations, None), ["k"])


@st.composite
def splits(draw, rows: int) -> tuple[list[int], list[bool]]:
    cuts = draw(st.lists(st.integers(0, rows), max_size=6))
    return cuts, draw(st.lists(st.booleans(), min_size=len(cuts) + 1, max_size=len(cuts) + 1))


@settings(max_examples=40, deadline=None)
@given(query=aggregate_queries(), pieces=splits(TABLE.num_rows))
@example(query=(["s"], [("i8", "count")], F("i32").isin(pa.array([-137, None], pa.int32()))), pieces=([], [False]))
def test_random_queries_over_random_pieces(query, pieces):
    keys, aggregations, filter = query
    cuts, in_storage = pieces
    try:
        answer = expected(TABLE, keys, aggregations, filter)
    except pa.ArrowNotImplementedError:  # pyarrow cannot either (e.g. first of decimals, no keys)
        with pytest.raises(skyhook.TypeMismatchError):
            AggregateQuery.make(TABLE.schema, keys, aggregations, filter)
        return
    assert_same_result(decomposed(TABLE, keys, aggregations, filter, split(TABLE, cuts), in_storage), answer, keys)


def test_merge_is_independent_of_piece_order_for_order_free_functions():
    """Shuffled rows and pieces change nothing but first/last."""
    order_free = [(c, f) for c, f in EVERY_FUNCTION if f not in ("first", "last")]
    shuffled = TABLE.take(random.Random(5).sample(range(TABLE.num_rows), TABLE.num_rows))
    result = decomposed(shuffled, KEYS[:1], order_free, None, split(shuffled, [100, 700]), [True, False, True])
    assert_same_result(result, expected(TABLE, KEYS[:1], order_free, None), KEYS[:1])


def test_registry_is_pyarrow_and_substrait_consistent():
    for name, function in AGGREGATE_FUNCTIONS.items():
        assert pc.get_function(f"hash_{name}").kind == "hash_aggregate"
        assert function_of_measure(function.measure.substrait_name, function.distinct) is function
        assert function.states
        for state in function.states:
            assert pc.get_function(f"hash_{state.merge}").kind == "hash_aggregate"
            if state.partial is not None:
                assert pc.get_function(f"hash_{state.partial.pyarrow_name}").kind == "hash_aggregate"
