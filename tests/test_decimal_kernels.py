"""Storage's decimal128 kernels (cpp/skyhook/storage/runtime/decimal_kernels.cc)
end to end: sums of computed decimals and decimal filters in storage against
DuckDB on the same rows, at scales 0..18, precision 18's bounds, negatives,
nulls, values beyond 64 bits (Arrow's kernel takes the batch), no match and
every row matching."""

from __future__ import annotations

import random
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

F = pc.field
SCALES = range(19)
ROWS = 600
LARGEST = 10**18 - 1  # precision 18's largest unscaled value


def _unscaled(rng: random.Random, row: int) -> int | None:
    if row % 11 == 3:
        return None
    if row in (5, 300):  # precision 18's bounds, once per object
        return LARGEST if row == 5 else -LARGEST
    return rng.randint(-(10**6), 10**6)


def _column(rng: random.Random, precision: int, scale: int) -> pa.Array:
    values = [_unscaled(rng, row) for row in range(ROWS)]
    decimals = [None if v is None else Decimal(v).scaleb(-scale) for v in values]
    return pa.array(decimals, pa.decimal128(precision, scale))


def _table() -> pa.Table:
    rng = random.Random(18)
    columns = {"k": pa.array([("x", "y", "z")[rng.randrange(3)] for _ in range(ROWS)])}
    for scale in SCALES:
        columns[f"a{scale}"] = _column(rng, 18, scale)
    columns["b"] = _column(rng, 18, 2)
    # Beyond 64 bits: every batch holds values of ~10^25.
    wide = [None if row % 7 == 0 else Decimal(rng.randint(-(10**27), 10**27)).scaleb(-2) for row in range(ROWS)]
    columns["w"] = pa.array(wide, pa.decimal128(30, 2))
    columns["v"] = pa.array([Decimal(rng.randint(-999, 999)).scaleb(-2) for _ in range(ROWS)], pa.decimal128(5, 2))
    return pa.table(columns)


TABLE = _table()


def _literal(text: str, type: pa.DataType) -> pc.Expression:
    return pc.scalar(pa.scalar(Decimal(text), type))


def _seven(scale: int) -> str:
    """-7 units of the last place, as exact text."""
    return f"{Decimal(-7).scaleb(-scale):f}"


@pytest.fixture(scope="module")
def dataset(module_store):
    return module_store.write_dataset("decimals", TABLE, rows_per_object=250)


# DuckDB multiplies decimal(18)s in 64 bits and refuses what overflows there;
# Arrow's product is decimal(37): DuckDB's operand is widened to match.
MEASURES = (
    [(F(f"a{s}") * F("b"), "sum", f"a{s}_times_b", f"sum(cast(a{s} as decimal(19, {s})) * b)") for s in SCALES]
    + [
        (_literal(_seven(s), pa.decimal128(18, s)) - F(f"a{s}"), "sum", f"a{s}_minus", f"sum({_seven(s)} - a{s})")
        for s in SCALES
    ]
    + [
        (F(f"a{s}") + _literal(_seven(s), pa.decimal128(18, s)), "sum", f"a{s}_plus", f"sum(a{s} + {_seven(s)})")
        for s in SCALES
    ]
    + [
        (_literal("1.00", pa.decimal128(15, 2)) - F("b"), "sum", "one_minus_b", "sum(1.00 - b)"),
        (F("w") * F("v"), "sum", "w_times_v", "sum(w * v)"),
        (F("w") - F("v"), "sum", "w_minus_v", "sum(w - v)"),
        (
            (F("a2") * F("v")).cast(pa.decimal128(24, 4), safe=False) * F("v"),
            "sum",
            "cast_times_v",
            "sum(cast(cast(a2 as decimal(19, 2)) * v as decimal(24, 4)) * v)",
        ),
    ]
)

FILTERS = {
    "every row": (None, "true"),
    "none": (F("a0") > _literal(str(LARGEST), pa.decimal128(18, 0)), f"a0 > {LARGEST}"),
    "scale 18 at its bound": (
        F("a18") >= _literal("-0.000000000001", pa.decimal128(18, 18)),
        "a18 >= -0.000000000001",
    ),
    "equal, not equal, less": (
        (F("a9") != _literal("0", pa.decimal128(18, 9)))
        & (F("b") < _literal("5000.00", pa.decimal128(18, 2)))
        & ~(F("a4") == _literal("1.2345", pa.decimal128(18, 4))),
        "a9 != 0 and b < 5000.00 and not (a4 = 1.2345)",
    ),
    "beyond 64 bits": (
        F("w") <= _literal("1000000000000000000000.00", pa.decimal128(30, 2)),
        "w <= 1000000000000000000000.00",
    ),
    "two columns": (F("a2") > F("b"), "a2 > b"),
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_sums_of_computed_decimals_match_duckdb(dataset, name):
    filter, where = FILTERS[name]
    result = dataset.group_by("k").aggregate(
        [(expression, function, label) for expression, function, label, _ in MEASURES] + [("b", "count")],
        filter=filter,
        pushdown=True,
    )
    assert dataset.last_aggregate.stats.aggregate_in_storage
    assert set(dataset.last_aggregate.stats.where.values()) == {"storage"}
    decimals = TABLE  # noqa: F841 (DuckDB reads it by name)
    measures = ", ".join(sql for *_, sql in MEASURES)
    expected = duckdb.sql(
        f"select k, {measures}, count(b) from decimals where {where} group by k order by k"
    ).fetchall()
    ours = result.sort_by("k").to_pylist()
    assert len(ours) == len(expected) == (0 if name == "none" else 3)
    for mine, theirs in zip(ours, expected):
        assert list(mine.values()) == list(theirs)


def _evaluated(table: pa.Table, expression: pc.Expression) -> pa.ChunkedArray:
    return pads.dataset(table).to_table(columns={"x": expression}).column("x")


# Computed columns a scan returns: storage's kernels through the scan's
# rebound projection (cpp/skyhook/storage/runtime/rebind_expressions.cc).
PROJECTED = {
    "a2_times_b": F("a2") * F("b"),
    "seven_minus_a18": _literal(_seven(18), pa.decimal128(18, 18)) - F("a18"),
    "a9_plus_a9": F("a9") + F("a9"),
    "w_times_v": F("w") * F("v"),
    "a2_ge_b": F("a2") >= F("b"),
    "b": F("b"),
}


@pytest.mark.parametrize("name", list(FILTERS))
def test_scans_with_decimal_filters_and_arithmetic_match_pyarrow(dataset, name):
    filter, _ = FILTERS[name]
    scanner = dataset.scanner(columns=PROJECTED, filter=filter, pushdown=True)
    result = scanner.to_table()
    stats = scanner.stats
    assert stats.filter_in_storage and stats.projection_in_storage
    assert stats.objects_read_plain == 0 and stats.objects_pushed_back == 0
    # Arrow's own kernels over the same rows, locally: bit for bit, in order.
    local = TABLE.filter(filter) if filter is not None else TABLE
    expected = pa.table({label: _evaluated(local, expression) for label, expression in PROJECTED.items()})
    assert result.schema == expected.schema
    assert result.num_rows == (0 if name == "none" else expected.num_rows)
    assert result.equals(expected)
