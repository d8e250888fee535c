"""The skyhook command line, run as a user would: through its real entry point in
a subprocess, and (for the long list of wrong inputs) with typer's CliRunner."""

from __future__ import annotations

import datetime
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook.cli import app
from skyhook.errors import StoreNotFoundError
from support.assertions import assert_one_line_error

TABLE = pa.table(
    {
        "k": pa.array(range(1000)),
        "price": pa.array([i * 1.5 for i in range(1000)]),
        "flag": pa.array(["R" if i % 3 else "A" for i in range(1000)]),
        "ts": pa.array([datetime.datetime(2020, 1, 1) + datetime.timedelta(hours=i) for i in range(1000)]).cast(
            pa.timestamp("ms", tz="Europe/Paris")
        ),
        "s": pa.array([None if i % 7 == 0 else f"name{i}" for i in range(1000)]),
    }
)
WIDE = TABLE.append_column("[bold]markup", pa.array(["[red]x[/red]"] * 1000)).append_column(
    "long_text", pa.array([f"a rather long text value, number {i}, " * 3 for i in range(1000)])
)
OBJECTS = 10  # TABLE stored in 100-row objects


def skyhook_cli(*args: str, check: bool = True, columns: int = 200) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "skyhook.cli", *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": str(columns), "PATH": "/usr/bin:/bin"},
    )
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Input files, good and bad, and a store with the dataset t (TABLE) and wide (WIDE)."""
    directory = tmp_path_factory.mktemp("cli")
    pq.write_table(TABLE, directory / "t.parquet")
    (directory / "corrupt.parquet").write_bytes(b"not parquet at all, " * 100)
    (directory / "notes.txt").write_text("not data\n")
    (directory / "empty").mkdir()
    # The bad value comes after the block CSV reading infers the types from.
    lines = "".join(f"{i},{i * 2}\n" for i in range(200_000))
    (directory / "bad.csv").write_text("a,b\n" + lines + "x,oops\n")
    with skyhook.connect(str(directory / "store")) as store:
        store.write_dataset("t", TABLE, rows_per_object=100)
        store.write_dataset("wide", WIDE, rows_per_object=500)
    return directory


# Each wrong input: the arguments ({dir} is the files fixture), what the one line says, the exit code.
WRONG_INPUTS = [
    (["ls", "--store", "{dir}/nowhere"], "no skyhook store at", 1),
    (["describe", "t", "--store", "{dir}/nowhere"], "`skyhook import DATASET FILE --store", 1),
    (["query", "t", "--store", "{dir}/nowhere"], "no skyhook store at", 1),
    (["rm", "t", "--store", "{dir}/nowhere"], "no skyhook store at", 1),
    (["fsck", "--store", "{dir}/nowhere"], "no skyhook store at", 1),
    (["ls", "--store", "s3://bucket"], "unsupported store URI", 1),
    (["ls", "--store", "ceph://pool"], "invalid Ceph URI", 1),
    (["query", "nope", "--store", "{dir}/store"], "no dataset named 'nope'", 1),
    (["describe", "nope", "--store", "{dir}/store"], "no dataset named 'nope'", 1),
    (["rm", "nope", "--store", "{dir}/store"], "no dataset named 'nope'", 1),
    (["query", "t", "--store", "{dir}/store", "-c", "k,nope"], "unknown column 'nope'", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "nope > 1"], "unknown column 'nope'", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "price > > 1"], "at column 9 ('> 1')", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "price >> 1"], "unsupported filter syntax", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "k = 1 AND flag === 'R'"], "at column 18 (\"= 'R'\")", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "k = 1 AND (flag = 'R'"], "SQL-style", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "  "], "the filter is empty", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "ts > 'not a date'"], "cannot compare a timestamp[ms", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "k < 'abc'"], "cannot compare a int64 column with 'abc'", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "k LIKE 'a%'"], "LIKE needs a string column", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "s LIKE 5"], "LIKE needs one quoted pattern", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "k BETWEEN 1"], "expected BETWEEN low AND high", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "k IS 5"], "IS NULL", 1),
    (["query", "t", "--store", "{dir}/store", "-w", "[ms] > 1"], "expected a literal value, got [ms]", 1),
    (["query", "t", "--store", "{dir}/store", "--limit", "-1"], "Invalid value for '--limit'", 2),
    (["query", "t", "--store", "{dir}/store", "--limit", "many"], "Invalid value for '--limit'", 2),
    (["query", "t", "--store", "{dir}/store", "-a", "price"], "expected COLUMN:FUNCTION", 1),
    (["query", "t", "--store", "{dir}/store", "-a", "price:median_ish"], "unknown aggregate function", 1),
    (["query", "t", "--store", "{dir}/store", "-a", "nope:sum"], "unknown column 'nope'", 1),
    (["query", "t", "--store", "{dir}/store", "-g", "flag"], "needs at least one --agg", 1),
    (["query", "t", "--store", "{dir}/store", "--pushdown", "maybe"], "expected auto, on or off", 1),
    (["query", "t", "--store", "{dir}/store", "-o", "{dir}/out.txt"], "use a .parquet or .csv", 1),
    (["query", "t", "--store", "{dir}/store", "-o", "{dir}/no/such/dir/out.csv"], "No such file", 1),
    (["query", "t", "--store", "{dir}/store", "--colums", "k"], "No such option: --colums", 2),
    (["query"], "Missing argument 'dataset'", 2),
    (["lss"], "No such command 'lss'", 2),
    ([], "missing command (see root --help)", 2),
    (["cluster"], "missing command (see root cluster --help)", 2),
    (["import", "t", "{dir}/t.parquet", "--store", "{dir}/store"], "--overwrite replaces it", 1),
    (["import", "u", "{dir}/missing.parquet", "--store", "{dir}/store"], "no such file", 1),
    (["import", "u", "{dir}/corrupt.parquet", "--store", "{dir}/store"], "corrupt.parquet", 1),
    (["import", "u", "{dir}/notes.txt", "--store", "{dir}/store"], "cannot tell the format", 1),
    (["import", "u", "{dir}/empty", "--store", "{dir}/store"], "no Parquet, Arrow IPC or CSV files", 1),
    (["import", "u", "{dir}/bad.csv", "--store", "{dir}/store"], "invalid value 'x'", 1),
    (["import", "bad/name", "{dir}/t.parquet", "--store", "{dir}/store"], "invalid dataset name", 1),
    (["import", "u", "{dir}/t.parquet", "--store", "{dir}/store", "--format", "csv"], "unknown format", 1),
    (["import", "u", "{dir}/t.parquet", "--store", "{dir}/store", "--rows-per-object", "0"], "must be positive", 1),
    (["cluster", "up", "{dir}/cluster", "--limit", "max_call_ms=fast"], "expected NAME=INTEGER", 1),
]


@pytest.mark.parametrize(
    ("args", "expected", "code"), WRONG_INPUTS, ids=[" ".join(args)[:60] for args, _, _ in WRONG_INPUTS]
)
def test_wrong_input_is_one_line(files, args, expected, code):
    datasets = skyhook.connect(str(files / "store")).list_datasets()
    result = CliRunner().invoke(app, [arg.format(dir=files) for arg in args])
    assert_one_line_error(result.exit_code, result.stdout, result.stderr, expected, code)
    assert not (files / "nowhere").exists() and not (files / "cluster").exists()
    assert skyhook.connect(str(files / "store")).list_datasets() == datasets  # nothing written, nothing lost


def test_wrong_input_through_the_entry_point(files):
    for args, expected, code in (
        (["ls", "--store", f"{files}/nowhere"], "no skyhook store at", 1),
        (["query", "t", "--store", f"{files}/store", "-w", "price > 1 AND flag == = 'R'"], "at column", 1),
        (["import", "t", f"{files}/t.parquet", "--store", f"{files}/store"], "--overwrite", 1),
        (["query", "t", "--store", f"{files}/store", "--bogus"], "No such option", 2),
    ):
        result = skyhook_cli(*args, check=False)
        assert_one_line_error(result.returncode, result.stdout, result.stderr, expected, code)
        assert result.stdout == ""


def test_missing_ceph_pool_is_one_line(ceph_cluster):
    pool = ceph_cluster.uri.split("?")[0]
    for uri, expected in (
        (ceph_cluster.uri.replace(pool, "ceph://no-such-pool"), "no-such-pool"),
        (pool + "?conf=/no/such/ceph.conf", "/no/such/ceph.conf"),
    ):
        result = CliRunner().invoke(app, ["ls", "--store", uri])
        assert_one_line_error(result.exit_code, result.stdout, result.stderr, expected)


def test_connect_create(tmp_path):
    """The Python API: a missing embedded store is created, or with create=False an error that creates nothing."""
    missing = tmp_path / "store"
    with pytest.raises(StoreNotFoundError, match="no skyhook store"):
        skyhook.connect(missing.as_uri(), create=False)
    assert not missing.exists()
    with skyhook.connect(missing.as_uri()) as created:
        created.write_dataset("t", TABLE)
    with skyhook.connect(missing.as_uri(), create=False) as opened:
        assert opened.dataset("t").to_table().equals(TABLE)


def test_import_ls_describe_query(tmp_path):
    store = str(tmp_path / "store")
    source = tmp_path / "input.parquet"
    pq.write_table(TABLE, source)
    out = skyhook_cli("import", "sales", str(source), "--store", store, "--rows-per-object", "300").stdout
    assert "imported 1,000 rows into 4 objects" in out
    assert "sales" in skyhook_cli("ls", "--store", store).stdout
    described = skyhook_cli("describe", "sales", "--store", store).stdout
    assert "double" in described and "sales." in described
    assert "timestamp[ms, tz=Europe/Paris]" in described  # the unit and zone, not eaten as markup

    queried = skyhook_cli(
        "query", "sales", "--store", store, "--columns", "k,flag", "--where", "price > 1400 AND flag = 'R'"
    ).stdout
    assert "rows_returned" in queried and "objects_pruned" in queried

    output = tmp_path / "out.csv"
    where = "price > 1400 and flag == 'R'"
    skyhook_cli("query", "sales", "--store", store, "-w", where, "-c", "k,flag", "--output", str(output))
    written = pacsv.read_csv(output)
    expected = TABLE.filter((pc.field("price") > 1400) & (pc.field("flag") == "R")).select(["k", "flag"])
    assert written.column("k").to_pylist() == expected.column("k").to_pylist()

    skyhook_cli("rm", "sales", "--store", store)
    assert "no datasets in" in skyhook_cli("ls", "--store", store).stdout


def statistic(output: str, name: str) -> str:
    line = next(line for line in output.splitlines() if f" {name} " in line)
    return line.split("│")[2].strip()


def test_limit_stops_early(files):
    store = str(files / "store")
    result = CliRunner().invoke(app, ["query", "t", "--store", store, "--limit", "3", "-w", "k >= 0"])
    assert result.exit_code == 0, result.output
    assert "first 3 rows (there are more" in result.stdout
    assert 0 < int(statistic(result.stdout, "objects_scanned")) < OBJECTS
    assert int(statistic(result.stdout, "rows_returned")) < TABLE.num_rows
    for k in range(3):
        assert f"│ {k} " in result.stdout
    # A filter that leaves fewer rows than the limit: all of them, and no "more".
    few = CliRunner().invoke(app, ["query", "t", "--store", store, "--limit", "30", "-w", "k BETWEEN 990 AND 999"])
    assert few.exit_code == 0 and "10 rows" in few.stdout and "more" not in few.stdout


def test_tables_fit_the_terminal(files, tmp_path):
    store = str(files / "store")
    for width in (60, 80, 200):
        out = skyhook_cli("query", "wide", "--store", store, "--limit", "5", columns=width).stdout
        assert max(map(len, out.splitlines())) <= width, out
        assert bool(re.search(r"… \d+ more columns", out)) == (width < 200), out
    out = skyhook_cli("query", "wide", "--store", store, "--limit", "5", "-c", "k,[bold]markup").stdout
    assert "[bold]markup" in out and "[red]x[/red]" in out and "more columns" not in out
    output = tmp_path / "wide.parquet"
    skyhook_cli("query", "wide", "--store", store, "--output", str(output))
    assert pq.read_table(output).equals(WIDE)


def test_progress_reports_input_consumed(store):
    """The import progress advances by the input's rows and Arrow bytes, and ends at the input's size."""
    reported: list[tuple[int, int]] = []
    store.write_dataset("t", TABLE, rows_per_object=128, progress=lambda rows, size: reported.append((rows, size)))
    assert sum(rows for rows, _ in reported) == TABLE.num_rows and len(reported) == 8
    expected = sum(TABLE.slice(start, 128).nbytes for start in range(0, TABLE.num_rows, 128))
    assert sum(size for _, size in reported) == expected


def test_import_progress_and_interrupt(tmp_path):
    """A real Ctrl-C in the middle of an import on a terminal: one line, exit 130, nothing stored."""
    rows = 1_500_000
    pacsv.write_csv(
        pa.table({"a": pa.array(range(rows)), "b": pc.cast(pa.array(range(rows)), pa.string())}), tmp_path / "big.csv"
    )
    store = tmp_path / "store"
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the real entry point on a terminal
        try:
            os.environ["COLUMNS"] = "120"
            arguments = [
                "import",
                "big",
                str(tmp_path / "big.csv"),
                "--store",
                str(store),
                "--rows-per-object",
                "50000",
            ]
            os.execv(sys.executable, [sys.executable, "-m", "skyhook.cli", *arguments])
        finally:
            os._exit(127)
    output = b""
    deadline = time.monotonic() + 120
    while b"rows" not in output and time.monotonic() < deadline:  # the first object is stored
        if select.select([terminal], [], [], 0.1)[0]:
            output += os.read(terminal, 65536)
    os.kill(pid, signal.SIGINT)
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    text = output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 130, text
    assert "Traceback" not in text and text.rstrip().endswith("error: interrupted")
    assert re.search(r"[\d,]+/~[\d,]+ rows [\d.]+ (KiB|MiB)", text), text  # rows of the input, its bytes
    with skyhook.connect(str(store), create=False) as opened:
        assert opened.list_datasets() == [] and opened.backend.object_names() == []


def test_interrupt_leaves_nothing(files, tmp_path, monkeypatch):
    from skyhook.ingest import write

    calls = []

    def interrupted(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(*args)

    original = write.partition_statistics
    monkeypatch.setattr(write, "partition_statistics", interrupted)
    store = tmp_path / "store"
    result = CliRunner().invoke(
        app, ["import", "t", str(files / "t.parquet"), "--store", str(store), "--rows-per-object", "100"]
    )
    assert_one_line_error(result.exit_code, result.stdout, result.stderr, "interrupted", 130)
    with skyhook.connect(str(store), create=False) as opened:
        assert opened.list_datasets() == [] and opened.backend.object_names() == []


def test_group_by_and_explain(files):
    store = str(files / "store")
    out = skyhook_cli("query", "t", "--store", store, "-g", "flag", "-a", "price:sum", "-a", "k:count", "-w", "k < 100")
    expected = TABLE.filter(pc.field("k") < 100).group_by("flag").aggregate([("price", "sum"), ("k", "count")])
    for row in expected.to_pylist():
        assert str(row["price_sum"]) in out.stdout and str(row["k_count"]) in out.stdout
    explained = skyhook_cli("query", "t", "--store", store, "-g", "flag", "-a", "price:mean", "--analyze").stdout
    assert "super-plan at the client" in explained and f"{OBJECTS} in storage" in explained


def test_pushdown_modes(files):
    store = str(files / "store")
    plain = skyhook_cli("query", "t", "--store", store, "--where", "k < 10", "--pushdown", "off").stdout
    pushed = skyhook_cli("query", "t", "--store", store, "--where", "k < 10", "--pushdown", "on").stdout
    assert statistic(plain, "objects_read_plain") == "1" and statistic(pushed, "objects_read_plain") == "0"


def test_counts_agree_with_their_nouns_and_limit_zero_prints_no_rows(tmp_path):
    store = tmp_path / "store"
    source = tmp_path / "one.parquet"
    pq.write_table(pa.table({"x": [1]}), source)
    imported = CliRunner().invoke(app, ["import", "one", str(source), "--store", str(store)])
    assert "imported 1 row into 1 object as one (1 object" in imported.stdout, imported.output
    described = CliRunner().invoke(app, ["describe", "one", "--store", str(store)])
    assert "one: 1 row, 1 object" in described.stdout, described.output
    for extra in ([], ["-g", "x", "-a", "x:sum"]):
        queried = CliRunner().invoke(app, ["query", "one", "--store", str(store), "--limit", "0", *extra])
        assert queried.exit_code == 0 and "there are more" not in queried.stdout and "(--limit 0)" in queried.stdout
