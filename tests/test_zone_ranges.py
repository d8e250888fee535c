"""Row groups decided by a filter's column ranges from their stated min/max,
without Arrow's simplifier (cpp/skyhook/storage/secondary/scan_zones.cc,
TestRanges): conjunctions of comparisons on integer-domain columns (ints,
decimals, dates, timestamps with and without a zone) skip exactly the row
groups whose bounds (or nulls only) exclude them, and every answer is
pyarrow's, over nulls, all-null row groups, NaN and strings mixed in (which
go on to the simplifier). Both backends."""

from __future__ import annotations

import operator

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.assertions import assert_same_table
from support.oracle import expected
from support.scans import pushed_down
from support.strategies import TABLE

ROWS_PER_OBJECT = 500
ROW_GROUP = 50
RANGED = ["id", "i8", "i32", "dec", "d", "ts", "tsz"]  # integer domains: decided by ranges
OTHERS = ["u16", "f64", "s"]  # left to the simplifier
OPERATORS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
# Sorted by a ranged column (nulls last: whole row groups of nulls), or not at all.
LAYOUTS = ["id", "dec", "d", "i32"]


@pytest.fixture(scope="module", params=LAYOUTS)
def layout(module_store, request):
    table = TABLE.sort_by([(request.param, "ascending")])
    dataset = module_store.write_dataset(
        f"zone_ranges_{request.param}", table, rows_per_object=ROWS_PER_OBJECT, row_group_size=ROW_GROUP
    )
    return table, dataset


@st.composite
def terms(draw, names: list[str]) -> list[tuple[str, str, pa.Scalar]]:
    """1-3 comparisons of a column with one of its values (often an extreme)."""
    chosen = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(names))
        column = TABLE.column(name).drop_null()
        value = column[draw(st.integers(0, len(column) - 1))]
        if draw(st.integers(0, 5)) == 0:
            extremes = pc.min_max(column)
            value = extremes["min" if draw(st.booleans()) else "max"]
        chosen.append((name, draw(st.sampled_from(sorted(OPERATORS))), value))
    return chosen


def as_filter(chosen: list[tuple[str, str, pa.Scalar]]) -> pc.Expression:
    filter = None
    for name, op, value in chosen:
        term = OPERATORS[op](pc.field(name), value)
        filter = term if filter is None else filter & term
    return filter


def domain(values: pa.Array) -> list[int | None]:
    """Values in their stored integer domain (a decimal's unscaled value, a date's days)."""
    if pa.types.is_decimal(values.type):
        return [None if v is None else int(v.scaleb(values.type.scale)) for v in values.to_pylist()]
    if pa.types.is_integer(values.type):
        return values.to_pylist()
    return values.view(pa.int32() if pa.types.is_date32(values.type) else pa.int64()).to_pylist()


def excludes(group: pa.Table, chosen: list[tuple[str, str, pa.Scalar]]) -> bool:
    """Whether a row group's min/max (nulls only) leave no value that a column's terms allow together."""
    for name in {name for name, _, _ in chosen}:
        values = [v for v in domain(group.column(name).combine_chunks()) if v is not None]
        if not values:
            return True
        low, high, excluded = min(values), max(values), set()
        for term_name, op, value in chosen:
            if term_name != name:
                continue
            (v,) = domain(pa.array([value.as_py()], value.type))
            low = max(low, v + 1 if op == ">" else v if op in ("==", ">=") else low)
            high = min(high, v - 1 if op == "<" else v if op in ("==", "<=") else high)
            if op == "!=":
                excluded.add(v)
        if low > high or (low == high and low in excluded):
            return True
    return False


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=terms(RANGED))
def test_ranges_skip_exactly_the_row_groups_their_bounds_exclude(layout, chosen):
    table, dataset = layout
    filter = as_filter(chosen)
    result, stats = pushed_down(dataset, filter, ["id", "s"])
    assert_same_table(result, expected(table, ["id", "s"], filter))
    groups = [table.slice(start, ROW_GROUP) for start in range(0, table.num_rows, ROW_GROUP)]
    excluded = sum(excludes(group, chosen) for group in groups)
    # An object pruned by the client's statistics has all its row groups excluded.
    assert stats.zones_skipped + stats.objects_pruned * (ROWS_PER_OBJECT // ROW_GROUP) == excluded


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chosen=terms(RANGED + OTHERS))
def test_ranges_mixed_with_other_terms_match_pyarrow(layout, chosen):
    table, dataset = layout
    filter = as_filter(chosen)
    result, _ = pushed_down(dataset, filter, ["id", "f64", "dec"])
    assert_same_table(result, expected(table, ["id", "f64", "dec"], filter))
