"""Group-bys whose keys are small-dictionary text columns used for nothing
else group in storage on object-wide dictionary codes (dictionary_codes.h) and
answer in the plan's text type: against DuckDB over the same table, with null,
empty and non-ASCII keys, all-null keys, dictionaries differing per row group,
binary keys, keys mixed with plain keys, keys also filtered on or aggregated
(read as text), keys too distinct for the path, column groups and empty objects."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from skyhook import Design
from support.tables import make_dictionary_table

F = pc.field
ROWS = 5000


def _table() -> pa.Table:
    table = make_dictionary_table(ROWS)
    extra = {
        "small": pa.array([i % 5 for i in range(ROWS)], pa.int32()),
        "price": pa.array([i * 13 % 1000 for i in range(ROWS)], pa.decimal128(9, 2)),
    }
    for name, column in extra.items():
        table = table.append_column(name, column)
    return table


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return _table()


@pytest.fixture(scope="module")
def dataset(module_store, table):
    return module_store.write_dataset("codes", table, rows_per_object=2000, row_group_size=600)


@pytest.fixture(scope="module")
def grouped_dataset(module_store, table):
    design = Design(
        column_groups=[["id", "flag"], ["status", "code", "none", "small", "price", "long"]], row_group_size=600
    )
    return module_store.write_dataset("codes_groups", table, rows_per_object=2000, design=design)


def _duckdb(table: pa.Table, keys: list[str], measures: str, where: str) -> list[tuple]:
    oracle = duckdb.connect()
    oracle.register("t", table)
    listed = ", ".join(keys)
    return oracle.sql(f"select {listed}, {measures} from t {where} group by {listed}").fetchall()


def _rows(result: pa.Table) -> list[tuple]:
    return sorted(zip(*[column.to_pylist() for column in result.columns]), key=repr)


# keys, aggregates, filter, SQL of the measures, SQL's where, key columns grouped on codes
CASES = {
    "two_keys": (["flag", "status"], [("id", "sum"), ("id", "count")], None, "sum(id), count(id)", "", 2),
    "filtered_elsewhere": (
        ["flag", "status"],
        [("price", "sum"), ("id", "count")],
        F("small") < 3,
        "sum(price), count(id)",
        "where small < 3",
        2,
    ),
    "computed_measure": (
        ["flag"],
        [(F("price") * F("price"), "sum", "squares"), ("id", "count")],
        F("id") > 100,
        "sum(price * price), count(id)",
        "where id > 100",
        1,
    ),
    "key_filtered_on": (["flag", "status"], [("id", "sum")], F("flag") != "N", "sum(id)", "where flag <> 'N'", 1),
    "key_aggregated": (["flag", "status"], [("flag", "count"), ("id", "sum")], None, "count(flag), sum(id)", "", 1),
    "key_counted_distinct": (
        ["status", "flag"],
        [("flag", "count_distinct"), ("id", "sum")],
        None,
        "count(distinct flag), sum(id)",
        "",
        3,  # the distinct count groups on a second read of flag
    ),
    "all_null_key": (["none"], [("id", "sum"), ("id", "count")], None, "sum(id), count(id)", "", 1),
    "binary_key": (["code"], [("id", "sum")], None, "sum(id)", "", 1),
    "mixed_plain_key": (["small", "flag"], [("id", "max")], None, "max(id)", "", 1),
    "too_distinct": (["long", "status"], [("id", "sum")], None, "sum(id)", "", 1),
    "no_rows": (["flag"], [("id", "sum"), ("id", "count")], F("id") < 0, "sum(id), count(id)", "where id < 0", 1),
}


@pytest.mark.parametrize("name", CASES)
def test_group_by_on_codes_matches_duckdb(dataset, table, name):
    keys, aggregates, filter, measures, where, coded_keys = CASES[name]
    result = dataset.group_by(keys).aggregate(aggregates, filter=filter, pushdown=True)
    stats = dataset.last_aggregate.stats
    assert stats.aggregate_in_storage
    # Objects a loaded node pushed back were aggregated at the client, on text.
    assert stats.keys_on_codes == coded_keys * (stats.objects_scanned - stats.objects_at_client)
    assert result.schema.field(keys[0]).type == table.schema.field(keys[0]).type
    assert _rows(result) == sorted(_duckdb(table, keys, measures, where), key=repr)


def test_group_by_on_codes_across_column_groups(grouped_dataset, table):
    result = grouped_dataset.group_by(["status", "flag"]).aggregate([("price", "sum")], pushdown=True)
    stats = grouped_dataset.last_aggregate.stats
    assert stats.keys_on_codes == 2 * (stats.objects_scanned - stats.objects_at_client)
    assert _rows(result) == sorted(_duckdb(table, ["status", "flag"], "sum(price)", ""), key=repr)


def test_group_by_on_codes_of_empty_objects(module_store, table):
    empty = module_store.write_dataset("codes_empty", table.slice(0, 0))
    result = empty.group_by(["flag"]).aggregate([("id", "count")], pushdown=True)
    assert result.num_rows == 0 and result.schema.field("flag").type == pa.string()
