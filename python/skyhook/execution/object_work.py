"""The skeleton scans and aggregates share: the placement policy made from
the query's options, each object's work sent to storage in one stream of calls
(falling back to the client when the user may not call the object class),
the cost model's sampled first objects deciding where the rest run, and the
counters every reply adds to."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, TypeVar

from skyhook.errors import ClassCallsNotPermittedError
from skyhook.execution.observed_rates import rates_of
from skyhook.execution.placement import PlacementPolicy, SampleGate, reply_bound_by_object
from skyhook.execution.plain_read import warn_class_calls_refused
from skyhook.execution.reply_codec import reply_codec
from skyhook.execution.scan_options import ScanOptions
from skyhook.rpc.statistics import BYTES_READ, BYTES_RETURNED, SECONDARY_REJECTED, STORAGE_CPU_NS, ZONES_SKIPPED

if TYPE_CHECKING:
    from skyhook.backends.base import Backend
    from skyhook.catalog.manifest import Partition
    from skyhook.rpc.reply import Reply
    from skyhook.rpc.requests import DataRequest

Result = TypeVar("Result")


@dataclass
class WorkStatistics:
    """What a scan or an aggregate counts alike."""

    objects_scanned: int = 0
    objects_pruned: int = 0
    objects_pushed_back: int = 0  # a loaded node declined; the client did the work
    rows_scanned: int = 0  # rows storage read (client-side path: rows decoded)
    bytes_read: int = 0  # bytes read inside storage
    bytes_returned: int = 0  # bytes that crossed from storage to the client (as sent, all calls)
    storage_cpu_s: float = 0.0
    zones_skipped: int = 0  # row groups / record batches storage skipped by their statistics
    secondary_rejected: int = 0  # objects whose statistics did not prove themselves (so were not used)
    filter_in_storage: bool = True  # False: not expressible in Substrait, or spanning column objects

    def as_dict(self) -> dict:
        return asdict(self)

    def count_reply(self, statistics: Mapping[str, int]) -> None:
        """What storage says one object's work cost (its rows are counted by the caller)."""
        self.bytes_read += statistics.get(BYTES_READ, 0)
        self.bytes_returned += statistics[BYTES_RETURNED]
        self.storage_cpu_s += statistics[STORAGE_CPU_NS] / 1e9
        self.zones_skipped += statistics.get(ZONES_SKIPPED, 0)
        self.secondary_rejected += statistics.get(SECONDARY_REJECTED, 0)


def placement_policy(options: ScanOptions, backend: Backend) -> PlacementPolicy:
    """Where a query's object work runs, by its options and the connection's observed rates."""
    rates = rates_of(backend)
    return PlacementPolicy(
        options.pushdown,
        options.pushdown_threshold,
        reply_codec(options.reply_compression, backend, rates),
        reply_bound_by_object(options.reply_within_object, backend),
        rates,
        backend.runs_in_process,
    )


@dataclass(frozen=True)
class ObjectCalls:
    """One request sent to each of a query's objects."""

    backend: Backend
    request: DataRequest
    what: str  # for errors: "scanning 'name'"
    parallel: bool
    #: The object a partition's call goes to (column objects: the one holding the query's columns).
    target: Callable[[Partition], str] = lambda partition: partition.object_name

    def each(
        self,
        partitions: list[Partition],
        replied: Callable[[Partition, Reply], Result],
        refused: Callable[[list[Partition]], Iterator[Result]],
        gate: SampleGate | None = None,
    ) -> Generator[Result, None, int]:
        """replied(partition, reply) for each partition in order; refused(the
        partitions left) when the user may not call the object class. Returns
        how many objects it answered (all, unless gate's decision stopped the
        calls early); gate: the cost model's sample, told of each reply counted."""
        replies = self.backend.call_each(
            [self.target(partition) for partition in partitions],
            self.request,
            self.what,
            parallel=self.parallel,
            admission=None if gate is None else gate.admission,
        )
        answered = 0
        try:
            for partition, reply in zip(partitions, replies):
                answered += 1
                yield replied(partition, reply)
                if gate is not None:
                    gate.replied(answered)
        except ClassCallsNotPermittedError as refusal:
            warn_class_calls_refused(refusal)
            yield from refused(partitions[answered:])
            answered = len(partitions)
        return answered


def sampled_placement(
    backend: Backend,
    partitions: list[Partition],
    decide: Callable[[], bool],
    in_storage: Callable[[list[Partition], SampleGate | None], Generator[Result, None, int]],
    at_client: Callable[[list[Partition]], Iterator[Result]],
) -> Iterator[Result]:
    """The cost model's sample: the first objects run in storage and, once
    their replies are counted, decide() says whether the rest do too, while
    the calls SampleGate admits run on; those not started when it decided
    run where it said."""
    gate = SampleGate(backend, len(partitions), decide)
    answered = yield from in_storage(partitions, gate)
    rest = partitions[answered:]
    if rest:
        yield from in_storage(rest, None) if gate.pushdown else at_client(rest)
