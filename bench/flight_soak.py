"""skyhook serve under a sustained load: 32 clients of 4 users mapped to 2
stores (namespaces) query for 10 minutes through the dataset endpoints and
SQL, each answer checked against the rows its own namespace holds (a tag
column tells the namespaces apart), while the server's anonymous memory is
sampled. Refusals (a user's slots all busy past the queue's wait) must be the
limit's one-line error; anything else counts as a failure.

    .venv/bin/python bench/flight_soak.py [--seconds 600] [--clients 32] [--cluster ./cluster]

Writes JSON and a PNG (memory and queries over time); exits 1 on any wrong
answer, cross-namespace row or unexpected error.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import matplotlib
import pyarrow as pa
import pyarrow.compute as pc
from harness import write_report

import skyhook
from skyhook.dev.cluster import LocalCluster
from skyhook.errors import LimitExceededError, SkyhookError
from skyhook.remote import password_hash

ROWS = 200_000
USERS = {"alice": "a", "bob": "b", "carol": "c", "dave": "d"}
NAMESPACE_OF = {"alice": "east", "bob": "east", "carol": "west", "dave": "west"}


def table_of(namespace: str) -> pa.Table:
    """Each namespace's rows: the same ids, its own tag and values."""
    offset = 0 if namespace == "east" else 7
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "tag": pa.array([namespace] * ROWS),
            "v": pa.array([(i * 31 + offset) % 1000 for i in range(ROWS)], pa.int64()),
        }
    )


def expected_answers(namespace: str) -> dict[str, object]:
    table = table_of(namespace)
    return {
        threshold: {
            "rows": pc.sum(pc.greater(table["v"], threshold)).as_py(),
            "total": pc.sum(table.filter(pc.greater(table["v"], threshold))["v"]).as_py(),
        }
        for threshold in (10, 500, 990)
    }


def anonymous_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def client(address: str, user: str, seconds: float, seed: int, results: multiprocessing.Queue) -> None:
    """One client's loop; puts its counts."""
    namespace = NAMESPACE_OF[user]
    answers = expected_answers(namespace)
    rng = random.Random(seed)
    counts = {"queries": 0, "refused": 0, "wrong": 0, "foreign_rows": 0, "errors": 0, "first_error": None}
    deadline = time.monotonic() + seconds
    with skyhook.connect(address, user=user, password=USERS[user]) as remote:
        dataset = remote.dataset("lineitem")
        while time.monotonic() < deadline:
            threshold = rng.choice(list(answers))
            try:
                if rng.random() < 0.5:
                    table = dataset.to_table(columns=["tag", "v"], filter=f"v > {threshold}")
                    rows, total = table.num_rows, pc.sum(table["v"]).as_py()
                    counts["foreign_rows"] += table.num_rows - pc.sum(pc.equal(table["tag"], namespace)).as_py()
                else:
                    query = f"select count(*) as n, sum(v) as total, min(tag) as a, max(tag) as b from lineitem where v > {threshold}"
                    row = remote.sql(query).to_pylist()[0]
                    rows, total = row["n"], row["total"]
                    counts["foreign_rows"] += int(row["a"] != namespace or row["b"] != namespace)
                counts["queries"] += 1
                counts["wrong"] += int(rows != answers[threshold]["rows"] or total != answers[threshold]["total"])
            except LimitExceededError as error:
                counts["refused"] += 1
                if "\n" in str(error):
                    counts["errors"] += 1
            except SkyhookError as error:
                counts["errors"] += 1
                counts["first_error"] = counts["first_error"] or f"{type(error).__name__}: {error}"
                if "cannot be reached" in str(error):
                    break  # the server is gone: the run has failed already
    results.put(counts)


def client_process(address: str, users: list[str], seconds: float, seed: int, results: multiprocessing.Queue) -> None:
    """Several clients as threads of one process (32 processes would not fit 2 cores' memory bandwidth)."""
    threads = [
        threading.Thread(target=client, args=(address, user, seconds, seed * 100 + index, results))
        for index, user in enumerate(users)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def stores(cluster: Path | None, directory: Path) -> dict[str, str]:
    if cluster is None:
        return {namespace: (directory / namespace).as_uri() for namespace in ("east", "west")}
    base = LocalCluster(cluster).up()
    return {namespace: f"{base}&namespace={namespace}" for namespace in ("east", "west")}


def plot(report: dict, target: Path) -> None:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = report["memory_samples"]
    figure, axis = plt.subplots(figsize=(8, 4))
    axis.plot([sample[0] for sample in samples], [sample[1] / 2**20 for sample in samples])
    axis.set_xlabel("seconds")
    axis.set_ylabel("server anonymous memory, MiB")
    axis.set_title(f"{report['configuration']['clients']} clients, {report['totals']['queries']} queries")
    figure.tight_layout()
    figure.savefig(target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--processes", type=int, default=4, help="client processes the clients are spread over")
    parser.add_argument("--queries-per-user", type=int, default=4)
    parser.add_argument("--cluster", type=Path, help="a local Ceph cluster directory (default: embedded stores)")
    parser.add_argument("--output", type=Path, default=Path("bench/results/flight_soak.json"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        uris = stores(options.cluster, Path(directory))
        for namespace, uri in uris.items():
            with skyhook.connect(uri) as store:
                store.write_dataset("lineitem", table_of(namespace), rows_per_object=20_000, mode="overwrite")
        users_file = Path(directory, "users.json")
        users_file.write_text(
            json.dumps(
                {
                    user: {"password": password_hash(password), "store": uris[NAMESPACE_OF[user]]}
                    for user, password in USERS.items()
                }  # fmt: skip
            )
        )
        server_log = open(options.output.with_suffix(".server.log"), "w")  # a crash's traceback too
        server = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "skyhook.cli", "serve", "--store", uris["east"],
             "--port", "0", "--users", str(users_file), "--queries-per-user", str(options.queries_per_user)],
            stdout=subprocess.PIPE, stderr=server_log, text=True,
        )  # fmt: skip
        address = server.stdout.readline().split(" at ")[1].strip()
        try:
            names = list(USERS)
            per_process = [[] for _ in range(options.processes)]
            for index in range(options.clients):
                per_process[index % options.processes].append(names[index % len(names)])
            context = multiprocessing.get_context("spawn")
            results = context.Queue()
            workers = [
                context.Process(target=client_process, args=(address, users, options.seconds, number, results))
                for number, users in enumerate(per_process)
            ]
            started = time.monotonic()
            for worker in workers:
                worker.start()
            samples = []
            while any(worker.is_alive() for worker in workers):
                samples.append((time.monotonic() - started, anonymous_bytes(server.pid)))
                time.sleep(5)
            counts = [results.get() for _ in range(options.clients)]
        finally:
            server.terminate()
            server.wait(timeout=60)
    totals = {
        key: sum(count[key] for count in counts) for key in ("queries", "refused", "wrong", "foreign_rows", "errors")
    }
    quarter = max(1, len(samples) // 4)
    report = {
        "machine": {"platform": platform.platform(), "cpus": multiprocessing.cpu_count()},
        "configuration": {key: str(value) for key, value in vars(options).items()},
        "totals": totals,
        "first_errors": sorted({count["first_error"] for count in counts if count["first_error"]}),
        "memory_first_quarter_max": max(sample[1] for sample in samples[:quarter]),
        "memory_last_quarter_max": max(sample[1] for sample in samples[-quarter:]),
        "memory_samples": samples,
    }
    write_report(report, options.output, plot)
    print(json.dumps({key: report[key] for key in ("totals", "first_errors")}, indent=1))
    print(f"server memory: {report['memory_first_quarter_max'] / 2**20:.0f} MiB in the first quarter, "
          f"{report['memory_last_quarter_max'] / 2**20:.0f} MiB in the last")  # fmt: skip
    if totals["wrong"] or totals["foreign_rows"] or totals["errors"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
