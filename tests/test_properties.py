"""Randomly generated filters and projections: storage always agrees with pyarrow."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import BACKENDS, assert_same_table, make_typed_table, open_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import expected

TABLE = make_typed_table(rows=1500, seed=11)
COMPARABLE = ["id", "i8", "i32", "u16", "f32", "f64", "dec", "s", "d", "ts", "tsz", "b", "all_null"]
COMPARISONS = [
    lambda a, b: a == b,
    lambda a, b: a != b,
    lambda a, b: a < b,
    lambda a, b: a <= b,
    lambda a, b: a > b,
    lambda a, b: a >= b,
]


@st.composite
def comparisons(draw) -> pc.Expression:
    name = draw(st.sampled_from(COMPARABLE))
    column = TABLE.column(name)
    value = column[draw(st.integers(0, TABLE.num_rows - 1))]
    if not value.is_valid or draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([pc.field(name).is_null(), pc.field(name).is_valid()]))
    if draw(st.booleans()) and name not in ("b", "all_null"):
        others = [column[draw(st.integers(0, TABLE.num_rows - 1))] for _ in range(draw(st.integers(1, 4)))]
        values = pa.array([v.as_py() for v in [value, *others]], column.type)
        return pc.field(name).isin(values)
    return draw(st.sampled_from(COMPARISONS))(pc.field(name), pc.scalar(value))


@st.composite
def filters(draw, depth: int = 0) -> pc.Expression:
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(comparisons())
    left, right = draw(filters(depth + 1)), draw(filters(depth + 1))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    return left & right if kind == "and" else left | right if kind == "or" else ~left


@pytest.fixture(scope="module", params=BACKENDS)
def dataset(request, tmp_path_factory):
    store = open_store(request.param, tmp_path_factory.mktemp("prop"), request)
    return store.write_dataset("t", TABLE, rows_per_object=400)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters(), columns=st.lists(st.sampled_from(TABLE.column_names), min_size=1, max_size=5, unique=True))
def test_random_filters_match_pyarrow(dataset, filter, columns):
    assert_same_table(dataset.to_table(columns=columns, filter=filter), expected(TABLE, columns, filter))
    assert dataset.count_rows(filter=filter) == expected(TABLE, None, filter).num_rows
