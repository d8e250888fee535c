"""DuckDB's IN and NOT IN lists reach storage as `if_else(is_valid(x), is_in(x,
L), null)` (NOT IN: its invert): they run in storage, with SQL's answer."""

from __future__ import annotations

import datetime
import decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.substrait as pas
import pytest

import skyhook
from skyhook.plan.expressions import MAX_IN_VALUES, to_substrait
from support.assertions import assert_same_table

ROWS = 6000


def _table() -> pa.Table:
    def maybe(values: list, every: int = 11) -> list:
        return [None if i % every == 3 else value for i, value in enumerate(values)]

    n = range(ROWS)
    return pa.table(
        {
            "id": pa.array(n, pa.int64()),
            "i": pa.array(maybe([(k * 7919) % 5000 for k in n]), pa.int64()),
            "s": pa.array(maybe([f"s{(k * 31) % 4000}" for k in n]), pa.string()),
            "dec": pa.array(maybe([decimal.Decimal(k % 700) / 4 for k in n]), pa.decimal128(12, 2)),
            "d": pa.array(
                maybe([datetime.date(2000, 1, 1) + datetime.timedelta(days=k % 3000) for k in n]), pa.date32()
            ),
            "pad": pa.array([f"payload-{k:08d}" * 4 for k in n]),
        }
    )


TABLE = _table()


def _sql(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"{value}::DECIMAL(12, 2)"
    return str(value)


def _values(column: str, count: int) -> list:
    """count values, a few of them in the column (so IN is selective)."""
    present = pc.unique(TABLE[column].drop_null()).to_pylist()[: min(5, count // 2)]
    return present + [_absent(column, k) for k in range(count - len(present))]


def _absent(column: str, k: int) -> object:
    """A value the column does not hold."""
    return {
        "i": 100_000 + k,
        "s": f"absent{k}",
        "dec": decimal.Decimal(10_000 + k),
        "d": datetime.date(2100, 1, 1) + datetime.timedelta(days=k),
    }[column]


@pytest.fixture(scope="module")
def ds(module_store: skyhook.Store) -> skyhook.Dataset:
    return module_store.write_dataset("in_lists", TABLE, rows_per_object=1500)


def _both(ds: skyhook.Dataset, where: str) -> tuple[pa.Table, pa.Table]:
    sql = f"SELECT id, {{column}} FROM {{name}} WHERE {where} ORDER BY id"
    local = TABLE  # noqa: F841 - DuckDB finds it by name
    column = where.split()[0]
    result = duckdb.sql(sql.format(column=column, name="ds")).to_arrow_table()
    oracle = duckdb.sql(sql.format(column=column, name="local")).to_arrow_table()
    return result, oracle


@pytest.mark.parametrize("column", ["i", "s", "dec", "d"])
@pytest.mark.parametrize("count", [5, 300, 2000])
@pytest.mark.parametrize("negated", [False, True], ids=["in", "not_in"])
def test_in_lists_run_in_storage(ds: skyhook.Dataset, column: str, count: int, negated: bool) -> None:
    values = ", ".join(_sql(v) for v in _values(column, count))
    result, oracle = _both(ds, f"{column} {'NOT IN' if negated else 'IN'} ({values})")
    assert_same_table(result, oracle)
    stats = ds.last_scan.stats
    assert stats.filter_in_storage and stats.projection_in_storage
    assert stats.rows_returned == oracle.num_rows  # only matching rows, in storage or read plain
    if not negated:
        assert stats.objects_read_plain == 0  # selective: the cost model pushes down
        assert stats.bytes_returned < TABLE.nbytes / 4


@pytest.mark.parametrize("negated", [False, True], ids=["in", "not_in"])
def test_null_in_the_list(ds: skyhook.Dataset, negated: bool) -> None:
    # x IN (.., NULL) matches as without the NULL; x NOT IN (.., NULL) is never true.
    values = ", ".join(_sql(v) for v in [*_values("i", 6), None])
    result, oracle = _both(ds, f"i {'NOT IN' if negated else 'IN'} ({values})")
    assert_same_table(result, oracle)
    assert (oracle.num_rows == 0) == negated


def test_more_values_than_storage_takes_filter_at_the_client(ds: skyhook.Dataset) -> None:
    values = ", ".join(str(v) for v in range(MAX_IN_VALUES + 1))
    result, oracle = _both(ds, f"i IN ({values})")
    assert_same_table(result, oracle)
    stats = ds.last_scan.stats
    assert not stats.filter_in_storage
    assert stats.projection_in_storage  # storage still returns only the columns needed
    assert set(ds.last_scan.projected_schema.names) == {"id", "i"}


SCHEMA = pa.schema([("x", pa.int64()), ("f", pa.float64())])
X = pc.field("x")
NULL = pa.scalar(None, pa.bool_())


def _guarded(field: pc.Expression, values: list) -> pc.Expression:
    return pc.if_else(field.is_valid(), field.isin(values), NULL)


@pytest.mark.parametrize(
    ("expression", "pushed"),
    [
        (_guarded(X, [1, 2]), True),
        (~_guarded(X, [1, 2]), True),
        (~_guarded(X, [1, None]), True),
        (_guarded(X, list(range(MAX_IN_VALUES))), True),  # IN lists of 1000 under an OR
        (_guarded(X, list(range(MAX_IN_VALUES + 1))), False),
        (X.isin([1, 2]) & (X > 0), True),
        (X.isin(list(range(1500))) | X.isin(list(range(2000, 2400))), True),
        (X.isin(list(range(1500))) | X.isin(list(range(2000, 2600))), False),
        (~X.isin([1, 2]), False),  # is_in gives false for null, equalities null
        (X.isin([1, None]), False),
        (_guarded(pc.field("f"), [1.0, float("nan")]), False),  # is_in matches NaN
        (pc.is_null(_guarded(X, [1])), True),  # the guarded form is exact anywhere
    ],
)
def test_what_storage_runs(expression: pc.Expression, pushed: bool) -> None:
    table = pa.table({"x": [1, 2, 3, None, 5, 2999], "f": [1.0, float("nan"), None, 2.0, 3.0, 4.0]})
    serialized = to_substrait([expression], ["filter"], SCHEMA, is_filter=True)
    assert (serialized is not None) == pushed
    if serialized is not None:
        rewritten = pas.deserialize_expressions(serialized).expressions["filter"]
        assert "if_else" not in str(rewritten) and "is_in" not in str(rewritten)
        assert (
            pads.dataset(table)
            .to_table(filter=rewritten)["x"]
            .equals(pads.dataset(table).to_table(filter=expression)["x"])
        )


def test_guarded_in_projection_is_exact() -> None:
    expression = _guarded(X, [1, None])
    serialized = to_substrait([expression], ["p"], SCHEMA)
    assert serialized is not None
    table = pa.table({"x": [1, 2, None]})
    rewritten = pas.deserialize_expressions(serialized).expressions["p"]
    got = pads.dataset(table).to_table(columns={"p": rewritten})["p"]
    want = pads.dataset(table).to_table(columns={"p": expression})["p"]
    assert got.equals(want)


@pytest.mark.parametrize("negated", [False, True], ids=["in", "not_in"])
def test_aggregate_with_a_guarded_in_list_runs_in_storage(ds: skyhook.Dataset, negated: bool) -> None:
    guarded = _guarded(pc.field("i"), [*_values("i", 300), None])
    filter = ~guarded if negated else guarded
    result = ds.aggregate([("id", "count"), ("i", "sum")], filter=filter, pushdown=True)
    expected = TABLE.filter(filter).group_by([]).aggregate([("id", "count"), ("i", "sum")])
    assert result.to_pylist() == expected.to_pylist()
    assert ds.last_aggregate.stats.filter_in_storage
