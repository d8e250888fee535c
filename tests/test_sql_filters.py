"""SQL-style text filters (``=``, ``<>``, AND/OR/NOT, IS [NOT] NULL, IN, BETWEEN,
LIKE) on every backend, against DuckDB running the same WHERE clause locally."""

from __future__ import annotations

import datetime
import time

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skyhook.errors import InvalidRequestError
from skyhook.plan.where import parse_where

FILTERS = [
    "i8 = 5",
    "i8 <> 5",
    "i32 > 10 AND i8 < 0",
    "i32 > 10 or s = 'fig'",
    "NOT (i8 > 0)",
    "s IS NULL",
    "s IS NOT NULL AND i8 IS NULL",
    "i8 > 0 And s Is Null",
    "i32 IN (1, 2, 3, -5, 999)",
    "i32 NOT IN (1, 2, 3)",
    "i8 IN (5)",
    "i32 BETWEEN -10 AND 10",
    "i32 NOT BETWEEN -500 AND 500 AND s = 'apple'",
    "(i8 between 0 and 10) or (i32 between 0 and 10)",
    "i8 BETWEEN 0 AND 10 OR i32 BETWEEN 0 AND 10 AND s IS NOT NULL",
    "d BETWEEN '1996-01-01' AND '1997-01-01'",
    "dec > 100.5 AND dec <= 500",
    "f32 < 0 and f32 >= -1",
    "s LIKE 'ba%'",
    "s LIKE '%a'",
    "s LIKE '%an%'",
    "s LIKE 'b_n%'",
    "s LIKE 'fig'",
    "s LIKE '%'",
    "s LIKE ''",
    "s NOT LIKE 'a%'",
    "s ILIKE 'BA%'",
    "s LIKE 'ünï%'",
    "s = 'O''Brien' OR s = ''",
    "i8 = NULL",
    "NOT (i8 > 0) AND NOT s LIKE 'a%'",
    "s = 'fig' OR FALSE",
    "id < 100 AND s LIKE 'a%' OR id > 2900",
    "s IN ('fig', 'apple', 'O''Brien')",
    "s NOT IN ('fig', 'apple')",
    "d IN ('1996-01-02', '1997-03-04')",
    "dec IN (100.5, 250, 1)",
    "f32 IN (0.5, -1)",
    "i8 IN (1, NULL)",
    "i8 NOT IN (1, NULL)",
    "NOT (i8 IN (1, 2) OR i8 IS NULL)",
    "i32 IN (" + ", ".join(str(value) for value in range(-40, 40, 2)) + ")",
    "i32 = 1 OR i32 = 2 OR i32 = 3 OR i32 = 4 OR i32 = 5 OR i32 = 6 OR i32 = 7 OR i32 = 8 OR i8 = 9 OR i8 = 10",
]


@pytest.fixture(scope="module")
def dataset(module_store, typed_table):
    return module_store.write_dataset("sql_filters", typed_table, rows_per_object=500)


@pytest.mark.parametrize("where", FILTERS)
def test_sql_filter_matches_duckdb(dataset, typed_table, where):
    local = duckdb.connect()
    local.register("local", typed_table.select(["id", "i8", "i32", "dec", "f32", "s", "d"]))
    expected = local.sql(f"select id from local where {where} order by id").to_arrow_table().column("id")
    result = dataset.to_table(columns=["id"], filter=where).column("id")
    assert pc.sort_indices(result).to_pylist() == list(range(len(result)))  # ordered as stored
    assert result.to_pylist() == expected.to_pylist()


@pytest.mark.parametrize("values", [20, 2000, 3000])
def test_long_in_lists_and_or_chains_plan_in_linear_time(dataset, typed_table, values):
    """pyarrow's Substrait serialization doubles its output per level of an
    AND/OR chain: a 20-value IN list written as a chain took over 30 s."""
    listed = ", ".join(str(value) for value in range(-values, values, 2))
    chained = " OR ".join(f"i32 = {value}" for value in range(-60, 60, 2))
    for where in (f"i32 IN ({listed})", f"i32 NOT IN ({listed})", chained):
        started = time.perf_counter()
        scanner = dataset.scanner(columns=["id"], filter=where)
        result = scanner.to_table().column("id")
        assert time.perf_counter() - started < 10, where[:40]
        local = duckdb.connect()
        local.register("local", typed_table.select(["id", "i32"]))
        expected = local.sql(f"select id from local where {where} order by id").to_arrow_table().column("id")
        assert result.to_pylist() == expected.to_pylist()
        # storage filters up to 2,000 values (plan/expressions.py: MAX_IN_VALUES)
        assert scanner.stats.filter_in_storage == (values <= 2000 or where == chained)


def test_a_100000_value_in_list_parses_and_runs_at_once(dataset, typed_table):
    integers = ", ".join(str(value) for value in range(-100_000, 100_000, 2))
    strings = ", ".join(f"'{fruit}{value}'" for value in range(10_000) for fruit in ("apple", "fig"))
    local = duckdb.connect()
    local.register("local", typed_table.select(["id", "i32", "s"]))
    for where in (f"i32 IN ({integers})", f"i32 not in [{integers}] and s IS NOT NULL", f"s IN ({strings}, 'fig')"):
        started = time.perf_counter()
        result = dataset.to_table(columns=["id"], filter=where).column("id")
        assert time.perf_counter() - started < 5, where[:40]  # about 0.6 s here; seconds per 10,000 before
        sql = where.replace("[", "(").replace("]", ")").replace("not in", "NOT IN")
        expected = local.sql(f"select id from local where {sql} order by id").to_arrow_table().column("id")
        assert result.to_pylist() == expected.to_pylist()


def test_long_lists_inside_text_stay_text_and_errors_keep_their_column(typed_table):
    listed = ", ".join(str(value) for value in range(40))
    quoted = f"s = 'in ({listed})'"
    assert parse_where(quoted, typed_table.schema).equals(pc.field("s") == pc.scalar(f"in ({listed})"))
    with pytest.raises(InvalidRequestError, match=rf"at column {len(listed) + 20} "):
        parse_where(f"i32 IN ({listed}) AND i8 = = 1", typed_table.schema)


def test_a_list_that_is_no_literal_list_is_refused_at_once(typed_table):
    """Values, then something no literal is before the list ends: the grammar
    fuzzer's input that backtracked exponentially (2 s for 10 values, a hang for 40)."""
    for count in (10, 40, 2000):  # the parser then reads them one by one, linearly
        where = f"(i32 is NOT null) AND (i32 not in ({', '.join(['1099'] * count)}, 425.5, i8))"
        started = time.perf_counter()
        parse_where(where, typed_table.schema)
        assert time.perf_counter() - started < 2, count


def test_sql_and_python_forms_agree(typed_table):
    schema = typed_table.schema
    pairs = [
        ("i8 = 5 AND s <> 'fig'", "i8 == 5 and s != 'fig'"),
        ("s IS NULL OR i8 IS NOT NULL", "s is None or i8 is not None"),
        ("i32 NOT IN (1, 2)", "i32 not in (1, 2)"),
        ("s LIKE 'ba%'", "starts_with(s, 'ba')"),
    ]
    for sql, python in pairs:
        assert parse_where(sql, schema).equals(parse_where(python, schema)), sql


def test_a_column_named_like_a_keyword(dataset):
    schema = pa.schema([("like", pa.int64()), ("between", pa.string())])
    assert parse_where("like = 3 AND between LIKE 'x%'", schema).equals(
        (pc.field("like") == pc.scalar(3)) & pc.starts_with(pc.field("between"), "x")
    )


@pytest.mark.parametrize(
    ("where", "column"),
    [("i8 = 1 AND s === 'a'", 16), ("i8 = = 1", 6), ("i8 > 1 AND AND i8 < 2", 12), ("i8 IN (1, 2", 7)],
)
def test_parse_errors_point_at_the_text(typed_table, where, column):
    with pytest.raises(InvalidRequestError, match=rf"at column {column} .*SQL-style") as error:
        parse_where(where, typed_table.schema)
    assert "\n" not in str(error.value)


QUOTED_AND_TYPED = [
    '"Dep Delay" > 0',
    '"Dep Delay" BETWEEN -5 AND 5 AND "order" = 3',
    "day < DATE '2020-01-20'",
    "day >= DATE '2020-01-10' AND arrival < TIMESTAMP '2020-01-15 12:00:00'",
    "arrival > TIMESTAMP '2020-01-25 00:00:00' OR \"Dep Delay\" IS NULL",
    'carrier = "carrier" OR "order" IN (1, 2)',  # a quoted name of a column is that column
]


@pytest.mark.parametrize("where", QUOTED_AND_TYPED)
def test_quoted_columns_and_date_literals_match_duckdb(store, where):
    rows = 600
    table = pa.table(
        {
            "Dep Delay": pa.array([None if i % 17 == 0 else i % 41 - 20 for i in range(rows)], pa.int64()),
            "order": pa.array([i % 5 for i in range(rows)], pa.int32()),
            "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 31) for i in range(rows)]),
            "arrival": pa.array([datetime.datetime(2020, 1, 1) + datetime.timedelta(hours=i) for i in range(rows)]),
            "carrier": pa.array(["carrier" if i % 7 == 0 else "AA" for i in range(rows)]),
        }
    )
    dataset = store.write_dataset("quoted", table.append_column("id", pa.array(range(rows))), rows_per_object=200)
    local = duckdb.connect()
    local.register("local", table.append_column("id", pa.array(range(rows))))
    expected = local.sql(f"select id from local where {where} order by id").to_arrow_table().column("id")
    result = dataset.to_table(columns=["id"], filter=where)
    assert result.column("id").to_pylist() == expected.to_pylist()
    assert dataset.last_scan.stats.filter_in_storage


def test_string_matches_on_large_strings_run_in_storage(store):
    """LIKE and starts_with on large_string travel as string (Substrait carries
    string matches on string only); a LIKE with _ sends its literal start, end
    and longest piece to storage, match_like runs on what they leave."""
    rows = 6000
    words = [None if i % 11 == 0 else f"{('abc', 'abd', 'xbc')[i % 3]}{i % 100}" for i in range(rows)]
    table = pa.table(
        {
            "id": pa.array(range(rows)),
            "ls": pa.array(words, pa.large_string()),
            "k": pa.array([i % 4 for i in range(rows)]),
        }
    )
    dataset = store.write_dataset("large_strings", table, rows_per_object=1000)
    local = duckdb.connect()
    local.register("local", table)
    for where, whole_in_storage in [
        ("ls LIKE 'abc1%'", True),
        ("ls NOT LIKE '%1'", True),
        ("starts_with(ls, 'xb')", True),
        ("ls LIKE 'a_c1_'", False),
        ("ls LIKE 'ab_%9' AND k = 2", False),
    ]:
        scanner = dataset.scanner(columns=["id"], filter=where, pushdown=True)
        result = scanner.to_table().column("id").to_pylist()
        rows_returned = scanner.stats.rows_returned
        assert result == local.sql(f"select id from local where {where} order by id").fetchnumpy()["id"].tolist(), where
        assert scanner.stats.filter_in_storage == whole_in_storage, where
        # Storage filtered: all of it, or by the necessary matches.
        assert rows_returned == len(result) if whole_in_storage else rows_returned < rows // 10, where
        dataset.group_by("k").aggregate([("id", "sum")], filter=where)
        assert dataset.last_aggregate.stats.aggregate_in_storage == whole_in_storage, where
