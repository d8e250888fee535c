"""The real Ceph cluster: OSD failures mid-scan, restarts, bad input against a
live OSD, and the cluster tooling itself."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.dev.cluster import ClusterError, LocalCluster
from skyhook.rpc.reply import decode_reply
from support.assertions import assert_same_table

F = pc.field
TABLE = pa.table(
    {
        "k": pa.array(range(240_000)),
        "v": pa.array([i % 1000 * 0.25 for i in range(240_000)]),
        "tag": pa.array([f"t{i % 31}" for i in range(240_000)]),
    }
)


def osd_pids(cluster: LocalCluster) -> dict[int, int]:
    return {osd: cluster.pid(f"osd.{osd}") for osd in cluster.osd_ids()}


def test_osd_killed_mid_scan_does_not_change_the_result(ceph_cluster, ceph_store):
    dataset = ceph_store.write_dataset("ft", TABLE, rows_per_object=8000)  # 30 objects
    filter = (F("v") > 200.0) & (F("tag") != "t3")
    expected = dataset.to_table(columns=["k", "tag"], filter=filter, pushdown=False)
    assert expected.equals(TABLE.filter(filter).select(["k", "tag"]))

    batches = dataset.scanner(columns=["k", "tag"], filter=filter, batch_size=4096).to_batches()
    received = [next(batches)]
    # The primary of an object whose call is still in flight or not yet sent.
    victim = ceph_cluster.primary_osd(dataset.manifest.partitions[20].object_name)
    ceph_cluster.stop_osd(victim, kill=True)
    assert ceph_cluster.pid(f"osd.{victim}") is None
    received.extend(batches)
    assert_same_table(pa.Table.from_batches(received), expected)

    ceph_cluster.start_osd(victim)
    assert_same_table(ceph_store.dataset("ft").to_table(), TABLE)


def test_bad_input_leaves_every_osd_alive_and_serving(ceph_cluster, ceph_store):
    dataset = ceph_store.write_dataset("victim", TABLE.slice(0, 20_000), rows_per_object=5000)
    before = osd_pids(ceph_cluster)
    backend = ceph_store.backend
    name = dataset.manifest.partitions[0].object_name
    for request in (
        b"",
        b"\x00" * 3,
        b"SKRQ" + b"\xff" * 60,
        b"SKRQ\x01\x00\x00\x00\xff\xff\xff\x7f" + b"\x00" * 4,
        bytes(range(256)) * 40,
    ):
        reply = decode_reply(backend.call(name, "scan", request))
        assert reply.code != 0 and reply.message
    backend.put_object(
        dataset.manifest.partitions[1].object_name,
        pa.py_buffer(b"PAR1" + b"\x00" * 5000 + b"PAR1"),
        {"skyhook.format": "parquet"},
    )
    with pytest.raises(skyhook.CorruptObjectError):
        dataset.to_table()
    with pytest.raises(skyhook.UnknownColumnError):
        dataset.to_table(filter=F("nope") == 1)
    assert osd_pids(ceph_cluster) == before, "an OSD restarted"
    assert dataset.to_table(filter=F("k") < 10).num_rows == 10


def test_whole_cluster_restart_keeps_datasets(ceph_cluster, ceph_store):
    ceph_store.write_dataset("durable", TABLE, rows_per_object=60_000)
    uri = ceph_store.uri
    ceph_store.close()
    ceph_cluster.down()
    assert all(pid is None for pid in osd_pids(ceph_cluster).values())
    ceph_cluster.up()
    with skyhook.connect(uri) as reopened:
        assert reopened.list_datasets() == ["durable"]
        assert_same_table(reopened.dataset("durable").to_table(), TABLE)


def test_cli_against_ceph(ceph_cluster, tmp_path):
    uri = f"{ceph_cluster.uri}&namespace=cli-{uuid.uuid4().hex[:8]}"
    source = tmp_path / "t.arrow"
    with pa.OSFile(str(source), "wb") as sink, pa.ipc.new_file(sink, TABLE.schema) as writer:
        writer.write_table(TABLE)

    def run(*args):
        result = subprocess.run(
            [sys.executable, "-m", "skyhook.cli", *args, "--store", uri],
            capture_output=True,
            text=True,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    assert "imported 240,000 rows" in run("import", "t", str(source))
    assert "t" in run("ls")
    assert "rows_returned" in run("query", "t", "--where", "k < 5")


def test_port_taken_is_a_clear_error(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        with pytest.raises(ClusterError, match=f"port {port} on 127.0.0.1 is taken"):
            LocalCluster(tmp_path / "c").up(port=port)


def test_memstore_cluster_up_scan_down(tmp_path):
    """And the transform worker the cluster starts beside its OSDs runs a queued plan; it stops with the cluster."""
    cluster = LocalCluster(tmp_path / "mem")
    uri = cluster.up(osds=1, store="memstore")
    try:
        with skyhook.connect(uri) as store:
            dataset = store.write_dataset("m", TABLE.slice(0, 1000), rows_per_object=250)
            assert dataset.count_rows(filter=F("k") >= 990) == 10
            assert cluster.pid("worker") is not None
            plan = store.queue_plan(dataset.plan_transform(skyhook.TransformTarget(rows_per_object=1000)))
            deadline = time.monotonic() + 120
            while store.plan("m", plan.id).state != "done" and time.monotonic() < deadline:
                time.sleep(0.5)
            assert store.plan("m", plan.id).state == "done"
            assert [p.num_rows for p in store.manifest("m").partitions] == [1000]
            assert_same_table(store.dataset("m").to_table(), TABLE.slice(0, 1000))
        assert f"plan {plan.id} of m: done" in (tmp_path / "mem" / "log" / "worker.log").read_text()
        status = cluster.status()
        assert status["store"] == "memstore" and status["osds"] == {"osd.0": "up"}
        assert status["daemons"]["worker"] is not None
    finally:
        cluster.down()
    assert all(pid is None for pid in cluster.status()["daemons"].values())


def test_a_client_that_exits_without_closing_prints_no_leak_warning(ceph_cluster):
    uri = f"{ceph_cluster.uri}&namespace=leak-{uuid.uuid4().hex[:8]}"
    program = (
        "import skyhook, pyarrow as pa\n"
        f"store = skyhook.connect({uri!r})\n"
        "dataset = store.write_dataset('t', pa.table({'k': list(range(1000))}), rows_per_object=300)\n"
        "import pyarrow.compute as pc\n"
        "assert dataset.to_table(filter=pc.field('k') < 10).num_rows == 10\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "leaked" not in result.stderr, result.stderr
