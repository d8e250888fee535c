"""Where each object's work runs: one policy, with typed outcomes, for scans
and aggregates.

An object's work runs in storage unless the policy sends it to the client (a
plain read of the whole object, finished by pyarrow): always with
``pushdown=False``; when the cost model (``cost.py``) predicts from statistics,
or measures on a first, sampled object, that the replies would be large next
to their objects; when a loaded node pushes the call back; when the user may
not call the object class. The decision is made before the work is sent, so
``explain()`` can show it without running anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from skyhook.backends.base import DECODE_AHEAD, Backend, MethodCaller
from skyhook.backends.parallel import Admission, ordered_map
from skyhook.errors import InvalidRequestError
from skyhook.execution.cost import PUSHDOWN_THRESHOLDS, Prediction
from skyhook.execution.link_cost import Estimate, Work, estimate
from skyhook.execution.observed_rates import ObservedRates

Item = TypeVar("Item")
Result = TypeVar("Result")

# Plain reads at the client: decoding is CPU work, so about one per core ...
_client_pool = ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix="skyhook-client")
# ... but with storage on hosts of its own, each read also waits on its host
# (three round trips: open, footer, column chunks), so two objects per host are
# read at once, up to this many (pyarrow's dataset reads ahead so on 8 I/O threads),
# and no more than fit this many decoded bytes.
MAX_READS_AT_ONCE = 16
READ_AHEAD_BYTES = 1 << 30
_reading_pool = ThreadPoolExecutor(MAX_READS_AT_ONCE, thread_name_prefix="skyhook-read")


class Placement(str, Enum):
    """Where one object's work ran."""

    STORAGE = "storage"
    STORAGE_FILTER_ONLY = "storage (filter only)"  # storage filtered; the client aggregated
    STORAGE_PART_OF_FILTER = "storage (part of the filter)"  # the conjuncts it can; the client the rest
    CLIENT = "client"  # the filter cannot be expressed in Substrait
    CLIENT_COST_MODEL = "client (cost model)"
    PUSHED_BACK = "pushed back"  # a loaded node declined; the client did the work
    CLIENT_NOT_PERMITTED = "client (class calls not permitted)"
    CLIENT_ZIPPED = "client (columns span objects: zipped)"  # its column objects read and zipped here

    __hash__ = str.__hash__  # equal to its text, also in sets and dicts

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Decision:
    """pushdown is None while a sampled first object has yet to decide."""

    pushdown: bool | None
    reason: str


@dataclass(frozen=True)
class PlacementPolicy:
    mode: bool | str = "auto"  # True: storage; False: plain reads; "auto": the cost model
    threshold: float | None = None  # push down while reply/object bytes <= this; None: by compression
    compression: str = "none"  # of the replies (their compressed bytes are what the threshold compares)
    #: Storage pushes back a reply that would pass its object's size; None: unless pushdown is forced.
    within_object: bool | None = None
    #: The store connection's observed rates: once they are known, estimated times decide
    #: instead of the threshold (unless the threshold was given). None: the threshold decides.
    rates: ObservedRates | None = None
    #: Storage runs in the client's process (the embedded store).
    in_process: bool = False

    def __post_init__(self) -> None:
        if self.mode not in (True, False, "auto"):
            raise InvalidRequestError(f"pushdown must be True, False or 'auto', not {self.mode!r}")
        if self.mode != "auto":  # 1, 0 and numpy booleans become bool: the executions test identity
            object.__setattr__(self, "mode", bool(self.mode))
        if self.threshold is None:
            object.__setattr__(self, "threshold", PUSHDOWN_THRESHOLDS[self.compression])
        else:
            object.__setattr__(self, "rates", None)
        if self.within_object is None:
            object.__setattr__(self, "within_object", self.mode is not True)

    def decide(self, prediction: Prediction | None, objects: int, sample: list[int]) -> Decision:
        """Before any object runs: by the mode, by statistics, or by a sample
        (the numbers of the objects that would be sampled).
        Statistics give decoded sizes: with the connection's observed rates
        (compression included) they estimate both paths' times; without them,
        with compressed replies they decide only when even the decoded reply is
        small enough; otherwise a sample measures."""
        if self.mode is not True and self.mode is not False and prediction is not None:
            if self.in_process and prediction.every_row_passes and self._no_link():
                # No row to drop and no link to spare: storage would decode what the
                # client decodes anyway, then encode it for the client to read again.
                return Decision(False, f"{prediction.basis}, in process: plain reads for {_which(objects)}")
            estimated = self.estimate(prediction.work)
            if estimated is not None:
                return self.by_estimate(prediction.basis, estimated, objects)
            if self.compression == "none" or prediction.ratio <= self.threshold:
                return self.by_ratio(prediction.basis, prediction.ratio, objects)
            return Decision(
                None,
                f"{prediction.basis}: decoded reply/object bytes {prediction.ratio:.3f}, {self.compression} "
                f"unknown: {sampled(sample)} {_decide(sample)} for the other {objects - len(sample)} objects",
            )
        if self.mode == "auto":
            return Decision(None, f"{sampled(sample)} {_decide(sample)} for the other {objects - len(sample)} objects")
        return Decision(bool(self.mode), "off: pushdown" if self.mode else "off: plain reads")

    def _no_link(self) -> bool:
        """Neither a given threshold nor a given link rate asks to weigh the bytes moved."""
        return self.rates is not None and self.rates.link_override is None

    def estimate(self, work: Work) -> Estimate | None:
        """Times of both paths, once the rates they need are known."""
        return None if self.rates is None else estimate(self.rates, work, self.compression, bool(self.within_object))

    def by_estimate(self, basis: str, estimated: Estimate, objects: int) -> Decision:
        """The path estimated to take less time."""
        return Decision(
            estimated.pushdown,
            f"{basis}: {estimated.describe()}: {'pushdown' if estimated.pushdown else 'plain reads'} for "
            f"{_which(objects)}",
        )

    def by_ratio(self, basis: str, ratio: float, objects: int) -> Decision:
        """Pushdown when the reply is expected to be small next to its object."""
        pushdown = ratio <= self.threshold
        return Decision(
            pushdown,
            f"{basis}: reply/object bytes {ratio:.3f} {'<=' if pushdown else '>'} {self.threshold}: "
            f"{'pushdown' if pushdown else 'plain reads'} for {_which(objects)}",
        )


def reply_bound_by_object(requested: bool | None, backend: MethodCaller) -> bool | None:
    """Whether storage pushes back a reply that would pass its object's size:
    as requested; a backend in the client's process keeps such replies (they
    cross no link, so the plain read they would be pushed back to saves
    nothing and storage's work would be lost)."""
    return False if requested is None and backend.runs_in_process else requested


def sample_size(backend: Backend) -> int:
    """Objects whose replies decide for the rest: one per host serving calls
    for half of them (together they take about the time of one; 1 in
    process). Replies come in object order, so a sampled object whose host
    lags holds the decision back: fewer of them hold it back less."""
    return max(1, (backend.storage_hosts + 1) // 2)


def sample_admission(backend: Backend) -> Admission:
    """The calls that start before a sample decides: the sample's and, where
    storage runs on hosts of its own, two waves more (past the replies the
    client decodes ahead of the one it reads: ending before the decision would
    stall every host), so that no host waits while the client decides unless a
    sampled object lags by two objects' time."""
    size = sample_size(backend)
    if backend.runs_in_process:
        return Admission(size)
    return Admission(size + max(2 * backend.storage_hosts, DECODE_AHEAD - 1))


class SampleGate:
    """The cost model's sample inside one stream of calls: the calls
    sample_admission lets start run while the first sample_size objects'
    replies come in; then decide() says whether the rest go to storage (their
    calls start in the same stream) or not (no more start; the caller reads
    the objects left plainly)."""

    def __init__(self, backend: Backend, objects: int, decide: Callable[[], bool]) -> None:
        self.admission = sample_admission(backend)
        self.size = min(objects, sample_size(backend))
        self.pushdown = True
        self._decide = decide

    def replied(self, answered: int) -> None:
        """Called after each object's reply is counted, with how many were."""
        if answered == self.size:
            self.pushdown = self._decide()
            self.admission.admit_all() if self.pushdown else self.admission.stop()


def sampled(numbers: list[int]) -> str:
    """The objects a sample measures, for a decision's reason."""
    if len(numbers) == 1:
        return f"sampled object {numbers[0]}"
    return f"{len(numbers)} sampled objects ({numbers[0]}..{numbers[-1]})"


def _decide(sample: list[int]) -> str:
    return "decides" if len(sample) == 1 else "decide"


def _which(objects: int) -> str:
    return f"{objects} objects" if objects else "the objects that follow"


def at_client(
    function: Callable[[Item], Result],
    items: Iterable[Item],
    parallel: bool,
    hosts: int = 1,
    object_bytes: float = 0,
) -> Iterator[Result]:
    """Work done at the client, one object per task, results in order; hosts:
    how many serve the objects (1: storage shares this machine); object_bytes:
    the most any object decodes to (0: not known)."""
    cores = os.cpu_count() or 1
    if not parallel:
        return ordered_map(_client_pool, function, items, 1)
    if hosts <= 1:
        return ordered_map(_client_pool, function, items, 2 * cores)
    window = min(MAX_READS_AT_ONCE, 2 * hosts, int(READ_AHEAD_BYTES // object_bytes) if object_bytes else sys.maxsize)
    return ordered_map(_reading_pool, function, items, max(2 * cores, window))
