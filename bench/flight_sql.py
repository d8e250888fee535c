"""What remote access costs: lineitem queries answered in process and through
`skyhook serve` (a server process of its own on this host, the client here),
and how the server's throughput grows with concurrent clients.

For each query (1 % and 10 % of the rows with 3 columns, as a dataset scan
with a pyarrow filter; TPC-H Q6 as SQL): the in-process time and the bytes
storage sent this process, against the remote time and the bytes the server
sent (Arrow's buffers, as its metrics count them; on the wire, with
--compression, fewer). Then 1, 2 and 4 clients, each a process running the
1 % query in a loop for --seconds: queries per second in all, and the server's
CPU. Writes JSON and a PNG next to it.

    .venv/bin/python bench/flight_sql.py [--scale-factor 1] [--repeat 5] [--compression zstd]
        [--cluster ./cluster] [--seconds 20] [--clients 1,2,4]
"""

from __future__ import annotations

import multiprocessing
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib
from harness import arguments, cluster_store, process_cpu_seconds, write_report

import skyhook
from skyhook.dev.tpch import COLUMNS, generate_lineitem, selectivity_filters
from skyhook.flight.client import RemoteStore

Q6 = """select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.05 and 0.07 and l_quantity < 24"""


def start_server(uri: str, compression: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "skyhook.cli", "serve", "--store", uri, "--port", "0", "--compression", compression],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()
    if " at " not in line:
        process.kill()
        raise SystemExit(f"skyhook serve did not start: {line!r}")
    return process, line.split(" at ")[1].strip()


def streamed_bytes(remote: RemoteStore) -> int:
    return remote.action("skyhook.metrics")["bytes_streamed"]


def timed(run) -> tuple[float, object]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def compare(local: skyhook.Store, remote: RemoteStore, filters: dict, repeat: int) -> dict:
    """Per query: median times in process and remote, bytes to this process each way."""
    results = {}
    dataset, served = local.dataset("lineitem"), remote.dataset("lineitem")
    cases = {f"{label} / 3 columns": filters[label] for label in ("1%", "10%")}
    for name, filter in cases.items():
        runs = []
        for _ in range(repeat + 1):  # the first warms
            scanner = dataset.scanner(columns=COLUMNS, filter=filter)
            local_s, table = timed(scanner.to_table)
            before = streamed_bytes(remote)
            remote_s, served_table = timed(lambda: served.to_table(columns=COLUMNS, filter=filter))
            if served_table.num_rows != table.num_rows:
                raise AssertionError(f"{name}: {served_table.num_rows} rows remote, {table.num_rows} in process")
            runs.append((local_s, remote_s, scanner.stats.bytes_returned, streamed_bytes(remote) - before))
        runs = runs[1:]
        results[name] = _summary(runs, table.num_rows)
    runs = []
    for _ in range(repeat + 1):
        local_s, expected = timed(lambda: local.sql(Q6))
        before = streamed_bytes(remote)
        remote_s, answer = timed(lambda: remote.sql(Q6))
        if answer.column(0).to_pylist() != expected.column(0).to_pylist():
            raise AssertionError("Q6 answered differently through the server")
        runs.append((local_s, remote_s, None, streamed_bytes(remote) - before))
    results["Q6 (SQL)"] = _summary(runs[1:], 1)
    return results


def _summary(runs: list[tuple], rows: int) -> dict:
    local_s = statistics.median(run[0] for run in runs)
    remote_s = statistics.median(run[1] for run in runs)
    local_bytes = runs[0][2]
    return {
        "rows": rows,
        "in_process_s": local_s,
        "remote_s": remote_s,
        "time_ratio": remote_s / local_s,
        "in_process_bytes": local_bytes,
        "remote_bytes": runs[0][3],
        "bytes_ratio": None if not local_bytes else runs[0][3] / local_bytes,
    }


def client_loop(address: str, filter, seconds: float, counts) -> None:
    with skyhook.connect(address) as remote:
        served = remote.dataset("lineitem")
        deadline, done = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            served.to_table(columns=COLUMNS, filter=filter)
            done += 1
    counts.put(done)


def scaling(address: str, server_pid: int, filter, clients: list[int], seconds: float) -> dict:
    results = {}
    context = multiprocessing.get_context("spawn")
    for count in clients:
        queue = context.Queue()
        cpu_before = process_cpu_seconds([server_pid])
        workers = [context.Process(target=client_loop, args=(address, filter, seconds, queue)) for _ in range(count)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        done = sum(queue.get() for _ in workers)
        for worker in workers:
            worker.join()
        wall = time.perf_counter() - started
        results[str(count)] = {
            "queries": done,
            "queries_per_s": done / wall,
            "server_cpu_cores": (process_cpu_seconds([server_pid]) - cpu_before) / wall,
        }
        print(
            f"{count} clients: {done / wall:.2f} queries/s, server {results[str(count)]['server_cpu_cores']:.2f} cores"
        )
    return results


def plot(report: dict, target: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(report["queries"])
    width = 0.38
    for offset, key, label in ((-width / 2, "in_process_s", "in process"), (width / 2, "remote_s", "through serve")):
        left.bar(
            [i + offset for i in range(len(names))], [report["queries"][n][key] for n in names], width, label=label
        )
    left.set_xticks(range(len(names)), names)
    left.set_ylabel("seconds (median)")
    left.legend()
    left.set_title("one query")
    counts = list(report["scaling"])
    right.plot([int(c) for c in counts], [report["scaling"][c]["queries_per_s"] for c in counts], marker="o")
    right.set_xlabel("concurrent clients")
    right.set_ylabel("1 % / 3-column queries per second")
    right.set_title("throughput")
    figure.tight_layout()
    figure.savefig(target)


def main() -> None:
    parser = arguments(__doc__, "flight_sql", repeat=5)
    parser.add_argument("--compression", default="none", choices=["none", "zstd", "lz4"])
    parser.add_argument("--clients", default="1,2,4")
    parser.add_argument("--seconds", type=float, default=20.0)
    options = parser.parse_args()
    lineitem = generate_lineitem(options.scale_factor, options.data_dir)
    filters = selectivity_filters(lineitem)
    with tempfile.TemporaryDirectory() as directory:
        uri, _ = cluster_store(options.cluster, options.store or Path(directory, "store").as_uri())
        with skyhook.connect(uri) as local:
            if "lineitem" not in local.list_datasets():
                local.write_dataset("lineitem", lineitem)
            server, address = start_server(uri, options.compression)
            try:
                with skyhook.connect(address) as remote:
                    queries = compare(local, remote, filters, options.repeat)
                for name, result in queries.items():
                    print(f"{name}: {result['time_ratio']:.2f}x the time, bytes {result['bytes_ratio']}")
                clients = [int(count) for count in options.clients.split(",")]
                scaled = scaling(address, server.pid, filters["1%"], clients, options.seconds)
            finally:
                server.terminate()
                server.wait(timeout=60)
    report = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpus": multiprocessing.cpu_count(),
        },
        "configuration": {**{k: str(v) for k, v in vars(options).items()}, "store": uri.split("?")[0]},
        "queries": queries,
        "scaling": scaled,
    }
    write_report(report, options.output, plot)


if __name__ == "__main__":
    main()
