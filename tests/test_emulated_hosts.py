"""A small multi-host cluster (skyhook.dev.hosts): three emulated hosts, each a
network namespace with a shaped link and a CPU quota, one OSD each, host the
CRUSH failure domain; queries stay exact while a host is stopped, and nothing
is lost after it returns. Needs root (namespaces, tc, cgroups)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.backends.replica_reads import stable_mod
from skyhook.dev.cluster import LocalCluster
from skyhook.dev.gateway import Gateway
from skyhook.dev.hosts import CLIENT, EmulatedHosts, HostsSpec
from skyhook.dev.s3_baseline import duckdb_over_s3, publish_dataset, pyarrow_over_s3
from support.stores import BACKENDS

pytestmark = pytest.mark.skipif(
    "ceph" not in BACKENDS
    or os.geteuid() != 0
    or not all(shutil.which(tool) for tool in ("nsenter", "ip", "tc"))
    or not Path("/sys/fs/cgroup/cpu/tasks").exists(),
    reason="needs Ceph, root, nsenter, iproute2 and cgroup v1",
)

SPEC = HostsSpec(3, host_rate_mbit=200, client_rate_mbit=100, host_cpu=0.4, client_cpu=0.5, prefix="skyt", subnet=215)
ROWS = 400_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("hosts") / "cluster"
    cluster = LocalCluster(directory)
    try:
        cluster.up(osds=1, hosts=SPEC, worker=False)
        yield cluster
    finally:
        if cluster.exists():
            cluster.down()
        EmulatedHosts(SPEC).down()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def table() -> pa.Table:
    numbers = pa.array(range(ROWS), pa.int64())
    return pa.table({"x": numbers, "s": pc.cast(pc.multiply(numbers, 7), pa.string())})


@pytest.fixture(scope="module")
def dataset(cluster: LocalCluster, table: pa.Table) -> Iterator[skyhook.Dataset]:
    with skyhook.connect(cluster.uri) as store:
        yield store.write_dataset("hosts", table, rows_per_object=25_000)


def test_each_host_is_a_failure_domain_with_its_own_osd(cluster: LocalCluster):
    tree = json.loads(cluster.ceph("osd", "tree", "-f", "json"))
    hosts = {node["name"]: node["children"] for node in tree["nodes"] if node["type"] == "host"}
    assert sorted(hosts) == ["h0", "h1", "h2"] and all(len(children) == 1 for children in hosts.values())
    rule = json.loads(cluster.ceph("osd", "crush", "rule", "dump", "-f", "json"))[0]
    assert any(step.get("type") == "host" for step in rule["steps"])
    assert json.loads(cluster.ceph("osd", "pool", "get", "skyhook", "size", "-f", "json"))["size"] == 3
    for osd in cluster.osd_ids():
        pid = cluster.pid(f"osd.{osd}")
        host = json.loads(cluster.ceph("osd", "find", str(osd), "-f", "json"))["crush_location"]["host"]
        cgroups = Path(f"/proc/{pid}/cgroup").read_text()
        assert f"cpu:/skyhook-skyt/{host}\n" in cgroups and f"freezer:/skyhook-skyt/{host}\n" in cgroups
        assert subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True).stdout.strip() == (
            f"skyt-{host}"
        )


def test_the_client_reads_across_its_shaped_link(cluster: LocalCluster, dataset: skyhook.Dataset):
    """A plain read as the client node moves the objects over its 100 Mbit/s link:
    the link counts those bytes, and they take at least their time at that rate."""
    hosts = cluster.hosts()
    script = (
        "import json, sys, time, skyhook\n"
        f"store = skyhook.connect({cluster.uri!r})\n"
        "started = time.perf_counter()\n"
        "scanner = store.dataset('hosts').scanner(pushdown=False)\n"
        "rows = scanner.to_table().num_rows\n"
        "print(json.dumps([rows, scanner.stats.bytes_read, time.perf_counter() - started]))\n"
    )
    received_before, _ = hosts.link_bytes(CLIENT)
    cpu_before = hosts.cpu_seconds()[CLIENT]
    result = subprocess.run(
        [*hosts.command_prefix(CLIENT), sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert result.returncode == 0, result.stderr
    rows, bytes_read, seconds = json.loads(result.stdout.strip().splitlines()[-1])
    received = hosts.link_bytes(CLIENT)[0] - received_before
    assert rows == ROWS
    assert received >= bytes_read > 0
    assert seconds >= 0.9 * bytes_read / (SPEC.client_rate_mbit * 1e6 / 8)
    assert hosts.cpu_seconds()[CLIENT] > cpu_before  # the client's work is charged to its cgroup


def test_reading_calls_are_spread_over_every_host_holding_a_copy(cluster: LocalCluster, dataset: skyhook.Dataset):
    """Every host holds a copy of every object here: the calls of a scan are served
    in equal shares (at most one apart) whatever CRUSH made primary, at once after
    the write (the writer settled the placement groups, so no replica sends a read
    back to its primary); the placement the client works out is the monitors'."""
    names = [partition.object_name for partition in dataset.manifest.partitions]
    pg_num = json.loads(cluster.ceph("osd", "pool", "get", "skyhook", "pg_num", "-f", "json"))["pg_num"]

    def served() -> dict[int, int]:
        return {
            osd: json.loads(cluster.ceph("tell", f"osd.{osd}", "perf", "dump"))["osd"]["op_r"]
            for osd in cluster.osd_ids()
        }

    with skyhook.connect(cluster.uri) as store:
        seeds = store.backend._pool.placement_seeds(names)
        for name, seed in zip(names, seeds):
            mapped = json.loads(cluster.ceph("osd", "map", "skyhook", name, "-f", "json"))
            assert mapped["pgid"] == f"{mapped['pool_id']}.{stable_mod(seed, pg_num):x}"
        scanner = store.dataset("hosts").scanner(
            columns=["x"], filter=pc.multiply(pc.field("x"), 2) < 6000, pushdown=True
        )
        before = served()
        assert scanner.to_table().num_rows == 3000
        after = served()
    shares = sorted(after[osd] - before[osd] for osd in before)
    assert sum(shares) == len(names) and shares[-1] - shares[0] <= 1, shares


def test_the_cost_model_samples_one_object_per_host(cluster: LocalCluster, dataset: skyhook.Dataset):
    """Two of the three hosts work on a sampled object each while the third and
    two waves more start: the cost model measures two before it decides for the
    other fourteen."""
    with skyhook.connect(cluster.uri) as store:
        scanner = store.dataset("hosts").scanner(columns=["x"], filter=pc.multiply(pc.field("x"), 2) < 6000)
        assert scanner.to_table().num_rows == 3000
        assert store.backend.storage_hosts == 3
    assert scanner.stats.cost_model.startswith("2 sampled objects (0..1):"), scanner.stats.cost_model
    assert "for 14 objects" in scanner.stats.cost_model


def test_a_host_stopped_during_queries_loses_no_row(cluster: LocalCluster, dataset: skyhook.Dataset, table):
    """h1 frozen mid-run: every query still answers exactly (replicas on the other
    hosts serve once the monitor marks its OSD down); after it returns fsck is clean."""
    expected = {
        limit: pc.sum(pc.filter(table["x"], pc.less(table["x"], limit))).as_py()
        for limit in range(10_000, 400_000, 30_000)
    }
    answers: list[tuple[int, int | None]] = []
    stop = threading.Event()

    def query() -> None:
        with skyhook.connect(cluster.uri) as store:
            ds = store.dataset("hosts")
            while not stop.is_set():
                for number, limit in enumerate(expected):
                    scanned = ds.to_table(columns=["x"], filter=pc.field("x") < limit, pushdown=number % 2 == 0)
                    answers.append((limit, pc.sum(scanned["x"]).as_py()))

    worker = threading.Thread(target=query)
    worker.start()
    try:
        time.sleep(1)
        cluster.stop_host("h1")
        time.sleep(15)  # past the heartbeat grace: h1's OSD is marked down
        cluster.start_host("h1")
        time.sleep(3)
    finally:
        cluster.start_host("h1")
        stop.set()
        worker.join(120)
    assert not worker.is_alive()
    assert len(answers) >= 50
    assert all(answer == expected[limit] for limit, answer in answers)
    with skyhook.connect(cluster.uri) as store:
        assert store.dataset("hosts").count_rows() == ROWS
        report = store.fsck()
    assert report.clean, report


def test_a_host_stopped_during_a_transform_loses_nothing(cluster: LocalCluster, table):
    """Objects rewritten in storage while h2 is frozen: the transform finishes
    (calls to h2's OSD go to the new primary once it is marked down), every
    row is kept, and fsck is clean after h2 returns."""
    with skyhook.connect(cluster.uri) as store:
        ds = store.write_dataset("moved", table, rows_per_object=25_000)
        report: list = []
        worker = threading.Thread(
            target=lambda: report.append(ds.transform(skyhook.Design("ipc", column_groups="each")))
        )
        worker.start()
        try:
            time.sleep(0.5)
            cluster.stop_host("h2")
            time.sleep(12)
        finally:
            cluster.start_host("h2")
        worker.join(180)
        assert not worker.is_alive() and report
        moved = store.dataset("moved")
        assert set(moved.design().column("format").to_pylist()) == {"ipc"}
        assert moved.to_table().sort_by("x").equals(table)
        assert store.fsck().clean


def test_the_gateway_serves_the_same_rows_to_duckdb_and_pyarrow(cluster: LocalCluster, dataset, table):
    """The S3 baseline: RGW on the gateway node, the dataset's objects as Parquet
    files in a bucket, read by DuckDB (httpfs) and pyarrow with a filter and columns."""
    endpoint = Gateway(cluster).up()
    assert endpoint.url.startswith(f"http://{SPEC.address('gateway')}:")
    files = publish_dataset(dataset, endpoint, "tests", "hosts")
    assert len(files) == len(dataset.manifest.partitions)
    expected = dataset.to_table(columns=["x", "s"], filter=pc.field("x") < 3000).sort_by("x")
    read = pyarrow_over_s3(endpoint, "tests", "hosts", dataset.schema)
    assert read.to_table(columns=["x", "s"], filter=pc.field("x") < 3000).sort_by("x").equals(expected)
    duck = duckdb_over_s3(endpoint, "tests", "hosts", view="hosts")
    try:
        assert duck.sql("select x, s from hosts where x < 3000 order by x").equals(expected)
        assert duck.sql("select x from hosts", fetch=False) == ROWS
    finally:
        duck.close()
    Gateway(cluster).down()
    assert Gateway(cluster).up() == endpoint  # the same user after a restart


def test_spec_errors_are_clear():
    with pytest.raises(skyhook.SkyhookError, match="between 1 and 64 hosts"):
        HostsSpec(0)
    with pytest.raises(skyhook.SkyhookError, match="no emulated node"):
        SPEC.address("h-1")


def test_hosts_come_down_with_processes_left_in_them():
    hosts = EmulatedHosts(HostsSpec(1, prefix="skyd", subnet=216))
    hosts.up()
    try:
        left = [subprocess.Popen([*hosts.command_prefix("h0"), "sleep", "600"]) for _ in range(2)]
        deadline = time.monotonic() + 10
        while len(Path("/sys/fs/cgroup/cpu/skyhook-skyd/h0/cgroup.procs").read_text().split()) < 2:
            assert time.monotonic() < deadline, "the sleeps never joined the host's cgroup"
            time.sleep(0.05)
        hosts.freeze("h0")
        hosts.down()  # a starting daemon left behind, frozen even: killed, not an error
        assert all(process.wait(timeout=10) == -9 for process in left)
        assert not Path("/sys/fs/cgroup/cpu/skyhook-skyd").exists()
    finally:
        hosts.down()
