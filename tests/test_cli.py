"""The skyhook command line, run as a user would."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

TABLE = pa.table(
    {
        "k": pa.array(range(1000)),
        "price": pa.array([i * 1.5 for i in range(1000)]),
        "flag": pa.array(["R" if i % 3 else "A" for i in range(1000)]),
    }
)


def skyhook_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "skyhook.cli", *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_import_ls_describe_query(tmp_path):
    store = str(tmp_path / "store")
    source = tmp_path / "input.parquet"
    pq.write_table(TABLE, source)
    out = skyhook_cli("import", "sales", str(source), "--store", store, "--rows-per-object", "300").stdout
    assert "imported 1,000 rows into 4 objects" in out
    assert "sales" in skyhook_cli("ls", "--store", store).stdout
    described = skyhook_cli("describe", "sales", "--store", store).stdout
    assert "price" in described and "double" in described and "sales." in described

    queried = skyhook_cli(
        "query", "sales", "--store", store, "--columns", "k,flag", "--where", "price > 1400 and flag == 'R'"
    ).stdout
    assert "rows_returned" in queried and "objects_pruned" in queried

    output = tmp_path / "out.csv"
    skyhook_cli(
        "query",
        "sales",
        "--store",
        store,
        "--where",
        "price > 1400 and flag == 'R'",
        "--columns",
        "k,flag",
        "--output",
        str(output),
    )
    written = pacsv.read_csv(output)
    expected = TABLE.filter((pc.field("price") > 1400) & (pc.field("flag") == "R")).select(["k", "flag"])
    assert written.column("k").to_pylist() == expected.column("k").to_pylist()

    skyhook_cli("rm", "sales", "--store", store)
    assert "sales" not in skyhook_cli("ls", "--store", store).stdout


def test_clear_errors(tmp_path):
    store = str(tmp_path / "store")
    missing = skyhook_cli("query", "nothing", "--store", store, check=False)
    assert missing.returncode == 1 and "no dataset named 'nothing'" in missing.stdout
    pq.write_table(TABLE, tmp_path / "t.parquet")
    skyhook_cli("import", "t", str(tmp_path / "t.parquet"), "--store", store)
    bad = skyhook_cli("query", "t", "--store", store, "--where", "nope > 1", check=False)
    assert bad.returncode == 1 and "unknown column 'nope'" in bad.stdout
    absent = skyhook_cli("import", "u", str(tmp_path / "absent.parquet"), "--store", store, check=False)
    assert absent.returncode == 1 and "no such file" in absent.stdout


def test_group_by_and_explain(tmp_path):
    store = str(tmp_path / "store")
    pq.write_table(TABLE, tmp_path / "t.parquet")
    skyhook_cli("import", "t", str(tmp_path / "t.parquet"), "--store", store, "--rows-per-object", "300")
    out = skyhook_cli(
        "query", "t", "--store", store, "-g", "flag", "-a", "price:sum", "-a", "k:count", "--where", "k < 100"
    ).stdout
    expected = TABLE.filter(pc.field("k") < 100).group_by("flag").aggregate([("price", "sum"), ("k", "count")])
    for row in expected.to_pylist():
        assert str(row["price_sum"]) in out and str(row["k_count"]) in out
    explained = skyhook_cli("query", "t", "--store", store, "-g", "flag", "-a", "price:mean", "--analyze").stdout
    assert "super-plan at the client" in explained and "4 in storage" in explained
    bad = skyhook_cli("query", "t", "--store", store, "-g", "flag", check=False)
    assert bad.returncode == 1 and "needs at least one --agg" in bad.stdout


def test_pushdown_modes(tmp_path):
    store = str(tmp_path / "store")
    pq.write_table(TABLE, tmp_path / "t.parquet")
    skyhook_cli("import", "t", str(tmp_path / "t.parquet"), "--store", store, "--rows-per-object", "300")

    def statistic(output: str, name: str) -> str:
        line = next(line for line in output.splitlines() if f" {name} " in line)
        return line.split("│")[2].strip()

    plain = skyhook_cli("query", "t", "--store", store, "--where", "k < 10", "--pushdown", "off").stdout
    pushed = skyhook_cli("query", "t", "--store", store, "--where", "k < 10", "--pushdown", "on").stdout
    assert statistic(plain, "objects_read_plain") == "1" and statistic(pushed, "objects_read_plain") == "0"
    bad = skyhook_cli("query", "t", "--store", store, "--pushdown", "maybe", check=False)
    assert bad.returncode == 1 and "expected auto, on or off" in bad.stdout


def test_cluster_limits_are_checked(tmp_path):
    for bad in ("max_call_ms", "max_call_ms=fast", "max_calls=5"):
        result = skyhook_cli("cluster", "up", str(tmp_path / "cluster"), "--limit", bad, check=False)
        assert result.returncode == 1 and "expected NAME=INTEGER" in result.stdout
        assert "Traceback" not in result.stdout + result.stderr
    assert not (tmp_path / "cluster").exists()
