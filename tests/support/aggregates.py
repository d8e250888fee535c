"""Aggregations every function and key is tested with, the hypothesis strategy
of random aggregate queries, and comparison of aggregate results."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import strategies as st

import skyhook
from support.strategies import filters

NUMERIC = ["i8", "i32", "u16", "f32", "f64", "dec"]
ORDERED = NUMERIC + ["s", "d", "ts", "b", "id"]
FUNCTIONS = {
    "count": ORDERED + ["bin", "all_null"],
    "count_distinct": ["i8", "s", "d", "b", "dec"],
    "sum": NUMERIC + ["all_null"],
    "mean": NUMERIC,
    "variance": NUMERIC,
    "stddev": NUMERIC,
    "min": ORDERED,
    "max": ORDERED,
    "first": ORDERED,
    "last": ORDERED,
}
KEYS = ["s", "b", "i8", "d"]


def assert_same_result(actual: pa.Table, expected: pa.Table, keys: list[str]) -> None:
    assert actual.schema == expected.schema
    order = [(key, "ascending") for key in keys]
    if keys:
        actual, expected = actual.sort_by(order), expected.sort_by(order)
    assert actual.num_rows == expected.num_rows
    for name in expected.column_names:
        left, right = actual.column(name).to_pylist(), expected.column(name).to_pylist()
        if pa.types.is_floating(expected.schema.field(name).type):
            for a, b in zip(left, right):
                assert (
                    (a is None and b is None)
                    or (math.isnan(a) and math.isnan(b))
                    or a == pytest.approx(b, rel=1e-9, abs=1e-9)
                ), name
        else:
            assert left == right, name


def assert_query_answers(dataset: skyhook.Dataset, table: pa.Table, query: tuple) -> None:
    """An aggregate_queries() query on dataset answers as pyarrow on table does (or fails as it does)."""
    keys, aggregations, filter = query
    local = table if filter is None else table.filter(filter)
    try:
        expected = local.group_by(keys, use_threads=False).aggregate(aggregations)
    except pa.ArrowNotImplementedError:  # pyarrow cannot either (e.g. first of decimals, no keys)
        with pytest.raises(skyhook.TypeMismatchError):
            dataset.group_by(keys).aggregate(aggregations, filter=filter)
        return
    assert_same_result(dataset.group_by(keys).aggregate(aggregations, filter=filter), expected, keys)


@st.composite
def aggregate_queries(draw):
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
    functions = draw(st.lists(st.sampled_from(sorted(FUNCTIONS)), min_size=1, max_size=4))
    aggregations = [(draw(st.sampled_from(FUNCTIONS[f])), f) for f in functions]
    return keys, list(dict.fromkeys(aggregations)), draw(st.one_of(st.none(), filters()))
