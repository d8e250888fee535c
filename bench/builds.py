"""Two builds of Skyhook side by side on the same lineitem objects (embedded
store): this checkout's and another's (`--baseline-python`, e.g. main's
.venv/bin/python). Each build runs in its own process over the same store
directory; rounds alternate between them (one run of each query per build per
round), so machine load hits both alike. Storage CPU (the reply statistics'
storage_cpu_s) and wall time, medians, ratios this / baseline. Q1 and Q6 are
checked against DuckDB and the scan's rows against pyarrow before timing.

    .venv/bin/python bench/builds.py --baseline-python /work/main/.venv/bin/python
        [--scale-factor 1] [--repeat 5] [--output bench/results/builds.json]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from harness import arguments

QUERY_NAMES = ["1% / 3 columns", "Q6", "Q1"]


def _worker(store_uri: str, threshold: str) -> None:
    """Reads query names from stdin, answers one JSON line each."""
    import duckdb
    from aggregates import QUERIES
    from engine import same_values

    import skyhook
    from skyhook.dev.tpch import COLUMNS, Q1_SQL, Q6_SQL

    pa.set_cpu_count(2)
    with skyhook.connect(store_uri) as store:
        ds = store.dataset("lineitem_builds")
        objects = [str(store.backend.objects / p.object_name) for p in ds.manifest.partitions]
        sql = duckdb.connect()
        sql.sql(f"create view lineitem as select * from read_parquet({objects!r})")
        price = pa.scalar(Decimal(threshold), ds.schema.field("l_extendedprice").type)

        def scan():
            scanner = ds.scanner(columns=COLUMNS, filter=pc.field("l_extendedprice") >= price, pushdown=True)
            return scanner.to_table(), scanner.stats.storage_cpu_s

        def aggregate(name: str):
            keys, aggregations, filter = QUERIES[name]
            table = ds.group_by(keys).aggregate(aggregations, filter=filter, pushdown=True)
            table = table.sort_by([(key, "ascending") for key in keys]) if keys else table
            return table, ds.last_aggregate.stats.storage_cpu_s

        runs = {"1% / 3 columns": scan, "Q6": lambda: aggregate("q6"), "Q1": lambda: aggregate("q1")}
        for name, text in (("Q6", Q6_SQL), ("Q1", Q1_SQL)):
            if not same_values(runs[name]()[0], sql.sql(text).arrow().read_all()):
                raise SystemExit(f"{name} disagrees with DuckDB")
        expected = sql.sql(f"select count(*) from lineitem where l_extendedprice >= {threshold}").fetchall()[0][0]
        if runs["1% / 3 columns"]()[0].num_rows != expected:
            raise SystemExit("the scan disagrees with DuckDB on the number of rows")
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            started = time.perf_counter()
            _, storage_cpu = runs[line.strip()]()
            print(json.dumps({"wall_s": time.perf_counter() - started, "storage_cpu_s": storage_cpu}), flush=True)


class Build:
    def __init__(self, python: str, store_uri: str, threshold: Decimal) -> None:
        self.process = subprocess.Popen(
            [python, __file__, "--worker", store_uri, str(threshold)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parent,
        )
        self.ask(None)

    def ask(self, query: str | None) -> dict:
        if query is not None:
            self.process.stdin.write(query + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def run(baseline_python: str, store_uri: str, scale_factor: float, repeat: int, data_dir: Path) -> dict:
    import skyhook
    from skyhook.dev.tpch import generate_lineitem, price_thresholds

    lineitem = generate_lineitem(scale_factor, data_dir)
    with skyhook.connect(store_uri) as store:
        store.write_dataset("lineitem_builds", str(lineitem), mode="overwrite")
    threshold = price_thresholds(lineitem)["1%"]
    builds = {
        "this": Build(sys.executable, store_uri, threshold),
        "baseline": Build(baseline_python, store_uri, threshold),
    }
    samples = {query: {build: [] for build in builds} for query in QUERY_NAMES}
    for round in range(repeat):
        order = list(builds) if round % 2 == 0 else list(reversed(builds))
        for query in QUERY_NAMES:
            for build in order:
                samples[query][build].append(builds[build].ask(query))
    for build in builds.values():
        build.close()
    results = {}
    for query, by_build in samples.items():
        medians = {
            build: {key: statistics.median(run[key] for run in runs) for key in ("wall_s", "storage_cpu_s")}
            for build, runs in by_build.items()
        }
        results[query] = {
            **medians,
            "storage_cpu_ratio": medians["this"]["storage_cpu_s"] / medians["baseline"]["storage_cpu_s"],
            "wall_ratio": medians["this"]["wall_s"] / medians["baseline"]["wall_s"],
        }
    return {
        "benchmark": "builds",
        "baseline_python": baseline_python,
        "scale_factor": scale_factor,
        "repeat": repeat,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "results": results,
    }


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3])
        return
    parser = arguments(__doc__, "builds", repeat=5)
    parser.add_argument("--baseline-python", required=True, help="the Python whose skyhook is the other build")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skyhook-bench-") as scratch:
        store = args.store or Path(scratch).as_uri()
        report = run(args.baseline_python, store, args.scale_factor, args.repeat, args.data_dir.resolve())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    for query, result in report["results"].items():
        print(
            f"{query:>16}: storage CPU {result['baseline']['storage_cpu_s']:.3f} -> {result['this']['storage_cpu_s']:.3f} s"
            f" ({result['storage_cpu_ratio']:.2f}x), wall {result['baseline']['wall_s']:.3f} ->"
            f" {result['this']['wall_s']:.3f} s ({result['wall_ratio']:.2f}x)"
        )
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
