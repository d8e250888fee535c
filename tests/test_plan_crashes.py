"""Crash injection into a plan's run: the runner is killed (SIGKILL) at every
step boundary and inside every kind of step (around stream writes, retirement
records, the manifest's compare-and-swap, garbage collection); on Ceph an OSD
is killed mid-plan too. Each time the dataset reads as pyarrow says, resuming
finishes the plan and fsck finds nothing orphaned."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from typing import Any

import pytest
from typer.testing import CliRunner

import skyhook
from skyhook import TransformTarget
from skyhook.cli import app
from skyhook.distributed import plan_store
from skyhook.distributed.plan import Plan
from skyhook.distributed.worker import work
from support.consistency import partition_objects
from support.tables import make_typed_table
from support.transform_answers import assert_answers

TABLE = make_typed_table(rows=3000)

CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(["skyhook", "pyarrow"])

# The split below runs: save "running"; group 0: begin, put 3 objects, save;
# retire, swap the manifest, save, collect (delete the 1 source); group 1 the
# same; save "done". A point is (backend call, its nth call, killed before or after it).
BOUNDARIES = [("replace_object_at", n, "after") for n in range(1, 6)]  # before step 0 .. after step 3
INSIDE = [
    ("put_object", 1, "before"),
    ("put_object", 3, "after"),  # the stream's last write, its step not saved
    ("put_object", 5, "before"),
    ("put_retirement", 1, "after"),  # retired, manifest not swapped
    ("replace_manifest", 1, "before"),
    ("replace_manifest", 1, "after"),  # swapped, step not saved
    ("delete_object", 1, "before"),  # collecting what the commit retired
    ("delete_object", 2, "after"),
]


def _killed_run(uri: str, plan_id: str, by_worker: bool, method: str, nth: int, when: str) -> None:
    """Runs the plan (as `skyhook worker` does if by_worker), killed at the nth call of method."""
    store = skyhook.connect(uri, retention_seconds=0)
    original, calls = getattr(store.backend, method), []

    def dies(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == nth and when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        result = original(*args, **kwargs)
        if len(calls) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(store.backend, method, dies)
    if by_worker:
        work(store.backend, lambda plan, outcome: None, once=True, retention_seconds=0)
    else:
        store.resume_plan(store.plan("t", plan_id))


def assert_no_orphans(store: skyhook.Store) -> None:
    """Once no earlier version is kept, storage holds exactly the current one's objects."""
    store.dataset("t").keep_versions(1)
    store.collect_garbage("t")
    named = [name for p in store.manifest("t").partitions for name in p.object_names]
    assert partition_objects(store, "t") == sorted(named)
    report = store.fsck(grace_seconds=0)
    assert report.clean and not report.retired and not report.in_progress, report


def kill_and_resume(store: skyhook.Store, plan: Plan, point: tuple[str, int, str], by_worker: bool) -> None:
    """The client (or the worker, if by_worker) running plan is killed at point;
    the other resumes it to the end. The answers are checked in between."""
    if by_worker:
        store.queue_plan(plan)
    killed = CONTEXT.Process(target=_killed_run, args=(store.uri, plan.id, by_worker, *point))
    killed.start()
    killed.join(timeout=300)
    assert killed.exitcode == -signal.SIGKILL
    assert store.plan("t", plan.id).state == "running"
    assert_answers(store, "t", TABLE)
    if point[0] == "put_object":  # fsck removes the stream's objects first: the commit streams them again
        store.fsck("t", repair=True, grace_seconds=0)
        assert_answers(store, "t", TABLE)
    if by_worker:
        store.resume_plan(store.plan("t", plan.id))
    else:  # the worker takes up a plan whose runner died
        worked = CliRunner().invoke(app, ["worker", "--once", "--store", store.uri])
        assert worked.exit_code == 0 and "1 plan(s) run" in worked.stdout, worked.output
    assert store.plan("t", plan.id).state == "done"


@pytest.mark.parametrize("point", BOUNDARIES + INSIDE, ids=lambda point: "-".join(map(str, point)))
def test_a_run_killed_anywhere_resumes(store, point):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1500)
    dataset.keep_versions(1)  # each commit's sources are collected at once: killed there too
    plan = dataset.plan_transform(TransformTarget(rows_per_object=500))
    assert [step.kind for step in plan.steps] == ["stream", "commit"] * 2
    kill_and_resume(store, plan, point, by_worker=(BOUNDARIES + INSIDE).index(point) % 2 == 1)
    assert [p.num_rows for p in store.manifest("t").partitions] == [500] * 6
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)


@pytest.mark.parametrize("point", [("put_object", 2, "after"), ("put_object", 4, "before")], ids=str)
def test_a_cluster_pass_killed_midway_resumes(store, point):
    """Six key ranges, three per pass: killed inside the first pass (two of its three
    targets written) or inside the second; the resumed run writes the pass again."""
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    probe = dataset.plan_transform(TransformTarget(rows_per_object=500, cluster_by="i32", pass_memory=1))
    store.cancel_plan(probe)
    per_range = probe.steps[0].memory
    target = TransformTarget(rows_per_object=500, cluster_by="i32", pass_memory=3 * per_range)
    plan = dataset.plan_transform(target)
    assert [len(step.ranges()) for step in plan.steps] == [3, 3, 0]
    killed = CONTEXT.Process(target=_killed_run, args=(store.uri, plan.id, False, *point))
    killed.start()
    killed.join(timeout=300)
    assert killed.exitcode == -signal.SIGKILL
    assert_answers(store, "t", TABLE)
    assert store.resume_plan(store.plan("t", plan.id)).state == "done"
    assert len(store.manifest("t").partitions) == 6
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)


# A split of two partitions into three objects each: per partition, a stream
# (3 puts) and a commit (retire, swap the manifest, delete the source object).
COLUMN_POINTS = [
    ("put_object", 2, "after"),  # inside the first stream
    ("replace_manifest", 1, "after"),  # the first partition swapped, its step not saved
    ("put_object", 4, "before"),  # before the second stream
    ("put_retirement", 1, "after"),  # the source retired, the manifest not swapped
    ("replace_manifest", 1, "before"),  # about to swap the first partition's objects in
]


@pytest.mark.parametrize("point", COLUMN_POINTS, ids=lambda point: "-".join(map(str, point)))
def test_a_column_objects_run_killed_midway_resumes(store, point):
    """Two partitions, each split into three column objects, killed at a point
    (the client or the worker, alternately; fsck repairs a stream's leftovers
    first); the other finishes the plan."""
    dataset = store.write_dataset("t", TABLE, rows_per_object=1500)
    plan = dataset.plan_transform(TransformTarget(column_objects=[["i32"], ["s", "f64"]]))
    assert [step.kind for step in plan.steps] == ["stream", "commit"] * 2
    kill_and_resume(store, plan, point, by_worker=COLUMN_POINTS.index(point) % 2 == 1)
    assert [len(p.object_names) for p in store.manifest("t").partitions] == [3, 3]
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)


def hold_lease(store: skyhook.Store, plan_id: str, runner: str, seconds: float) -> None:
    """Another host's runner takes the plan (by compare-and-swap, as a runner does), its lease ending in seconds."""
    stored, version = plan_store.load(store.backend, "t", plan_id)
    stored.state, stored.runner, stored.lease_expiry = "running", runner, time.time() + seconds
    plan_store.update(store.backend, stored, version)


def test_a_lease_is_renewed_while_a_step_runs_and_taken_over_only_once_expired(store, monkeypatch):
    dataset = store.write_dataset("t", TABLE, rows_per_object=3000)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=1000))
    monkeypatch.setattr("skyhook.distributed.lease.LEASE_SECONDS", 0.3)
    put, leases = store.backend.put_object, []

    def slow_put(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.4)  # longer than the lease: only its renewal keeps it
        leases.append(store.plan("t", plan.id).lease_expiry - time.time())
        return put(*args, **kwargs)

    monkeypatch.setattr(store.backend, "put_object", slow_put)
    dataset.run_plan(plan, max_steps=1)
    assert len(leases) == 3 and min(leases) > 0, leases
    monkeypatch.setattr(store.backend, "put_object", put)
    # Another host's runner holds a lease: refused until it expires, then taken over.
    hold_lease(store, plan.id, "elsewhere:1", 60)
    with pytest.raises(skyhook.InvalidRequestError, match="being run by elsewhere:1 .its lease runs until"):
        store.resume_plan(plan)
    status = CliRunner().invoke(app, ["design", "status", "t", "--store", store.uri])
    assert f"plan {plan.id}: run by elsewhere:1, its lease until" in status.stdout, status.stdout
    worked = CliRunner().invoke(app, ["worker", "--once", "--store", store.uri])
    assert "0 plan(s) run" in worked.stdout
    hold_lease(store, plan.id, "elsewhere:1", -1)
    # A run that loses its lease inside its commit (taken over after its last
    # save) stops before it publishes: the manifest as it was, its retirement withdrawn.
    before = store.manifest("t").generation
    retire = store.backend.put_retirement

    def taken_over(*args: Any) -> None:
        hold_lease(store, plan.id, "elsewhere:2", -1)
        retire(*args)

    monkeypatch.setattr(store.backend, "put_retirement", taken_over)
    with pytest.raises(skyhook.InvalidRequestError, match="is run by elsewhere:2 now"):
        store.resume_plan(plan)
    assert store.plan("t", plan.id).runner == "elsewhere:2"
    assert store.manifest("t").generation == before and not store.backend.retirement_records()
    monkeypatch.setattr(store.backend, "put_retirement", retire)
    assert_answers(store, "t", TABLE)
    assert store.resume_plan(plan).state == "done"
    assert store.manifest("t").generation != before
    # A plan stored before leases (a heartbeat instead) reads as one whose lease is over.
    record = json.loads(store.plan("t", plan.id).to_bytes())
    record["heartbeat"] = record.pop("lease_expiry")
    assert Plan.from_bytes(json.dumps(record).encode(), "an older plan").lease_expiry == 0.0
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)


def test_an_osd_killed_mid_plan(ceph_cluster, ceph_store):
    """The pool keeps 3 replicas (min_size 1): with one OSD down reads answer
    and the plan's writes go on; the OSD comes back, the plan finishes."""
    store = ceph_store
    dataset = store.write_dataset("t", TABLE, rows_per_object=1500)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=500))
    victim = ceph_cluster.primary_osd(plan.steps[2].sources[0])
    try:

        def kill_then_read(progress: skyhook.Plan, step: Any) -> None:
            if progress.steps_done == 1:  # group 0 streamed; its commit and group 1 run with the OSD down
                ceph_cluster.stop_osd(victim, kill=True)
                assert ceph_cluster.pid(f"osd.{victim}") is None
                assert_answers(store, "t", TABLE)

        dataset.run_plan(plan, kill_then_read, max_steps=3)
        assert_answers(store, "t", TABLE)
    finally:
        if ceph_cluster.pid(f"osd.{victim}") is None:
            ceph_cluster.start_osd(victim)
    assert store.resume_plan(store.plan("t", plan.id)).state == "done"
    assert [p.num_rows for p in store.manifest("t").partitions] == [500] * 6
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)


def test_a_copy_whose_lease_is_lost_before_it_publishes_creates_nothing(store, monkeypatch):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    plan = dataset.plan_transform(
        TransformTarget(rows_per_object=1000, filter="id >= 0", into="c", columns=["id", "i32"])
    )
    attribute = store.backend.object_attribute

    def taken_over(*args: Any) -> Any:  # the commit reads its objects' designs: taken over then
        hold_lease(store, plan.id, "elsewhere:3", -1)
        return attribute(*args)

    dataset.run_plan(plan, max_steps=1)
    monkeypatch.setattr(store.backend, "object_attribute", taken_over)
    with pytest.raises(skyhook.InvalidRequestError, match="is run by elsewhere:3 now"):
        store.resume_plan(plan)
    monkeypatch.setattr(store.backend, "object_attribute", attribute)
    assert "c" not in store.list_datasets()
    assert store.resume_plan(plan).state == "done"
    assert_answers(store, "c", TABLE.select(["id", "i32"]))


def test_an_osd_killed_mid_column_objects_split(ceph_cluster, ceph_store):
    """As above, the plan splitting two partitions into column objects: the
    second partition's primary OSD is killed once the first is streamed."""
    store = ceph_store
    dataset = store.write_dataset("t", TABLE, rows_per_object=1500)
    plan = dataset.plan_transform(TransformTarget(column_objects=[["i32"], ["s", "f64"]]))
    victim = ceph_cluster.primary_osd(plan.steps[2].sources[0])
    try:

        def kill_then_read(progress: skyhook.Plan, step: Any) -> None:
            if progress.steps_done == 1:  # the first commit and the second stream run with the OSD down
                ceph_cluster.stop_osd(victim, kill=True)
                assert ceph_cluster.pid(f"osd.{victim}") is None
                assert_answers(store, "t", TABLE)

        dataset.run_plan(plan, kill_then_read, max_steps=3)
        assert [len(p.object_names) for p in store.manifest("t").partitions] == [3, 1]
        assert_answers(store, "t", TABLE)  # scans zipping column objects, one of whose OSDs is down
    finally:
        if ceph_cluster.pid(f"osd.{victim}") is None:
            ceph_cluster.start_osd(victim)
    assert store.resume_plan(store.plan("t", plan.id)).state == "done"
    assert [len(p.object_names) for p in store.manifest("t").partitions] == [3, 3]
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)
