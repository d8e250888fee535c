"""Random text filters from a grammar of the WHERE clauses users write
(comparisons, IN lists short and long, BETWEEN, LIKE, IS NULL, AND/OR/NOT,
parentheses, both spellings of each keyword) select the same rows as DuckDB's
SQL on the same table: through the parser on its own, and through a dataset
whose filters run in storage."""

from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skyhook.plan.where import parse_where

ROWS = 400
WORDS = ["apple", "banana", "fig", "Fig", "kiwi", "a_b", "100%", "", "ünï"]


def _table() -> pa.Table:
    def nulls_every(step: int, values: list) -> list:
        return [None if row % step == 0 else value for row, value in enumerate(values)]

    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "i8": pa.array(nulls_every(7, [row % 41 - 20 for row in range(ROWS)]), pa.int8()),
            "i32": pa.array([(row * 7919) % 2001 - 1000 for row in range(ROWS)], pa.int32()),
            "f64": pa.array(nulls_every(11, [(row % 50) / 4 - 6 for row in range(ROWS)]), pa.float64()),
            "s": pa.array(nulls_every(5, [WORDS[row % len(WORDS)] for row in range(ROWS)]), pa.string()),
            "d": pa.array(
                nulls_every(9, [datetime.date(1996, 1, 1) + datetime.timedelta(days=row) for row in range(ROWS)]),
                pa.date32(),
            ),
            "flag": pa.array(nulls_every(13, [row % 3 == 0 for row in range(ROWS)]), pa.bool_()),
        }
    )


TABLE = _table()
NUMERIC = {
    "i8": st.integers(-25, 25),
    "i32": st.integers(-1100, 1100),
    "f64": st.integers(-30, 30).map(lambda v: v / 4),
}


def _keyword(word: str) -> st.SearchStrategy[str]:
    return st.sampled_from([word.upper(), word.lower(), word.capitalize()])


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@st.composite
def _literal(draw: st.DrawFn, column: str) -> str:
    if column in NUMERIC:
        value = draw(NUMERIC[column])
        if column != "f64" and draw(st.integers(0, 9)) == 0:
            value += 0.5  # an integer column against a fraction
        return str(value)
    if column == "s":
        return _quoted(draw(st.sampled_from(WORDS + ["zzz", "Apple"])))
    day = datetime.date(1996, 1, 1) + datetime.timedelta(days=draw(st.integers(-20, ROWS + 20)))
    return draw(st.sampled_from([f"'{day}'", f"DATE '{day}'"]))


@st.composite
def _comparison(draw: st.DrawFn) -> str:
    column = draw(st.sampled_from(["i8", "i32", "f64", "s", "d"]))
    form = draw(st.integers(0, 5))
    if form == 0:
        op = draw(st.sampled_from(["=", "<>", "!=", "<", "<=", ">", ">="]))
        return f"{column} {op} {draw(_literal(column))}"
    if form == 1:
        size = draw(st.sampled_from([1, 3, 20, 60]))
        values = draw(st.lists(_literal(column), min_size=1, max_size=size))
        if draw(st.integers(0, 7)) == 0:
            values.append("NULL")
        negated = draw(_keyword("not")) + " " if draw(st.booleans()) else ""
        return f"{column} {negated}{draw(_keyword('in'))} ({', '.join(values)})"
    if form == 2:
        low, high = draw(_literal(column)), draw(_literal(column))
        negated = draw(_keyword("not")) + " " if draw(st.booleans()) else ""
        return f"{column} {negated}{draw(_keyword('between'))} {low} {draw(_keyword('and'))} {high}"
    if form == 3:
        negated = draw(_keyword("not")) + " " if draw(st.booleans()) else ""
        return f"{column} {draw(_keyword('is'))} {negated}{draw(_keyword('null'))}"
    if form == 4:
        word = draw(st.sampled_from(["a", "an", "fig", "a_", "ün", "1", ""]))
        pattern = draw(st.sampled_from([f"{word}%", f"%{word}", f"%{word}%", word, f"_{word}%"]))
        negated = draw(_keyword("not")) + " " if draw(st.booleans()) else ""
        like = draw(st.sampled_from(["LIKE", "like", "ILIKE"]))
        return f"s {negated}{like} {_quoted(pattern)}"
    return draw(st.sampled_from(["flag", "NOT flag", "flag = TRUE", "flag = FALSE", "flag IS NULL"]))


def _filters(depth: int = 3) -> st.SearchStrategy[str]:
    def combined(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        pair = st.tuples(inner, st.sampled_from(["AND", "and", "OR", "or"]), inner)
        return st.one_of(
            pair.map(lambda parts: f"{parts[0]} {parts[1]} {parts[2]}"),
            pair.map(lambda parts: f"({parts[0]}) {parts[1]} ({parts[2]})"),
            inner.map(lambda text: f"NOT ({text})"),
        )

    return st.recursive(_comparison(), combined, max_leaves=depth * 2)


LOCAL = duckdb.connect()
LOCAL.register("local", TABLE)


def _duckdb_rows(where: str) -> list[int]:
    sql = f"select id from local where {where.replace('!=', '<>')} order by id"
    return LOCAL.sql(sql).fetchnumpy()["id"].tolist()


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=_filters())
def test_the_parser_selects_duckdbs_rows(where):
    selected = TABLE.filter(parse_where(where, TABLE.schema)).column("id").to_pylist()
    assert selected == _duckdb_rows(where), where


@pytest.fixture(scope="module")
def grammar_dataset(module_store):
    return module_store.write_dataset("filter_grammar", TABLE, rows_per_object=100)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(where=_filters())
def test_a_dataset_filtering_in_storage_selects_duckdbs_rows(grammar_dataset, where):
    scanner = grammar_dataset.scanner(columns=["id"], filter=where)
    assert scanner.to_table().column("id").to_pylist() == _duckdb_rows(where), where
