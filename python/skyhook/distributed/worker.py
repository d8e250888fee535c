"""The storage tier's driver of plans (``skyhook worker``): it polls the store
for plans queued for it, and for plans whose runner died, and runs them. A
Ceph object class cannot read other objects, so this process, run beside the
OSDs, is where a distributed transform's streams flow.

No stored object can stop it: an unreadable plan object is reported once and
passed by, a plan that fails is recorded failed (its error in ``skyhook design
status``) and not taken up again until its retry time (doubling per failure),
whatever it raised; it sleeps between polls unless a plan just finished, and
a poll that keeps failing is logged once a minute."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

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
#: The longest wait before a failed plan is taken up again, and between logs of a failing poll.
MAX_RETRY_SECONDS = 3600.0
POLL_FAILURE_LOG_SECONDS = 60.0


def _pending(plan: Plan) -> bool:
    """Whether plan is the worker's to run: queued, or running with its lease over."""
    return plan.state == "queued" or (plan.state == "running" and not holder_alive(plan))


@dataclass
class _Memory:
    """What the worker remembers between polls: failures, and what it has told."""

    interval: float
    failures: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)  # plan -> (count, retry at)
    reported: set[tuple[str, str, str]] = field(default_factory=set)  # unreadable plans told of
    poll_failure: tuple[str, float] = ("", 0.0)  # the last told, and when

    def due(self, plan: Plan, once: bool) -> bool:
        failed = self.failures.get((plan.dataset, plan.id))
        return failed is None or (not once and time.monotonic() >= failed[1])

    def failed(self, plan: Plan) -> None:
        count = self.failures.get((plan.dataset, plan.id), (0, 0.0))[0] + 1
        wait = min(MAX_RETRY_SECONDS, self.interval * 2**count)
        self.failures[(plan.dataset, plan.id)] = (count, time.monotonic() + wait)

    def new_unreadable(self, plans: list[Plan]) -> list[Plan]:
        found = [plan for plan in plans if plan_store.is_unreadable(plan)]
        fresh = [plan for plan in found if (plan.dataset, plan.id, plan.error) not in self.reported]
        self.reported.update((plan.dataset, plan.id, plan.error) for plan in fresh)
        return fresh

    def tell_poll_failure(self, text: str) -> bool:
        told, at = self.poll_failure
        if text == told and time.monotonic() - at < POLL_FAILURE_LOG_SECONDS:
            return False
        self.poll_failure = (text, time.monotonic())
        return True


def work(
    backend: Backend,
    log: WorkerLog,
    once: bool = False,
    interval: float = 5.0,
    retention_seconds: float = DEFAULT_RETENTION_SECONDS,
) -> int:
    """Runs pending plans, oldest first; with once, until none is left that has
    not failed here, else forever, polling every interval seconds. Returns the
    plans run (failed ones included)."""
    ran, memory = 0, _Memory(interval)
    while True:
        try:
            listed = plan_store.plans(backend)
        except SkyhookError as error:  # the cluster is down or restarting (an OSD, say): try again later
            if once:
                raise
            if memory.tell_poll_failure(first_line(error)):
                log(None, first_line(error))
            time.sleep(interval)
            continue
        for plan in memory.new_unreadable(listed):
            log(plan, plan.error)
        runnable = [plan for plan in listed if _pending(plan) and memory.due(plan, once)]
        finished = 0
        for plan in runnable:
            log(plan, "started")
            try:
                run_plan(backend, plan, retention_seconds=retention_seconds)
                log(plan, None)
                finished += 1
            except Exception as error:  # noqa: BLE001 (a SkyhookError or a bug: the plan records it; go on)
                memory.failed(plan)
                log(plan, first_line(error))
            ran += 1
        if once and not runnable:
            return ran
        if not finished and not once:
            time.sleep(interval)
