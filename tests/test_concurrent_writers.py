"""Writers that cannot lose data: concurrent creators and overwriters in separate
processes, writers killed mid-write and fsck, crafted manifests, the RADOS
operation timeout. Oracles are the pyarrow tables each writer wrote."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Callable

import pyarrow as pa
import pytest

import skyhook
from skyhook.catalog.manifest import Manifest
from skyhook.dev.cluster import LocalCluster
from support.assertions import assert_same_table
from support.consistency import assert_consistent, partition_objects
from support.stores import BACKENDS

WRITERS = 8
ROWS = 120
ROWS_PER_OBJECT = 40  # three objects per write: a window for the races

# Children fork from a clean server that has skyhook imported: fast, and no
# librados threads of the test process are inherited.
CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(["skyhook", "pyarrow"])


def writer_table(writer: int) -> pa.Table:
    return pa.table({"writer": pa.array([writer] * ROWS, pa.int32()), "row": pa.array(range(ROWS), pa.int64())})


def _write(uri: str, dataset: str, writer: int, mode: str, barrier, outcomes) -> None:
    try:
        with skyhook.connect(uri) as store:
            barrier.wait(timeout=60)
            store.write_dataset(dataset, writer_table(writer), mode=mode, rows_per_object=ROWS_PER_OBJECT)
        outcomes.put((writer, "ok"))
    except skyhook.DatasetExistsError:
        outcomes.put((writer, "exists"))
    except BaseException as error:
        outcomes.put((writer, repr(error)))


def run_writers(
    store: skyhook.Store, dataset: str, mode: str, meanwhile: Callable[[], None] = lambda: None
) -> dict[int, str]:
    """Outcomes of WRITERS processes writing dataset at once; meanwhile runs here as they write."""
    barrier, outcomes = CONTEXT.Barrier(WRITERS + 1), CONTEXT.Queue()
    processes = [
        CONTEXT.Process(target=_write, args=(store.uri, dataset, writer, mode, barrier, outcomes))
        for writer in range(WRITERS)
    ]
    for process in processes:
        process.start()
    barrier.wait(timeout=60)
    meanwhile()
    results = dict(outcomes.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=60)
    return results


def test_concurrent_creators_exactly_one_wins(store):
    outcomes = run_writers(store, "shared", "create")
    winners = [writer for writer, outcome in outcomes.items() if outcome == "ok"]
    assert len(winners) == 1, outcomes
    assert sorted(outcomes.values()) == ["exists"] * (WRITERS - 1) + ["ok"], outcomes
    assert store.list_datasets() == ["shared"]
    assert_consistent(store, "shared", writer_table(winners[0]))


def test_concurrent_overwriters_leave_one_input_and_no_orphans(store):
    store.write_dataset("shared", writer_table(-1), rows_per_object=ROWS_PER_OBJECT)
    outcomes = run_writers(store, "shared", "overwrite")
    assert set(outcomes.values()) == {"ok"}, outcomes
    final = store.dataset("shared").to_table()
    writer = final.column("writer")[0].as_py()
    assert writer in outcomes
    assert_consistent(store, "shared", writer_table(writer))


def test_deletes_racing_overwrites_leave_no_orphans(store):
    store.write_dataset("shared", writer_table(-1), rows_per_object=ROWS_PER_OBJECT)

    def delete_repeatedly() -> None:
        for _ in range(3):
            try:
                store.delete_dataset("shared")
            except skyhook.DatasetNotFoundError:
                pass

    outcomes = run_writers(store, "shared", "overwrite", meanwhile=delete_repeatedly)
    assert set(outcomes.values()) == {"ok"}, outcomes
    if store.list_datasets():  # an overwrite published after the last delete
        writer = store.dataset("shared").to_table().column("writer")[0].as_py()
        assert_consistent(store, "shared", writer_table(writer))
    else:
        assert partition_objects(store) == [] and store.fsck().clean


# -- writers that die, and fsck ---------------------------------------------


def _write_then_stop(uri: str, objects_before_stop: int, how: str, stopped, resume) -> None:
    """Write "victim"; after objects_before_stop objects either die or pause until resumed."""
    written = 0

    def die(*args: object) -> None:
        stopped.set()
        os._exit(1)

    def progress(rows: int, size: int) -> None:
        nonlocal written
        written += 1
        if written < objects_before_stop:
            return
        if how == "pause":
            stopped.set()
            resume.wait(timeout=60)
        elif store.backend.runs_in_process:
            os.replace = die  # mid-object: its temporary file written, not yet renamed
        else:
            die()

    with skyhook.connect(uri) as store:
        store.write_dataset("victim", writer_table(7), rows_per_object=ROWS_PER_OBJECT, progress=progress)


def start_writer(store: skyhook.Store, how: str):
    stopped, resume = CONTEXT.Event(), CONTEXT.Event()
    process = CONTEXT.Process(target=_write_then_stop, args=(store.uri, 2, how, stopped, resume))
    process.start()
    assert stopped.wait(timeout=60)
    return process, resume


def test_fsck_removes_the_objects_of_a_killed_writer(store):
    store.write_dataset("keep", writer_table(1), rows_per_object=ROWS_PER_OBJECT)
    process, _ = start_writer(store, "die")
    process.join(timeout=60)
    assert process.exitcode == 1
    left = partition_objects(store, "victim")
    temporaries = [name for name in left if name.startswith(".")]
    assert len(left) - len(temporaries) == 2 and len(temporaries) == store.backend.runs_in_process
    grace = 0 if store.backend.runs_in_process else 0.5  # RADOS knows a dead writer by its silence
    time.sleep(grace + 0.1)
    report = store.fsck(grace_seconds=grace)
    assert report.orphans == left and len(report.abandoned_writes) == 1 and not report.repaired
    assert partition_objects(store, "victim") == left  # only reported

    repaired = store.fsck(grace_seconds=grace, repair=True)
    assert repaired.orphans == left and repaired.repaired
    assert partition_objects(store, "victim") == []
    assert store.fsck(grace_seconds=grace).clean
    assert_consistent(store, "keep", writer_table(1))


def test_fsck_leaves_a_write_in_progress_alone(store):
    process, resume = start_writer(store, "pause")
    try:
        in_flight = partition_objects(store, "victim")
        assert len(in_flight) == 2
        report = store.fsck(repair=True)
        assert report.orphans == [] and len(report.in_progress) == 1 and report.abandoned_writes == []
        assert partition_objects(store, "victim") == in_flight
        assert store.fsck("victim").in_progress == report.in_progress
    finally:
        resume.set()
        process.join(timeout=60)
    assert process.exitcode == 0
    assert_consistent(store, "victim", writer_table(7))


def test_a_create_that_loses_the_race_deletes_its_own_objects(store):
    def create_meanwhile(rows: int, size: int) -> None:
        # Another creator publishes while this write stores its objects.
        if not store.list_datasets():
            store.write_dataset("t", writer_table(3))

    with pytest.raises(skyhook.DatasetExistsError):
        store.write_dataset("t", writer_table(2), rows_per_object=ROWS_PER_OBJECT, progress=create_meanwhile)
    assert_consistent(store, "t", writer_table(3))


# -- crafted manifests ------------------------------------------------------


def crafted(manifest: Manifest, object_name: str) -> bytes:
    first = dataclasses.replace(manifest.partitions[0], object_name=object_name)
    return dataclasses.replace(manifest, partitions=(first, *manifest.partitions[1:])).to_bytes()


def test_crafted_manifests_touch_nothing_outside_the_dataset(store, tmp_path):
    victim = store.write_dataset("victim", writer_table(1), rows_per_object=ROWS_PER_OBJECT)
    target = store.write_dataset("t", writer_table(2), rows_per_object=ROWS_PER_OBJECT).manifest
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    relative = tmp_path / "relative.txt"  # objects/../../relative.txt from the embedded store's objects/
    relative.write_text("keep me too")
    crafted_manifests = {
        "absolute path": crafted(target, str(outside)),
        "relative path": crafted(target, "../../relative.txt"),
        "another dataset's object": crafted(target, victim.manifest.partitions[0].object_name),
        "the dataset index": crafted(target, "_skyhook.datasets"),
        "a newline": crafted(target, target.partitions[0].object_name + "\n"),
        "another generation": crafted(target, target.partitions[0].object_name.replace(target.generation, "1" * 16)),
        "another dataset's manifest": victim.manifest.to_bytes(),
        "a bad generation": dataclasses.replace(target, generation="../x").to_bytes(),
        "garbage": b"ARROW1 but not really",
    }
    for case, data in crafted_manifests.items():
        assert store.backend.replace_manifest("t", data, store.backend.get_manifest("t").version), case
        with pytest.raises(skyhook.CorruptManifestError, match="manifest of dataset 't'"):
            store.dataset("t")
        with pytest.raises(skyhook.CorruptManifestError):
            store.delete_dataset("t")
        report = store.fsck(repair=True)
        assert report.orphans == [] and len(report.corrupt_manifests) == 1, (case, report)
        assert outside.read_text() == "keep me" and relative.read_text() == "keep me too", case
        assert_same_table(store.dataset("victim").to_table(), writer_table(1))
        assert store.list_datasets() == ["t", "victim"], case
        assert partition_objects(store, "t") == sorted(p.object_name for p in target.partitions), case

    # Overwriting replaces the corrupt manifest; the objects it named are then fsck's.
    store.write_dataset("t", writer_table(3), mode="overwrite")
    assert sorted(store.fsck(repair=True).orphans) == sorted(p.object_name for p in target.partitions)
    assert_consistent(store, "t", writer_table(3))
    assert_consistent(store, "victim", writer_table(1))


def test_fsck_repairs_the_list_of_datasets(store):
    if store.backend.runs_in_process:
        pytest.skip("the embedded store's list of datasets is its manifests directory")
    store.write_dataset("unlisted", writer_table(1))
    store.write_dataset("listed", writer_table(2))
    # What crashes between a manifest and its index entry leave behind.
    store.backend._pool.omap_remove("_skyhook.datasets", ["unlisted"])
    store.backend._pool.omap_set("_skyhook.datasets", {"ghost": b""})
    assert store.list_datasets() == ["ghost", "listed"]
    report = store.fsck()
    assert report.index_problems == [
        "ghost: listed, but has no manifest",
        "unlisted: has a manifest, but is not listed",
    ]
    assert store.fsck(repair=True).repaired and store.fsck().clean
    assert store.list_datasets() == ["listed", "unlisted"]
    assert_consistent(store, "unlisted", writer_table(1))


def test_names_with_a_trailing_newline_are_rejected(store):
    for call in (
        lambda: store.write_dataset("t\n", writer_table(1)),
        lambda: store.dataset("t\n"),
        lambda: store.delete_dataset("t\n"),
        lambda: store.fsck("t\n"),
    ):
        with pytest.raises(skyhook.InvalidRequestError, match="invalid dataset name"):
            call()
    assert store.list_datasets() == []


def test_embedded_object_names_stay_inside_the_store(tmp_path):
    store = skyhook.connect((tmp_path / "store").as_uri())
    (tmp_path / "outside").write_text("keep me")
    for name in ("../outside", str(tmp_path / "outside"), "..", "", "a/b"):
        with pytest.raises(skyhook.InvalidRequestError, match="invalid object name"):
            store.backend.delete_object(name)
    assert (tmp_path / "outside").read_text() == "keep me"


def test_fsck_from_the_command_line(tmp_path):
    uri = (tmp_path / "store").as_uri()
    with skyhook.connect(uri) as store:
        store.write_dataset("t", writer_table(1), rows_per_object=ROWS_PER_OBJECT)
        store.backend.put_object("t.1700000000abcdef.0", pa.py_buffer(b"left by a crash"), {})

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "skyhook.cli", "fsck", *args, "--store", uri],
            capture_output=True,
            text=True,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
        )

    found = cli()
    assert found.returncode == 1 and "t.1700000000abcdef.0" in found.stdout and "--repair" in found.stdout
    repaired = cli("t", "--repair")
    assert repaired.returncode == 0 and "orphan objects deleted: 1" in repaired.stdout
    with skyhook.connect(uri) as store:
        assert store.fsck().clean
        store.write_dataset("bad", writer_table(2))
        store.backend.replace_manifest("bad", b"garbage", store.backend.get_manifest("bad").version)
    bad_manifest = cli("--repair")
    assert bad_manifest.returncode == 1 and "corrupt manifests" in bad_manifest.stdout
    listing = subprocess.run(
        [sys.executable, "-m", "skyhook.cli", "ls", "--store", uri],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert listing.returncode == 0 and "corrupt manifest" in listing.stdout and "120" in listing.stdout
    bad_name = cli("t\n")
    assert bad_name.returncode == 1 and "invalid dataset name" in bad_name.stderr
    assert "Traceback" not in bad_name.stderr + listing.stderr + bad_manifest.stderr


# -- the RADOS operation timeout ----------------------------------------------


@pytest.mark.skipif("ceph" not in BACKENDS, reason="SKYHOOK_TEST_CEPH=0")
@pytest.mark.xdist_group("ceph")  # a cluster of its own
def test_a_placement_group_without_osds_times_out_clearly(tmp_path):
    # A cluster of its own: the session's cluster is shared by every test.
    cluster = LocalCluster(tmp_path / "cluster")
    cluster.up(osds=1, store="memstore")
    try:
        with skyhook.connect(f"{cluster.uri}&timeout=3") as store:
            assert "timeout=3" in store.uri
            dataset = store.write_dataset("t", writer_table(1))
            cluster.stop_osd(0)
            started = time.monotonic()
            with pytest.raises(skyhook.StorageTimeoutError, match="no answer within 3 s"):
                dataset.to_table()
            with pytest.raises(skyhook.StorageTimeoutError, match="timeout= in the store URI"):
                store.dataset("t")
            with pytest.raises(skyhook.StorageTimeoutError):
                store.fsck()
            assert time.monotonic() - started < 30
    finally:
        cluster.down()


def test_timeout_in_the_uri_is_checked():
    for uri in ("ceph://skyhook?conf=/x&timeout=soon", "ceph://skyhook?conf=/x&timeout=-1"):
        with pytest.raises(skyhook.InvalidRequestError, match="timeout=SECONDS"):
            skyhook.connect(uri)
