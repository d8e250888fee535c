"""A running plan's lease: the runner that has it (host:pid) and until when,
stored with the plan's state and renewed by compare-and-swap while it runs, by
a thread, so a step however long keeps it. Another runner takes the plan over
only once the lease has expired (or, on the holder's own host, once its process
is gone), and by compare-and-swap too: two runners never both hold it."""

from __future__ import annotations

import os
import socket
import threading
import time

from skyhook.backends.base import Backend
from skyhook.distributed import plan_store
from skyhook.distributed.plan import Plan
from skyhook.errors import InvalidRequestError, ObjectChangedError, SkyhookError, first_line

#: How long a lease lasts unless renewed; renewed every third of it.
LEASE_SECONDS = 60.0


def this_runner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_alive(plan: Plan) -> bool:
    """Whether a running plan's lease is held: not expired, and its holder not
    known dead (a process of this host that is gone, or this very process,
    which abandoned the run by an exception)."""
    if plan.state != "running":
        return False
    host, _, pid = plan.runner.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        if int(pid) == os.getpid():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
    return time.time() < plan.lease_expiry


class PlanLease:
    """This process's lease on a stored plan: every save of the plan goes
    through it (the stored version is shared with the renewing thread)."""

    def __init__(self, backend: Backend, plan: Plan, version: object, seconds: float = LEASE_SECONDS) -> None:
        self.backend, self.plan, self.version, self.seconds = backend, plan, version, seconds
        self.lock = threading.Lock()
        self.lost: SkyhookError | None = None
        self.stopped = threading.Event()
        plan.runner = this_runner()
        self.save()
        self.thread = threading.Thread(target=self._renew, name=f"lease of plan {plan.id}", daemon=True)
        self.thread.start()

    def save(self) -> None:
        """Stores the plan as it is now, the lease renewed; raises if it was lost
        (cancelled, or taken over after it expired). A commit saves just before
        it publishes, so a run that lost its lease publishes nothing."""
        with self.lock:
            if self.lost is not None:
                raise self.lost
            self.plan.lease_expiry = time.time() + self.seconds
            try:
                self.version = plan_store.update(self.backend, self.plan, self.version)
            except ObjectChangedError:
                self.lost = self._why_lost()
                raise self.lost from None

    def release(self) -> None:
        self.stopped.set()
        self.thread.join()

    def _renew(self) -> None:
        while not self.stopped.wait(self.seconds / 3):
            try:
                self.save()
            except SkyhookError:  # lost: the runner stops at its next save; else (storage) tried again
                if self.lost is not None:
                    return

    def _why_lost(self) -> SkyhookError:
        plan = self.plan
        try:
            stored, _ = plan_store.load(self.backend, plan.dataset, plan.id)
        except SkyhookError as error:
            return InvalidRequestError(f"plan {plan.id} of {plan.dataset!r} cannot be saved: {first_line(error)}")
        if stored.state == "cancelled":
            return InvalidRequestError(f"plan {plan.id} of {plan.dataset!r} was cancelled while it ran")
        return InvalidRequestError(
            f"plan {plan.id} of {plan.dataset!r} is run by {stored.runner or 'another process'} now (it started "
            "the plan at the same time, or took it over once this run's lease expired): this run stopped"
        )
