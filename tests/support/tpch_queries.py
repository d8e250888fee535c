"""TPC-H Q1 and Q6 as skyhook aggregates, checked against DuckDB's answers on
the same lineitem (skyhook.dev.tpch's Q1_SQL, Q6_SQL)."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook

F = pc.field
Q6_FILTER = (
    "l_shipdate >= '1994-01-01' and l_shipdate < '1995-01-01' and "
    "l_discount >= 0.05 and l_discount <= 0.07 and l_quantity < 24"
)


def money(value: str) -> pc.Expression:
    return pc.scalar(pa.scalar(decimal.Decimal(value), pa.decimal128(15, 2)))


def q1(ds: skyhook.Dataset, **options) -> pa.Table:
    price, discount, tax = F("l_extendedprice"), F("l_discount"), F("l_tax")
    one = money("1.00")
    return (
        ds.group_by(["l_returnflag", "l_linestatus"])
        .aggregate(
            [
                ("l_quantity", "sum"),
                ("l_extendedprice", "sum"),
                (price * (one - discount), "sum", "sum_disc_price"),
                # pyarrow does not widen decimal products: narrow the first one (values < 1e16).
                ((price * (one - discount)).cast(pa.decimal128(20, 4), safe=False) * (one + tax), "sum", "sum_charge"),
                ("l_quantity", "mean"),
                ("l_extendedprice", "mean"),
                ("l_discount", "mean"),
                ("l_orderkey", "count"),
            ],
            filter=F("l_shipdate") <= pa.scalar(datetime.date(1998, 9, 2)),
            **options,
        )
        .sort_by([("l_returnflag", "ascending"), ("l_linestatus", "ascending")])
    )


def assert_q1(result: pa.Table, expected: list[tuple]) -> None:
    """result (q1's) equals DuckDB's rows of Q1_SQL, with DuckDB's types."""
    assert len(expected) == result.num_rows == 4
    # DuckDB's types too: decimal(38, 4) for price * (1 - discount), (38, 6) with the tax.
    assert result.schema.field("sum_disc_price").type == pa.decimal128(38, 4)
    assert result.schema.field("sum_charge").type == pa.decimal128(38, 6)
    for ours, theirs in zip(result.to_pylist(), expected):
        values = list(ours.values())
        assert values[:4] == list(theirs[:4])  # keys and exact decimal sums
        assert values[4] == theirs[4] and values[5] == theirs[5]  # sums of computed decimals
        for mine, duck in zip(values[6:9], theirs[6:9]):
            assert float(mine) == pytest.approx(float(duck), abs=0.01)  # decimal averages, rounded to cents
        assert values[9] == theirs[9]


def q6(ds: skyhook.Dataset, **options) -> pa.Table:
    return ds.aggregate([(F("l_extendedprice") * F("l_discount"), "sum", "revenue")], filter=Q6_FILTER, **options)
