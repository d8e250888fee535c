"""The storage tier's driver of plans (``skyhook worker``): it polls the store
for plans queued for it, and for plans whose runner died, and runs them. A
Ceph object class cannot read other objects, so this process, run beside the
OSDs, is where a distributed transform's streams flow."""

from __future__ import annotations

import time
from collections.abc import Callable

from skyhook.backends.base import Backend
from skyhook.distributed import plan_store
from skyhook.distributed.lease import holder_alive
from skyhook.distributed.plan import Plan
from skyhook.distributed.runner import run_plan
from skyhook.errors import SkyhookError, first_line
from skyhook.ingest.garbage_collection import DEFAULT_RETENTION_SECONDS

#: Told of each plan the worker takes up, and of how it ended (None: done);
#: of a poll that failed with plan None (the worker polls again).
WorkerLog = Callable[[Plan | None, str | None], None]


def pending_plans(backend: Backend) -> list[Plan]:
    """Plans to run: queued ones, and running ones whose lease is over."""
    return [
        plan
        for plan in plan_store.plans(backend)
        if plan.state == "queued" or (plan.state == "running" and not holder_alive(plan))
    ]


def work(
    backend: Backend,
    log: WorkerLog,
    once: bool = False,
    interval: float = 5.0,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
) -> int:
    """Runs pending plans, oldest first; with once, until none is left, else
    forever, polling every interval seconds. Returns the plans run."""
    ran = 0
    while True:
        try:
            plans = pending_plans(backend)
        except SkyhookError as error:  # the cluster is down or restarting (an OSD, say): try again later
            if once:
                raise
            log(None, first_line(error))
            time.sleep(interval)
            continue
        for plan in plans:
            log(plan, "started")
            try:
                run_plan(backend, plan, retention_seconds=retention_seconds)
                log(plan, None)
            except SkyhookError as error:  # the plan says so too; the worker goes on
                log(plan, first_line(error))
            ran += 1
        if once and not plans:
            return ran
        if not plans:
            time.sleep(interval)
