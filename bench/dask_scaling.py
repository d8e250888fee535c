"""How reading a dataset with Dask scales with its workers when each has a CPU
of its own: every worker runs as an emulated host (skyhook.dev.hosts: a
network namespace and a cgroup with a CPU quota), the scheduler and this
client outside them. Lineitem in an embedded store (a directory every worker
reads: the scan runs in the worker, so its CPU is what scales).

For 1, 2 and 4 workers: all rows and columns read (each partition reduced
where it was read, so the client receives a few numbers), the 1 % / 3-column
query's rows brought to the client, and TPC-H Q1 as Dask's tree reduction of
storage partials (its result's bytes at the client). Medians of --repeat.
Writes JSON and a PNG. Needs root.

    sudo .venv/bin/python bench/dask_scaling.py [--scale-factor 1] [--workers 1,2,4]
        [--worker-cpu 0.4] [--partition-mib 16] [--repeat 3]
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib
import pandas as pd
from harness import arguments, write_report

import skyhook
from skyhook.dask import aggregate
from skyhook.dev.hosts import EmulatedHosts, HostsSpec
from skyhook.dev.tpch import COLUMNS, generate_lineitem, selectivity_filters

Q1_AGGREGATIONS = [
    ("l_quantity", "sum"),
    ("l_extendedprice", "sum"),
    ("l_discount", "mean"),
    ("l_quantity", "count"),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def start_scheduler(address: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", address, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return process, f"tcp://{address}:{port}"


def start_workers(hosts: EmulatedHosts, count: int, scheduler: str) -> list[subprocess.Popen]:
    """count single-threaded workers, worker i as host i (its CPU quota)."""
    workers = []
    for index in range(count):
        node = f"h{index}"
        command = [
            *hosts.command_prefix(node),
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            scheduler,
            *("--host", hosts.spec.address(node), "--nthreads", "1", "--no-nanny", "--memory-limit", "0"),
        ]
        workers.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return workers


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _bytes_in_memory(partition: pd.DataFrame) -> pd.Series:
    return pd.Series([int(partition.memory_usage(deep=True).sum()), len(partition)])


def measure(dataset: skyhook.Dataset, filters: dict, repeat: int, partition_bytes: int) -> dict:
    """Median seconds of each query on the workers there are, and what reached this client."""

    def timed(run) -> tuple[float, object]:
        times, result = [], None
        for _ in range(repeat + 1):  # the first warms the workers' imports and caches
            started = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - started)
        return statistics.median(times[1:]), result

    # Each run builds its frame anew: a frame kept and computed again may reuse results still held.
    def full() -> pd.Series:
        frame = dataset.to_dask(partition_bytes=partition_bytes)
        return frame.map_partitions(_bytes_in_memory, meta=(None, "int64")).compute()

    full_s, totals = timed(full)
    rows = int(totals.iloc[1::2].sum())
    if rows != dataset.count_rows():
        raise AssertionError(f"the workers read {rows} rows of {dataset.count_rows()}")
    selective_s, selected = timed(
        lambda: dataset.to_dask(columns=COLUMNS, filter=filters["1%"], partition_bytes=partition_bytes).compute()
    )
    keys = ["l_returnflag", "l_linestatus"]
    q1_s, q1 = timed(lambda: aggregate(dataset, keys, Q1_AGGREGATIONS, partition_bytes=partition_bytes).compute())
    return {
        "partitions": dataset.to_dask(partition_bytes=partition_bytes).npartitions,
        "all rows and columns_s": full_s,
        "bytes read into worker memory": int(totals.iloc[0::2].sum()),
        "1% / 3 columns_s": selective_s,
        "1% / 3 columns rows": len(selected),
        "Q1 tree_s": q1_s,
        "Q1 bytes at the client": int(q1.memory_usage(deep=True).sum()),
    }


def plot(report: dict, target: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = list(report["workers"])
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for key in ("all rows and columns_s", "1% / 3 columns_s", "Q1 tree_s"):
        axis.plot([int(c) for c in counts], [report["workers"][c][key] for c in counts], marker="o", label=key[:-2])
    axis.set_xlabel(f"dask workers ({report['configuration']['worker_cpu']} cores each)")
    axis.set_ylabel("seconds (median)")
    axis.set_xticks([int(c) for c in counts])
    axis.legend()
    figure.tight_layout()
    figure.savefig(target)


def main() -> None:
    from distributed import Client

    parser = arguments(__doc__, "dask_scaling", repeat=3)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--worker-cpu", type=float, default=0.4)
    # Several partitions a worker, so that an uneven share of a few large ones does not decide the time.
    parser.add_argument("--partition-mib", type=float, default=16)
    options = parser.parse_args()
    if options.cluster is not None:
        parser.error("the workers read an embedded store (--store or a temporary one): their CPU is what scales")
    counts = [int(count) for count in options.workers.split(",")]
    lineitem = generate_lineitem(options.scale_factor, options.data_dir)
    filters = selectivity_filters(lineitem)
    spec = HostsSpec(hosts=max(counts), host_rate_mbit=10_000, host_cpu=options.worker_cpu, host_memory_mib=0)
    hosts = EmulatedHosts(spec)
    results = {}
    with tempfile.TemporaryDirectory() as directory:
        uri = options.store or Path(directory, "store").as_uri()
        with skyhook.connect(uri) as store:
            if "lineitem" not in store.list_datasets():
                store.write_dataset("lineitem", lineitem)
            dataset = store.dataset("lineitem")
            # Written back and in the page cache before any count of workers is timed: the
            # first measured otherwise shares the disk with the write-back (2x slower, measured).
            os.sync()
            dataset.to_table()
            hosts.up()
            scheduler, address = start_scheduler(spec.bridge_address)
            try:
                for count in counts:
                    workers = start_workers(hosts, count, address)
                    try:
                        with Client(address, timeout=60) as client:
                            client.wait_for_workers(count, timeout=120)
                            results[str(count)] = measure(
                                dataset, filters, options.repeat, int(options.partition_mib * 2**20)
                            )
                    finally:
                        stop(workers)
                    print(count, "workers:", results[str(count)])
            finally:
                stop([scheduler])
                hosts.down()
    first = results[str(counts[0])]["all rows and columns_s"]
    for count in counts:
        results[str(count)]["speedup over the fewest"] = first / results[str(count)]["all rows and columns_s"]
    report = {
        "machine": {"platform": platform.platform(), "cpus": multiprocessing.cpu_count()},
        "configuration": {k: str(v) for k, v in vars(options).items()},
        "workers": results,
    }
    write_report(report, options.output, plot)


if __name__ == "__main__":
    main()
