"""Schedules: how a plan runs. rate: bytes per second the steps may read in
storage and write (planned bytes; the runner waits after a step that ran
ahead); parallel: stream steps in flight at once; order: "key" (as planned:
key or object order) or "working-set" (the groups, and a cluster's key
ranges, that the logged workload touches most go first, so queries gain early)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from skyhook.distributed.key_ranges import ranges_met
from skyhook.distributed.plan import ORDERS, Plan, Step
from skyhook.errors import InvalidRequestError
from skyhook.execution.workload_log import QueryRecord

_UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "KI": 1 << 10, "MI": 1 << 20, "GI": 1 << 30}
_RATE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMG]I?)?B?(?:/S)?\s*")


@dataclass(frozen=True)
class Schedule:
    rate: float | None = None  # bytes/s read in storage plus written; None: unlimited
    parallel: int = 1  # stream steps in flight
    order: str = "key"

    def __post_init__(self) -> None:
        if self.rate is not None and (isinstance(self.rate, bool) or not self.rate > 0):
            raise InvalidRequestError(f"a schedule's rate must be positive bytes/s, not {self.rate!r}")
        if isinstance(self.parallel, bool) or not isinstance(self.parallel, int) or self.parallel < 1:
            raise InvalidRequestError(f"a schedule's parallel must be a positive integer, not {self.parallel!r}")
        if self.order not in ORDERS:
            raise InvalidRequestError(f"a schedule's order is one of {', '.join(ORDERS)}, not {self.order!r}")


def parse_rate(text: str) -> float:
    """'50MB/s', '1.5GiB/s', '2000000' -> bytes per second."""
    matched = _RATE.fullmatch(text.upper())
    if matched is None or float(matched.group(1)) <= 0:
        raise InvalidRequestError(f"invalid rate {text!r}: expected e.g. 50MB/s, 1GiB/s or a number of bytes/s")
    return float(matched.group(1)) * _UNITS[matched.group(2) or ""]


def in_order(plan: Plan, order: str, records: list[QueryRecord]) -> list[Step]:
    """The plan's steps in the order to run them: done ones first, each group's
    commit after its streams; for the working set, the hottest groups first and
    in a group the hottest streams first (stable otherwise)."""
    if order == "key":
        return plan.steps
    heat = [_heat(plan, step, records) for step in plan.steps]
    group_heat: dict[int, int] = {}
    for step, hot in zip(plan.steps, heat):
        group_heat[step.group] = max(group_heat.get(step.group, 0), hot)
    ranked = sorted(
        range(len(plan.steps)),
        key=lambda i: (
            not plan.steps[i].done,
            -group_heat[plan.steps[i].group],
            plan.steps[i].group,
            plan.steps[i].kind == "commit",
            -heat[i],
            i,
        ),
    )
    return [plan.steps[i] for i in ranked]


def _heat(plan: Plan, step: Step, records: list[QueryRecord]) -> int:
    """How many logged queries read what the step rewrites (for a cluster's ranges: meet one of its key ranges)."""
    served = step.ranges()
    if served and plan.cluster_by is not None:
        bounds = plan.key_bounds()
        hot = 0
        for record in records:
            on_key = [r for r in record.predicates if r.column == plan.cluster_by]
            met = ranges_met(bounds, on_key[0]) if on_key else None
            hot += met is None or any(met[index] for index in served)
        return hot
    sources = set(step.sources)
    return sum(bool(sources.intersection(record.objects)) for record in records)


class Pacer:
    """Keeps a run at or under rate bytes/s: after each step, waits until the
    bytes done so far are due."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.started = time.monotonic()
        self.done = 0

    def account(self, nbytes: int) -> None:
        self.done += nbytes
        if self.rate is not None:
            time.sleep(max(0.0, self.started + self.done / self.rate - time.monotonic()))
