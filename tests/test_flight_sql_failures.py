"""skyhook serve when things fail under it: a server killed during a query and
started again, a load (DoPut) cut off by its client or by the server's death,
an OSD killed while a query streams through the server. Other queries go on,
answers stay exact, and nothing is left half-written."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest

pytest.importorskip("pyarrow.flight")

import skyhook  # noqa: E402
from skyhook.errors import StorageError  # noqa: E402
from skyhook.remote import password_hash, start_server  # noqa: E402
from support.assertions import assert_same_table  # noqa: E402

ROWS = 40_000
TABLE = pa.table({"id": pa.array(range(ROWS), pa.int64()), "v": pa.array([i % 977 * 0.5 for i in range(ROWS)])})


def serve(uri: str, users: str | None = None) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "skyhook.cli", "serve", "--store", uri, "--port", "0"]
    process = subprocess.Popen(
        command + (["--users", users] if users else []), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    line = process.stdout.readline()
    assert " at " in line, line
    return process, line.split(" at ")[1].strip()


@pytest.fixture
def embedded(tmp_path):
    """The servers these tests start open the store themselves: an embedded one
    (a Ceph pool is the same code; the OSD test below is Ceph's own)."""
    with skyhook.connect(tmp_path / "store") as opened:
        yield opened


def test_a_server_killed_during_a_query_comes_back_with_the_same_answers(embedded):
    store = embedded
    store.write_dataset("lineitem", TABLE, rows_per_object=5000)
    process, address = serve(store.uri)
    try:
        opened = skyhook.connect(address)
        stream = opened.dataset("lineitem").to_batches()
        first = next(stream)
        process.kill()
        process.wait()
        with pytest.raises(StorageError):
            for _ in stream:
                pass
        assert first.num_rows > 0
        process, address = serve(store.uri)
        with skyhook.connect(address) as again:
            assert_same_table(again.dataset("lineitem").to_table(), TABLE)
            assert again.fsck()["clean"]
    finally:
        process.kill()


LOADER = textwrap.dedent(
    """
    import sys, time
    import pyarrow as pa
    import skyhook
    with skyhook.connect(sys.argv[1], user="writer", password="w") as remote:
        batches = (pa.record_batch({"id": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64())}) for i in range(10**6))
        def slow():
            for number, batch in enumerate(batches):
                if number == 20:
                    print("loading", flush=True)
                if number >= 20:
                    time.sleep(0.05)
                yield batch
        remote.write_dataset("loaded", pa.RecordBatchReader.from_batches(pa.schema([("id", pa.int64())]), slow()))
    """
)


@pytest.mark.parametrize("killed", ["client", "server"])
def test_a_load_cut_off_leaves_nothing_half_written(embedded, tmp_path, killed):
    store = embedded
    store.write_dataset("lineitem", TABLE)
    users = tmp_path / "users.json"
    users.write_text('{"writer": {"password": "%s", "role": "writer"}}' % password_hash("w"))
    process, address = serve(store.uri, str(users))
    loader = subprocess.Popen(
        [sys.executable, "-c", LOADER, address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert loader.stdout.readline().strip() == "loading", loader.stderr.read()
        time.sleep(0.5)  # batches are in the server, not committed
        (loader if killed == "client" else process).send_signal(signal.SIGKILL)
        loader.wait(timeout=60)
        if killed == "server":
            process.wait()
            process, address = serve(store.uri, str(users))
        with skyhook.connect(address, user="writer", password="w") as remote:
            deadline = time.monotonic() + 30
            while killed == "client" and not remote.fsck()["clean"] and time.monotonic() < deadline:
                time.sleep(0.2)  # the server is still unwinding the cut-off load
            assert remote.list_datasets() == ["lineitem"]
            # A dead server leaves the objects of its load unpublished (never read); fsck clears them.
            assert remote.fsck()["clean"] == (killed == "client")
            assert_same_table(remote.dataset("lineitem").to_table(), TABLE)
        with skyhook.connect(store.uri) as reopened:
            report = reopened.fsck(repair=True)
            assert reopened.list_datasets() == ["lineitem"]
            assert reopened.fsck().clean, report
    finally:
        loader.kill()
        process.kill()


def test_an_osd_killed_while_a_query_streams_through_the_server(ceph_cluster, ceph_store):
    dataset = ceph_store.write_dataset("ft", TABLE, rows_per_object=2000)  # 20 objects
    server = start_server(ceph_store)
    victim = None
    try:
        with skyhook.connect(f"grpc://localhost:{server.port}") as remote:
            query = "select id, v from ft where v > 100 order by id"
            expected = ceph_store.sql(query)
            batches = remote.dataset("ft").to_batches(filter="v > 100")
            received = [next(batches)]
            victim = ceph_cluster.primary_osd(dataset.manifest.partitions[15].object_name)
            ceph_cluster.stop_osd(victim, kill=True)
            received.extend(batches)
            streamed = pa.Table.from_batches(received).sort_by("id")
            assert_same_table(streamed, expected)
            assert_same_table(remote.sql(query), expected)
    finally:
        server.shutdown()
        if victim is not None:
            ceph_cluster.start_osd(victim)


def test_the_dev_cluster_starts_and_stops_a_server(ceph_cluster):
    import socket
    import uuid

    with socket.socket() as probe:  # a free port
        probe.bind(("localhost", 0))
        port = probe.getsockname()[1]
    name = f"served_{uuid.uuid4().hex[:8]}"
    with skyhook.connect(ceph_cluster.uri) as default:  # the server serves the pool's default namespace
        default.write_dataset(name, TABLE)
        address = ceph_cluster.start_server(port)
        try:
            with skyhook.connect(address) as remote:
                assert name in remote.list_datasets()
                expected = TABLE.filter(pa.compute.less(TABLE["v"], 10))
                assert_same_table(remote.dataset(name).to_table(filter="v < 10"), expected)
        finally:
            ceph_cluster.stop_server()
            default.delete_dataset(name)
    with pytest.raises(StorageError):
        skyhook.connect(address).list_datasets()
