"""Running a stored plan step by step. Progress is saved in the plan after
every step, so a run that crashed or was killed resumes at its first step not
done (a half-written target is written again). While it runs, each group's new
objects are registered as a write in progress (fsck leaves them alone); once
the runner is dead they are orphans to fsck until a resumed run commits them,
and a commit whose objects fsck removed first streams them again."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.backends.object_store import PendingWrite
from skyhook.catalog.design import Design, ObjectDesign
from skyhook.catalog.manifest import Manifest
from skyhook.design.transform import transform_objects
from skyhook.distributed import plan_store
from skyhook.distributed.commit import commit_copy, commit_in_place, object_designs
from skyhook.distributed.lease import PlanLease, holder_alive
from skyhook.distributed.object_copy import run_copy
from skyhook.distributed.plan import WRITES, Plan, Step
from skyhook.distributed.schedule import Pacer, Schedule, in_order
from skyhook.distributed.stream import run_stream
from skyhook.errors import (
    DatasetChangedError,
    DatasetNotFoundError,
    InvalidRequestError,
    first_line,
)
from skyhook.execution.workload_log import read_log
from skyhook.ingest.garbage_collection import DEFAULT_RETENTION_SECONDS, collect_after_write

#: Called after each step with the plan (its progress) and the step done.
PlanProgress = Callable[[Plan, Step], None]


def check_runnable(plan: Plan) -> None:
    if plan.finished:
        raise InvalidRequestError(f"plan {plan.id} of {plan.dataset!r} is {plan.state}: there is nothing to run")
    if holder_alive(plan):
        until = time.strftime("%H:%M:%S", time.localtime(plan.lease_expiry))
        raise InvalidRequestError(
            f"plan {plan.id} of {plan.dataset!r} is being run by {plan.runner} (its lease runs until {until})"
        )


def run_plan(
    backend: Backend,
    plan: Plan,
    progress: PlanProgress | None = None,
    max_steps: int | None = None,
    schedule: Schedule | None = None,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
) -> Plan:
    """Runs (or resumes) the stored plan's steps not done, at most max_steps of
    them (then it is paused), under schedule (None: the one it has), holding
    the plan's lease; returns the plan as stored afterwards. Each commit then
    collects the dataset's garbage due after retention_seconds, as writes do."""
    if max_steps is not None and (isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 0):
        raise InvalidRequestError(f"max_steps must be a non-negative integer, not {max_steps!r}")
    plan, version = plan_store.load(backend, plan.dataset, plan.id)
    check_runnable(plan)
    _schedule(backend, plan, schedule)
    plan.state, plan.error = "running", ""
    lease = PlanLease(backend, plan, version)
    pending: dict[int, PendingWrite] = {}
    pacer = Pacer(plan.rate)
    try:
        todo, ran = [step for step in plan.steps if not step.done], 0
        while todo:
            if max_steps is not None and ran >= max_steps:
                plan.state = "paused"
                break
            batch = _next_batch(todo, plan.parallel if max_steps is None else min(plan.parallel, max_steps - ran))
            for step in batch:
                if step.group not in pending and step.kind != "local":
                    pending[step.group] = backend.begin_write(plan.into or plan.dataset, plan.groups[step.group])
            try:
                _run_batch(backend, plan, batch, pending, lease)
            except DatasetChangedError:
                for step in batch:
                    _drop_uncommitted(backend, plan, step.group)  # they can never be committed
                raise
            for step in batch:
                step.done = True
                if step.kind == "commit":
                    pending.pop(step.group).finish()
            ran, todo = ran + len(batch), todo[len(batch) :]
            pacer.account(sum(step.bytes_read + step.bytes_written for step in batch))
            lease.save()
            if any(step.kind == "commit" and plan.into is None for step in batch):
                collect_after_write(backend, retention_seconds, plan.dataset)
            for step in batch if progress else []:
                progress(plan, step)
        else:
            plan.state = "done"
        lease.save()
    except BaseException as error:
        lease.release()
        plan.state, plan.error = "failed", first_line(error)
        if lease.lost is None:
            _record_failure(backend, plan)
        raise
    finally:
        lease.release()
        for write in pending.values():
            write.finish()
    return plan


def _schedule(backend: Backend, plan: Plan, schedule: Schedule | None) -> None:
    """Puts plan under schedule: its settings, and its steps in the schedule's order."""
    if schedule is None:
        return
    if not isinstance(schedule, Schedule):
        raise InvalidRequestError(f"schedule must be a skyhook.Schedule, not {type(schedule).__name__}")
    plan.rate, plan.parallel, plan.order = schedule.rate, schedule.parallel, schedule.order
    records = read_log(backend, plan.dataset) if schedule.order == "working-set" else []
    plan.steps = in_order(plan, schedule.order, records)


def _next_batch(todo: list[Step], parallel: int) -> list[Step]:
    """The next steps to run together: up to parallel stream steps in a row, else one step."""
    batch = [todo[0]]
    while batch[-1].kind in WRITES and len(batch) < min(parallel, len(todo)) and todo[len(batch)].kind in WRITES:
        batch.append(todo[len(batch)])
    return batch


def _run_batch(
    backend: Backend, plan: Plan, batch: list[Step], pending: dict[int, PendingWrite], lease: PlanLease
) -> None:
    if len(batch) == 1:
        _run_step(backend, plan, batch[0], pending.get(batch[0].group), lease)
        return
    with ThreadPoolExecutor(len(batch)) as pool:
        list(pool.map(lambda step: _run_step(backend, plan, step, pending.get(step.group), lease), batch))


def cancel_plan(backend: Backend, plan: Plan) -> Plan:
    """Cancels a stored plan: groups committed stay, the new objects of groups not
    committed are deleted (a running runner stops after its step)."""
    plan, version = plan_store.load(backend, plan.dataset, plan.id)
    if plan.finished:
        raise InvalidRequestError(f"plan {plan.id} of {plan.dataset!r} is {plan.state} already")
    plan.state = "cancelled"
    plan_store.update(backend, plan, version)
    if not holder_alive(plan):
        for group in range(len(plan.groups)):
            _drop_uncommitted(backend, plan, group)
    return plan


def _drop_uncommitted(backend: Backend, plan: Plan, group: int) -> None:
    """Deletes the new objects of a group not committed (never published: no reader has them)."""
    if any(step.done for step in plan.steps if step.group == group and step.kind == "commit"):
        return
    for step in plan.steps:
        if step.group == group and step.kind in WRITES:
            for name in step.targets:
                backend.delete_object(name)


def queue_plan(backend: Backend, plan: Plan, schedule: Schedule | None = None) -> Plan:
    """Hands a stored plan to ``skyhook worker`` (to run under schedule, if given)."""
    plan, version = plan_store.load(backend, plan.dataset, plan.id)
    check_runnable(plan)
    _schedule(backend, plan, schedule)
    plan.state = "queued"
    plan_store.update(backend, plan, version)
    return plan


def _run_step(backend: Backend, plan: Plan, step: Step, pending: PendingWrite | None, lease: PlanLease) -> None:
    """pending: the write in progress of the step's group (None for a local transform, which writes none)."""
    if pending is None:
        manifest = _manifest(backend, plan.dataset)
        transform_objects(backend, manifest, _as_design(plan.target_design()), step.sources)
    elif step.kind in WRITES:
        _write(backend, plan, step, _manifest(backend, plan.dataset), pending)
    else:
        _commit(backend, plan, step, pending, lease)


def _write(backend: Backend, plan: Plan, step: Step, manifest: Manifest, pending: PendingWrite) -> None:
    if step.kind == "copy":
        run_copy(backend, step, manifest, pending)
    else:
        run_stream(backend, plan, step, manifest, pending)


def _commit(backend: Backend, plan: Plan, step: Step, pending: PendingWrite, lease: PlanLease) -> None:
    writes = [other for other in plan.steps if other.group == step.group and other.kind in WRITES]
    targets = object_designs(backend, [name for write in writes for name in write.written])
    if None in targets.values():  # fsck removed them after a crash: write them again
        manifest = _manifest(backend, plan.dataset)
        for write in writes:
            _write(backend, plan, write, manifest, pending)
        targets = object_designs(backend, [name for write in writes for name in write.written])
    generation = plan.groups[step.group]
    if plan.into is None:
        commit_in_place(backend, plan.dataset, generation, step.sources, targets, plan.column_objects, held=lease.save)
    else:
        source = _manifest(backend, plan.dataset)
        schema = source.schema if plan.columns is None else pa.schema([source.schema.field(c) for c in plan.columns])
        first = not any(other.done for other in plan.steps if other.kind == "commit")
        commit_copy(
            backend,
            plan.into,
            generation,
            plan.target_design(),
            schema,
            targets,
            first,
            plan.column_objects,
            held=lease.save,
        )


def _record_failure(backend: Backend, plan: Plan) -> None:
    """Saves the failure over whatever is stored, unless the plan was cancelled meanwhile."""
    try:
        stored, version = plan_store.load(backend, plan.dataset, plan.id)
        if stored.state != "cancelled":
            plan_store.update(backend, plan, version)
    except Exception:  # noqa: BLE001 (the step's error is the one to raise)
        pass


def _manifest(backend: Backend, dataset: str) -> Manifest:
    stored = backend.get_manifest(dataset)
    if stored is None:
        raise DatasetNotFoundError(f"dataset {dataset!r} was deleted while a plan was transforming it")
    return Manifest.from_bytes(stored.data, dataset)


def _as_design(design: ObjectDesign) -> Design:
    """The user's Design an object design request was made of."""
    groups = [list(group.columns) for group in design.column_groups]
    return Design(
        design.format,
        None if groups == [[]] else groups,
        design.sort_by,
        design.compression,
        design.row_group_size,
    )
