"""Scale-out across emulated hosts: the seeds' experiment. For each number of
hosts a fresh dev cluster (skyhook.dev.hosts: a network namespace, a shaped
link and a CPU quota per host, one OSD each, host the failure domain) holds
TPC-H lineitem; the client runs as a node of its own (its link and CPU quota
fixed) and reads it with pushdown, our plain read and the cost model, and, as
Ceph users do today, the same Parquet through RGW with DuckDB (httpfs) and
pyarrow (S3FileSystem). 1 / 10 / 100 % of the rows x 3 / all columns, Q1 and
Q6: latency, the client's CPU seconds and every host's (their cgroups), bytes
over the client's link, and CPU over time per node. Writes JSON and PNGs;
prints ratios. Needs root; not part of the tests.

    sudo .venv/bin/python bench/scale_out.py [--hosts 4,8,16] [--scale-factor 2]
        [--host-cpu 0.1] [--client-cpu 0.1] [--client-rate 1000] [--host-rate 1000]
        [--repeat 1] [--cells '1% / 3 columns,Q6'] [--no-gateway] [--output bench/results/scale_out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from decimal import Decimal
from pathlib import Path

import matplotlib
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).parent))
from aggregates import QUERIES  # noqa: E402
from engine import same_values  # noqa: E402

import skyhook  # noqa: E402
from skyhook.dev.cluster import LocalCluster  # noqa: E402
from skyhook.dev.gateway import Gateway, S3Endpoint  # noqa: E402
from skyhook.dev.hosts import CLIENT, EmulatedHosts, HostsSpec  # noqa: E402
from skyhook.dev.s3_baseline import baseline_python, duckdb_over_s3, publish_dataset, pyarrow_over_s3  # noqa: E402
from skyhook.dev.tpch import COLUMNS, Q1_SQL, Q6_SQL, generate_lineitem, price_thresholds  # noqa: E402
from skyhook.plan.aggregate import AggregateQuery  # noqa: E402

DATASET = "lineitem"
BUCKET = "bench"
SKYHOOK_PATHS = {"pushdown": True, "plain": False, "auto": "auto"}
SAMPLE_SECONDS = 0.1


# -- the client node's side ---------------------------------------------------


class Sampler:
    """CPU seconds of every node and bytes over the client's link, now (t:
    wall-clock seconds, comparable across processes) and, as a context, sampled
    in the background by the orchestrator, outside the client's cgroup (the
    seeds' CPU-over-time figure)."""

    def __init__(self, hosts: EmulatedHosts) -> None:
        self.hosts = hosts
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> dict:
        received, sent = self.hosts.link_bytes(CLIENT)
        return {"t": time.time(), "cpu": self.hosts.cpu_seconds(), "rx": received, "tx": sent}

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            self.samples.append(self.now())

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def timed(run, sampler: Sampler) -> dict:
    # What the previous path left (garbage, freed buffers the allocator has yet to
    # return) is cleared outside the timing: each path pays for its own work only.
    gc.collect()
    pa.default_memory_pool().release_unused()
    before = sampler.now()
    result = run(fetch=False)
    after = sampler.now()
    cpu = {node: after["cpu"][node] - before["cpu"][node] for node in after["cpu"]}
    return {
        "wall_s": after["t"] - before["t"],
        "client_cpu_s": cpu[CLIENT],
        "hosts_cpu_s": sum(value for node, value in cpu.items() if node.startswith("h")),
        "gateway_cpu_s": cpu["gateway"],
        "link_bytes": after["rx"] - before["rx"] + after["tx"] - before["tx"],
        "start_s": before["t"],
        "end_s": after["t"],
        "rows": result if isinstance(result, int) else result.num_rows,
    }


def measure(paths: dict, repeat: int, check, sampler: Sampler, fetch: bool, decision=None) -> dict:
    """Every path once to warm and check answers (fetch: whole results, else
    row counts), then interleaved runs; medians. decision: what the cost model
    decided on the run just made (kept with each of its runs)."""
    check({name: run(fetch=fetch) for name, run in paths.items()})
    runs: dict[str, list[dict]] = {name: [] for name in paths}
    for _ in range(repeat):
        for name, run in paths.items():
            runs[name].append(timed(run, sampler))
            if name == "auto" and decision is not None:
                runs[name][-1]["decision"] = decision()
    return {
        name: {
            **{
                key: statistics.median(run[key] for run in values) for key in values[0] if key.endswith(("_s", "bytes"))
            },
            "rows": values[0]["rows"],
            "runs": values,
        }
        for name, values in runs.items()
    }


def scan_paths(ds, baselines, columns, threshold) -> dict:
    price_type = ds.schema.field("l_extendedprice").type
    filter = pc.field("l_extendedprice") >= pa.scalar(threshold, price_type)
    paths = {
        name: (
            lambda pushdown=pushdown, fetch=True: ds.scanner(
                columns=columns, filter=filter, pushdown=pushdown
            ).to_table()
        )
        for name, pushdown in SKYHOOK_PATHS.items()
    }
    if baselines is not None:
        local, sql = baselines
        selected = ", ".join(columns) if columns else "*"
        query = f"select {selected} from lineitem where l_extendedprice >= {threshold}"
        paths["pyarrow_rgw"] = lambda fetch=True: local.to_table(columns=columns, filter=filter)
        paths["duckdb_rgw"] = lambda fetch=True: sql.sql(query, fetch)
    return paths


def cost_model_decision(ds, columns, threshold) -> str:
    """What the cost model decided, and why, on one more run."""
    price_type = ds.schema.field("l_extendedprice").type
    filter = pc.field("l_extendedprice") >= pa.scalar(threshold, price_type)
    scanner = ds.scanner(columns=columns, filter=filter, pushdown="auto")
    scanner.to_table()
    return str(scanner.stats.cost_model)


def aggregate_paths(ds, baselines, name: str) -> dict:
    keys, aggregations, filter = QUERIES[name]

    def sorted_rows(table: pa.Table) -> pa.Table:
        return table.sort_by([(key, "ascending") for key in keys]) if keys else table

    paths = {
        path: (
            lambda pushdown=pushdown, fetch=True: sorted_rows(
                ds.group_by(keys).aggregate(aggregations, filter=filter, pushdown=pushdown)
            )
        )
        for path, pushdown in SKYHOOK_PATHS.items()
    }
    if baselines is not None:
        local, sql = baselines
        query = AggregateQuery.make(ds.schema, keys, aggregations, filter)
        paths["pyarrow_rgw"] = lambda fetch=True: sorted_rows(query.run_locally(local))
        paths["duckdb_rgw"] = lambda fetch=True: sql.sql({"q1": Q1_SQL, "q6": Q6_SQL}[name], fetch)
    return paths


def counts_agree(results: dict) -> None:
    counts = {name: result if isinstance(result, int) else result.num_rows for name, result in results.items()}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"paths disagree on the number of rows: {counts}")


def values_agree(results: dict) -> None:
    reference = results.get("duckdb_rgw", results["pushdown"])
    for name, table in results.items():
        if not same_values(table, reference):
            raise SystemExit(f"{name} disagrees:\n{table}\n{reference}")


DUCKDB_THREADS = (1, 2, 4, 8)


def best_duckdb_threads(endpoint: S3Endpoint, sampler: Sampler, threshold: Decimal) -> int:
    """DuckDB's thread count that answers the 1 % / 3 columns scan fastest here:
    more threads fetch more ranges at once, but share the client's CPU quota."""
    query = f"select {', '.join(COLUMNS)} from lineitem where l_extendedprice >= {threshold}"
    times = {}
    for threads in DUCKDB_THREADS:
        duck = duckdb_over_s3(endpoint, BUCKET, DATASET, view="lineitem", threads=threads)
        try:
            duck.sql(query, fetch=False)  # footers cached, as in every measured run
            times[threads] = timed(lambda fetch: duck.sql(query, fetch), sampler)["wall_s"]
        finally:
            duck.close()
    print(f"  DuckDB threads: {times}", file=sys.stderr, flush=True)
    return min(times, key=times.get)


def client_run(config: dict) -> dict:
    """Runs as the client node (its namespace and cgroup): every cell, measured."""
    hosts = EmulatedHosts(HostsSpec(**config["hosts"]))
    thresholds = {label: Decimal(value) for label, value in config["thresholds"].items()}
    sampler = Sampler(hosts)
    with skyhook.connect(config["uri"]) as store:
        ds = store.dataset(DATASET)
        baselines = None
        if config.get("gateway"):
            endpoint = S3Endpoint(**config["gateway"])
            baselines = (
                pyarrow_over_s3(endpoint, BUCKET, DATASET, schema=ds.schema),
                duckdb_over_s3(
                    endpoint,
                    BUCKET,
                    DATASET,
                    view="lineitem",
                    threads=best_duckdb_threads(endpoint, sampler, thresholds["1%"]),
                ),
            )
        results = {}
        for label, threshold in thresholds.items():
            for width, columns in (("3 columns", COLUMNS), ("all columns", None)):
                cell = f"{label} / {width}"
                if config["cells"] and cell not in config["cells"]:
                    continue
                paths = scan_paths(ds, baselines, columns, threshold)
                decided = lambda: str(ds.last_scan.stats.cost_model)  # noqa: E731
                results[cell] = measure(paths, config["repeat"], counts_agree, sampler, fetch=False, decision=decided)
                results[cell]["auto"]["decision"] = cost_model_decision(ds, columns, threshold)
                print(f"  {cell}: " + _line(results[cell]), file=sys.stderr, flush=True)
        for name in ("Q6", "Q1"):
            if config["cells"] and name not in config["cells"]:
                continue
            paths = aggregate_paths(ds, baselines, name.lower())
            results[name] = measure(paths, config["repeat"], values_agree, sampler, fetch=True)
            print(f"  {name}: " + _line(results[name]), file=sys.stderr, flush=True)
    return {"results": results}


def _line(cell: dict) -> str:
    return "  ".join(f"{path} {value['wall_s']:.2f} s" for path, value in cell.items())


# -- the orchestrator ---------------------------------------------------------


def run_hosts(spec: HostsSpec, lineitem: Path, args: argparse.Namespace, scratch: Path) -> dict:
    cluster = LocalCluster(scratch / f"cluster-{spec.hosts}")
    hosts = EmulatedHosts(spec)
    try:
        started = time.perf_counter()
        cluster.up(osds=args.osds_per_host, hosts=spec, worker=False, timeout=300)
        for node in spec.host_names:  # load without the quotas; they hold for the queries
            hosts.set_cpu(node, 0)
        with skyhook.connect(cluster.uri) as store:
            ds = store.write_dataset(DATASET, str(lineitem), mode="overwrite", rows_per_object=args.rows_per_object)
            manifest = ds.manifest
            gateway = publish(cluster, ds, spec) if args.gateway else None
        for node in spec.host_names:
            hosts.set_cpu(node, spec.host_cpu)
        ready_s = time.perf_counter() - started
        config = {
            "uri": cluster.uri + ("" if args.replica_reads else "&replica_reads=0"),
            "hosts": spec.as_dict(),
            "thresholds": {label: str(value) for label, value in args.thresholds.items()},
            "repeat": args.repeat,
            "gateway": gateway,
            "cells": [cell.strip() for cell in args.cells.split(",")] if args.cells else [],
        }
        config_file = scratch / "client.json"
        config_file.write_text(json.dumps(config))
        output = scratch / "client-result.json"
        command = [sys.executable, __file__, "--client", str(config_file), "--output", str(output)]
        with Sampler(hosts) as sampler:
            subprocess.run([*hosts.command_prefix(CLIENT), *command], check=True, env=os.environ.copy())
        measured = {**json.loads(output.read_text()), "samples": sampler.samples}
        placement = primaries(cluster, [p.object_name for p in manifest.partitions])
    finally:
        if cluster.exists():
            cluster.down()
        hosts.down()
        shutil.rmtree(cluster.dir, ignore_errors=True)
    return {
        **measured,
        "objects": len(manifest.partitions),
        "object_bytes": manifest.size_bytes,
        "rows": manifest.num_rows,
        "objects_per_host": placement,
        "setup_s": ready_s,
    }


def publish(cluster: LocalCluster, ds: skyhook.Dataset, spec: HostsSpec) -> dict:
    """The dataset's objects as Parquet files in an RGW bucket, RGW on the gateway node."""
    endpoint = Gateway(cluster).up()
    publish_dataset(ds, endpoint, BUCKET, DATASET)
    return endpoint.as_dict()


def primaries(cluster: LocalCluster, objects: list[str]) -> dict[str, int]:
    """How many of the objects each host serves as primary."""
    hosts = {
        str(osd): json.loads(cluster.ceph("osd", "find", str(osd), "-f", "json"))["crush_location"]["host"]
        for osd in cluster.osd_ids()
    }
    counts: dict[str, int] = {}
    for name in objects:
        host = hosts[str(cluster.primary_osd(name))]
        counts[host] = counts.get(host, 0) + 1
    return counts


def plot(report: dict, target: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = report["runs"]
    counts = [int(n) for n in runs]
    cases = list(next(iter(runs.values()))["results"])
    paths = list(next(iter(runs.values()))["results"][cases[0]])
    columns = 4
    rows = (len(cases) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for axis, case in zip(axes.flat, cases):
        for path in paths:
            axis.plot(counts, [runs[str(n)]["results"][case][path]["wall_s"] for n in counts], marker="o", label=path)
        axis.set_xscale("log", base=2)
        axis.set_xticks(counts, [str(n) for n in counts])
        axis.set_xlabel("hosts")
        axis.set_ylabel("seconds (median)")
        axis.set_title(case)
    axes.flat[0].legend(fontsize=8)
    for axis in list(axes.flat)[len(cases) :]:
        axis.set_visible(False)
    figure.suptitle(_configuration(report))
    figure.tight_layout()
    figure.savefig(target, dpi=100)
    plot_cpu(report, target.with_name(target.stem + "_cpu.png"))


def plot_cpu(report: dict, target: Path) -> None:
    """CPU over time per node during the 1 % / 3 columns runs at the largest N."""
    import matplotlib.pyplot as plt

    largest = max(report["runs"], key=int)
    run = report["runs"][largest]
    if "1% / 3 columns" not in run["results"]:  # a --cells run without it
        return
    cell = run["results"]["1% / 3 columns"]
    samples = run["samples"]
    figure, axes = plt.subplots(1, len(cell), figsize=(4 * len(cell), 3.5), sharey=True, squeeze=False)
    for axis, (path, values) in zip(axes[0], cell.items()):
        first = values["runs"][0]
        window = [s for s in samples if first["start_s"] - 0.2 <= s["t"] <= first["end_s"] + 0.2]
        for previous, sample in zip(window, window[1:]):
            span = sample["t"] - previous["t"]
            for node in sample["cpu"]:
                if node.startswith("h") or node == CLIENT:
                    used = (sample["cpu"][node] - previous["cpu"][node]) / span
                    axis.plot(
                        [previous["t"] - first["start_s"], sample["t"] - first["start_s"]],
                        [used, used],
                        color="tab:red" if node == CLIENT else "tab:blue",
                        alpha=1.0 if node == CLIENT else 0.4,
                        linewidth=1.5 if node == CLIENT else 0.8,
                    )
        axis.set_title(f"{path} ({first['wall_s']:.2f} s)")
        axis.set_xlabel("seconds")
    axes[0][0].set_ylabel("cores (red: client, blue: each host)")
    figure.suptitle(f"CPU over time, 1 % / 3 columns, {largest} hosts")
    figure.tight_layout()
    figure.savefig(target, dpi=100)


def _configuration(report: dict) -> str:
    spec = report["configuration"]
    return (
        f"lineitem SF{report['scale_factor']:g}; each host {spec['host_cpu']} cores, {spec['host_rate_mbit']} Mbit/s; "
        f"client {spec['client_cpu']} cores, {spec['client_rate_mbit']} Mbit/s"
    )


def summary(report: dict) -> list[str]:
    lines = [_configuration(report)]
    runs = report["runs"]
    for n, run in runs.items():
        lines.append(
            f"{n} hosts ({run['objects']} objects, primaries per host {sorted(run['objects_per_host'].values())}):"
        )
        for case, cell in run["results"].items():
            text = "  ".join(f"{path} {value['wall_s']:6.2f} s" for path, value in cell.items())
            baseline = min((cell[p]["wall_s"] for p in ("duckdb_rgw", "pyarrow_rgw") if p in cell), default=None)
            if baseline is not None:
                best = min(("duckdb_rgw", "pyarrow_rgw"), key=lambda p: cell[p]["wall_s"] if p in cell else 1e9)
                text += (
                    f"  | faster reader/pushdown {baseline / cell['pushdown']['wall_s']:.2f}x, "
                    f"client CPU pushdown/{best} {cell['pushdown']['client_cpu_s'] / cell[best]['client_cpu_s']:.2f}"
                )
            best_ours = min(cell["pushdown"]["wall_s"], cell["plain"]["wall_s"])
            text += f"  | auto/best {cell['auto']['wall_s'] / best_ours:.2f}"
            lines.append(f"  {case:22} {text}")
    if len(runs) > 1:
        low, high = min(runs, key=int), max(runs, key=int)
        lines.append(f"from {low} to {high} hosts, speed-up (time at {low} / time at {high}):")
        for case in runs[low]["results"]:
            ups = "  ".join(
                f"{path} {runs[low]['results'][case][path]['wall_s'] / runs[high]['results'][case][path]['wall_s']:.2f}x"
                for path in runs[low]["results"][case]
            )
            lines.append(f"  {case:22} {ups}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="4,8,16", help="numbers of emulated hosts, comma separated")
    parser.add_argument("--osds-per-host", type=int, default=1)
    parser.add_argument("--scale-factor", type=float, default=2.0)
    parser.add_argument(
        "--rows-per-object", type=int, default=100_000, help="objects small enough that every host serves several"
    )
    parser.add_argument("--host-cpu", type=float, default=0.1, help="each host's CPU quota, cores")
    parser.add_argument("--client-cpu", type=float, default=0.1, help="the client's CPU quota, cores")
    parser.add_argument("--host-rate", type=int, default=1000, help="each host's link, Mbit/s")
    parser.add_argument("--client-rate", type=int, default=1000, help="the client's link, Mbit/s")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs per path and cell, after one to warm")
    parser.add_argument("--cells", help="only these cells, e.g. '1%% / 3 columns,Q6' (default: all)")
    parser.add_argument("--no-gateway", dest="gateway", action="store_false", help="leave RGW and its readers out")
    parser.add_argument(
        "--primaries-only", dest="replica_reads", action="store_false", help="skyhook's calls to primaries only"
    )
    parser.add_argument("--data-dir", type=Path, default=Path("data"))
    parser.add_argument("--output", type=Path, default=Path("bench/results/scale_out.json"))
    parser.add_argument("--client", type=Path, help=argparse.SUPPRESS)  # run as the client node
    args = parser.parse_args()
    if args.client:
        args.output.write_text(json.dumps(client_run(json.loads(args.client.read_text()))))
        return
    lineitem = generate_lineitem(args.scale_factor, args.data_dir)
    args.thresholds = {**price_thresholds(lineitem), "100%": Decimal("0")}
    report: dict = {
        "benchmark": "scale_out",
        "scale_factor": args.scale_factor,
        "repeat": args.repeat,
        "machine": platform.node(),
        "cores": os.cpu_count(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": {},
    }
    if args.gateway:
        baseline_python()  # installed here: the client's namespace reaches no package registry
    with tempfile.TemporaryDirectory(prefix="skyhook-scale-out-") as scratch:
        for count in [int(n) for n in args.hosts.split(",")]:
            spec = HostsSpec(
                count,
                host_rate_mbit=args.host_rate,
                client_rate_mbit=args.client_rate,
                gateway_rate_mbit=args.client_rate,
                host_cpu=args.host_cpu,
                client_cpu=args.client_cpu,
            )
            report["configuration"] = {
                **spec.as_dict(),
                "osds_per_host": args.osds_per_host,
                "replica_reads": args.replica_reads,
            }
            print(f"{count} hosts", flush=True)
            report["runs"][str(count)] = run_hosts(spec, lineitem, args, Path(scratch))
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(report, indent=2))  # kept as it grows
    plot(report, args.output.with_suffix(".png"))
    print("\n".join(summary(report)))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
