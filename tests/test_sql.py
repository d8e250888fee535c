"""SQL over a store (Store.sql, `skyhook sql`): DuckDB runs the query with the
store's datasets as tables; TPC-H Q1, Q3 and Q6 answer as DuckDB does on the
Parquet files, the filters DuckDB pushes run in storage, and every mistake is a
one-line skyhook error."""

from __future__ import annotations

import concurrent.futures

import duckdb
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook.cli import app
from skyhook.dev.tpch import Q1_SQL, Q3_SQL, Q6_SQL, generate_table
from support.assertions import assert_same_table

SCALE_FACTOR = 0.01
TABLES = ("customer", "orders", "lineitem")


@pytest.fixture(scope="module")
def parquet_files(tmp_path_factory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("tpch")
    return {table: str(generate_table(table, SCALE_FACTOR, directory)) for table in TABLES}


@pytest.fixture
def tpch_store(store, parquet_files):
    for table, path in parquet_files.items():
        store.write_dataset(table, path, rows_per_object=10_000)
    return store


def _duckdb_on_files(query: str, parquet_files: dict[str, str]) -> pa.Table:
    with duckdb.connect() as connection:
        for table, path in parquet_files.items():
            connection.execute(f"create view {table} as select * from read_parquet('{path}')")
        return connection.sql(query).to_arrow_table()


@pytest.mark.parametrize("query", [Q1_SQL, Q3_SQL, Q6_SQL], ids=["q1", "q3", "q6"])
def test_tpch_queries_answer_as_duckdb_on_the_files(tpch_store, parquet_files, query):
    assert_same_table(tpch_store.sql(query), _duckdb_on_files(query, parquet_files))


def test_the_filters_duckdb_pushes_run_in_storage(tpch_store):
    lineitem = tpch_store.manifest("lineitem").num_rows
    tpch_store.sql("select count(*) from lineitem where l_orderkey < 1000")
    scans = [record for record in tpch_store.dataset("lineitem").workload() if record.kind == "scan"]
    assert scans and scans[-1].rows_returned < 0.1 * lineitem  # only matching rows left storage


def test_mistakes_are_one_line_errors(tpch_store):
    with pytest.raises(skyhook.InvalidRequestError, match="syntax error"):
        tpch_store.sql("selec 1")
    with pytest.raises(skyhook.DatasetNotFoundError, match="no dataset named 'nation'"):
        tpch_store.sql("select * from nation")
    with pytest.raises(skyhook.InvalidRequestError, match="l_nothing"):
        tpch_store.sql("select l_nothing from lineitem")
    with pytest.raises(skyhook.InvalidRequestError, match="file system operations are disabled"):
        tpch_store.sql("select * from read_csv('/etc/passwd')")  # the store's datasets only


def test_queries_share_a_database_but_nothing_of_each_other(store, tmp_path):
    """Queries that only read run on cursors of one DuckDB database: a query
    sees its own store's table of a name, never another's, however many run
    at once; what a statement creates is not there for the next."""
    other = skyhook.connect((tmp_path / "other").as_uri())
    store.write_dataset("t", pa.table({"x": [1, 2, 3]}))
    other.write_dataset("t", pa.table({"x": [10, 20]}))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        sums = list(
            pool.map(lambda mine: (mine, (store if mine else other).sql("select sum(x) s from t")), [True, False] * 40)
        )
    assert all(answer["s"].to_pylist() == ([6] if mine else [30]) for mine, answer in sums)
    store.sql("create table made as select 1 x")
    with pytest.raises(skyhook.DatasetNotFoundError, match="'made'"):
        store.sql("select * from made")


def test_the_cli_prints_and_writes_the_result(tpch_store, tmp_path):
    runner = CliRunner()
    printed = runner.invoke(app, ["sql", Q6_SQL, "--store", tpch_store.uri])
    assert printed.exit_code == 0 and "revenue" in printed.stdout, printed.output
    written = tmp_path / "q1.csv"
    result = runner.invoke(app, ["sql", Q1_SQL, "--store", tpch_store.uri, "--output", str(written)])
    assert result.exit_code == 0 and "wrote 4 rows" in result.stdout, result.output
    failed = runner.invoke(app, ["sql", "selec 1", "--store", tpch_store.uri])
    assert failed.exit_code != 0 and "syntax error" in failed.output


@pytest.mark.parametrize("query", [Q1_SQL, Q6_SQL], ids=["q1", "q6"])
def test_tpch_through_flight_sql_answers_as_duckdb_on_the_files(tpch_store, parquet_files, query):
    """The same queries from a remote client (skyhook serve, the ADBC driver)."""
    adbc = pytest.importorskip("adbc_driver_flightsql.dbapi")
    from skyhook.remote import start_server

    server = start_server(tpch_store)
    try:
        with adbc.connect(f"grpc://localhost:{server.port}", autocommit=True) as connection:
            with connection.cursor() as cursor:
                cursor.execute(query)
                remote = cursor.fetch_arrow_table()
    finally:
        server.shutdown()
    assert_same_table(remote, _duckdb_on_files(query, parquet_files))
