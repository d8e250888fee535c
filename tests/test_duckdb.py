"""DuckDB queries a skyhook dataset directly and pushes projection and filter into storage."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from support.assertions import assert_same_table


def test_duckdb_pushes_filter_and_projection(store, typed_table):
    ds = store.write_dataset("typed", typed_table, rows_per_object=500)
    sql = "SELECT id, s, dec FROM {} WHERE id BETWEEN 1200 AND 1299 AND s = 'fig' ORDER BY id"
    result = duckdb.sql(sql.format("ds")).arrow()
    if isinstance(result, pa.RecordBatchReader):
        result = result.read_all()
    local = typed_table  # noqa: F841 - DuckDB finds it by name
    oracle = duckdb.sql(sql.format("local")).arrow()
    if isinstance(oracle, pa.RecordBatchReader):
        oracle = oracle.read_all()
    assert_same_table(result, oracle)
    stats = ds.last_scan.stats
    assert stats.filter_in_storage and stats.projection_in_storage
    assert stats.objects_pruned == len(ds.manifest.partitions) - 1  # id is sorted
    assert stats.rows_returned == oracle.num_rows  # only matching rows left storage
    assert set(ds.last_scan.projected_schema.names) == {"id", "s", "dec"}


def test_duckdb_aggregate_over_dataset(store, typed_table):
    ds = store.write_dataset("typed", typed_table, rows_per_object=500)
    local = typed_table  # noqa: F841
    query = "SELECT s, count(*) AS n, sum(i32) AS total FROM {} WHERE d >= DATE '1997-01-01' GROUP BY s ORDER BY s NULLS FIRST"
    assert duckdb.sql(query.format("ds")).fetchall() == duckdb.sql(query.format("local")).fetchall()
    assert ds.last_scan.stats.rows_returned < typed_table.num_rows
