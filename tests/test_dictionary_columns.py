"""Text columns stored with small dictionaries are decoded in storage as
dictionaries and handed out as plain text (dictionary_columns.h): scans and
group-bys on them against pyarrow and DuckDB over the same table, with nulls,
empty and non-ASCII values, dictionaries that differ between row groups, and
columns whose dictionaries are too large for that path."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from support.assertions import assert_same_table
from support.oracle import expected
from support.tables import make_dictionary_table

F = pc.field
ROWS = 6000


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return make_dictionary_table(ROWS)


@pytest.fixture(scope="module")
def dataset(module_store, table):
    return module_store.write_dataset("dictionaries", table, rows_per_object=2500, row_group_size=700)


FILTERS = {
    "one_flag": F("flag") == "A",
    "empty_flag": F("flag") == "",
    "unicode_flag": F("flag") == "ü",
    "null_flag": F("flag").is_null(),
    "flags_in": F("flag").isin(["N", "R"]),
    "no_match": F("status") == "X",
    "all_match": F("id") >= 0,
    "binary": F("code") == b"\x01\x01",
    "long": F("long") < "1",
    "all_null": F("none").is_valid(),
}


@pytest.mark.parametrize("name", FILTERS)
def test_scans_match_pyarrow(dataset, table, name):
    result = dataset.scanner(filter=FILTERS[name], pushdown=True).to_table()
    assert_same_table(result, expected(table, None, FILTERS[name]))


def test_projection_of_text_matches_pyarrow(dataset, table):
    columns = {"id": F("id"), "upper": pc.utf8_upper(F("flag")), "status": F("status")}
    result = dataset.scanner(columns=columns, filter=F("status") == "O", pushdown=True).to_table()
    assert_same_table(result, expected(table, columns, F("status") == "O"))


GROUP_FILTERS = {
    "all": (None, ""),
    "some": (F("status") == "F", "where status = 'F'"),
    "none": (F("status") == "X", "where status = 'X'"),
}


@pytest.mark.parametrize("keys", [["flag", "status"], ["many"]])
@pytest.mark.parametrize("name", GROUP_FILTERS)
def test_group_by_text_keys_matches_duckdb(dataset, table, name, keys):
    filter, where = GROUP_FILTERS[name]
    result = dataset.group_by(keys).aggregate([("id", "sum"), ("id", "count")], filter=filter, pushdown=True)
    assert dataset.last_aggregate.stats.aggregate_in_storage
    oracle = duckdb.connect()
    oracle.register("t", table)
    listed = ", ".join(keys)
    rows = oracle.sql(f"select {listed}, sum(id), count(id) from t {where} group by {listed}").fetchall()
    ours = list(zip(*[column.to_pylist() for column in result.columns]))
    assert sorted(ours, key=repr) == sorted(rows, key=repr)
