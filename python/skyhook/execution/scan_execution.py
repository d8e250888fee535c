"""Running a scan: prune objects by statistics, place each object's work (in
storage, or a plain read finished at the client, as the cost model, a loaded
node or the user's permissions say), stream the results back. Used by the
user's Scanner and, one object at a time, by the Arrow dataset's fragments."""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook.catalog.pruning import matching_partitions
from skyhook.errors import CorruptReplyError, ObjectNotFoundError, first_line
from skyhook.execution.column_objects import column_view, runs, zipped
from skyhook.execution.cost import (
    bytes_read,
    partitions_decoded_bytes,
    predicted_reply_ratio,
    variable_width_bytes,
)
from skyhook.execution.link_cost import Work
from skyhook.execution.object_work import ObjectCalls, WorkStatistics, placement_policy, sampled_placement
from skyhook.execution.observed_rates import rates_of
from skyhook.execution.placement import (
    Decision,
    SampleGate,
    at_client,
    sample_size,
    sampled,
)
from skyhook.execution.plain_read import read_partition
from skyhook.execution.scan_options import ScanOptions
from skyhook.execution.scan_plan import ScanPlan, plan_scan
from skyhook.execution.workload_log import record_query
from skyhook.plan.carried_types import as_dataset_types
from skyhook.plan.expressions import Columns, unbound
from skyhook.rpc.reply import Executed, Reply
from skyhook.rpc.requests import ScanRequest
from skyhook.rpc.result_options import ResultOptions
from skyhook.rpc.statistics import (
    BYTES_ABANDONED,
    BYTES_DECODED,
    BYTES_READ,
    BYTES_RETURNED,
    CALLS,
    INDEX_BYTES_READ,
    REPLY_OVER_OBJECT,
    ROWS_READ_BY_INDEX,
    ROWS_SCANNED,
    STORAGE_CPU_NS,
)

if TYPE_CHECKING:
    from skyhook.catalog.manifest import Partition
    from skyhook.execution.dataset_objects import DatasetObjects

_absorbing = threading.Lock()


@dataclass
class ScanStatistics(WorkStatistics):
    rows_returned: int = 0
    bytes_decoded: int = 0  # bytes_returned once decompressed (plain reads: the objects as moved)
    wall_s: float = 0.0
    objects_read_plain: int = 0  # whole objects read and filtered here (cost model or pushdown=False)
    continuations: int = 0  # extra calls for objects a node limit (time, reply size) split
    objects_over_object: int = 0  # replies that would have passed their object's size: read plainly
    bytes_abandoned: int = 0  # reply bytes storage encoded (or earlier calls moved) for those
    wasted_storage_cpu_s: float = 0.0  # storage CPU spent on those
    pushdown: bool | str = "auto"  # requested: True, False, or "auto" (the cost model decides)
    cost_model: str = ""  # what the cost model decided and why
    filter_partly_in_storage: bool = True  # some of the filter's conjuncts ran in storage (all: filter_in_storage)
    projection_in_storage: bool = True  # (and was completed by the client)
    class_calls_refused: bool = False  # the user may not call the object class: plain reads
    rows_read_by_index: int = 0  # rows an index in storage found (only those were filtered)
    index_bytes_read: int = 0  # index blocks storage read from the objects' omaps

    def absorb(self, other: ScanStatistics) -> None:
        """Adds the statistics of one object's execution (Arrow scans objects in parallel)."""
        with _absorbing:
            for item in fields(self):
                mine, theirs = getattr(self, item.name), getattr(other, item.name)
                if isinstance(mine, bool) and item.name != "pushdown":
                    setattr(self, item.name, mine and theirs if item.name.endswith("_in_storage") else mine or theirs)
                elif isinstance(mine, (int, float)) and not isinstance(mine, bool):
                    setattr(self, item.name, mine + theirs)
                elif item.name == "cost_model" and theirs:
                    self.cost_model = theirs


class ScanExecution:
    def __init__(
        self,
        source: DatasetObjects,
        columns: Columns = None,
        filter: pc.Expression | None = None,
        *,
        batch_size: int | None = None,
        options: ScanOptions = ScanOptions(),
        logged: bool = True,
        plan: ScanPlan | None = None,
    ) -> None:
        """logged: whether a finished scan goes into the workload log (a transform's own reads do not).
        plan: plan_scan(source.schema, columns, filter), when the caller has it."""
        self.logged = logged
        self.source = source
        #: Made once per query and shared by the executions of its objects (plan_scan).
        self.plan = plan if plan is not None else plan_scan(source.schema, columns, filter)
        self.projected_schema = self.plan.projected_schema
        self.columns = columns
        self.filter = filter
        self.batch_size = batch_size
        self.options = options
        self.policy = placement_policy(options, source.backend)
        self.rates = rates_of(source.backend)  # observed, whatever the policy weighs
        #: What the sampled object decided, once one was sampled.
        self.sampled: Decision | None = None
        #: Partitions the last run could not rule out by statistics.
        self.scanned: set[int] = set()
        self.stats = ScanStatistics(
            pushdown=options.pushdown,
            filter_in_storage=self.plan.client_filter is None,
            filter_partly_in_storage=self.plan.filter_substrait is not None,
            projection_in_storage=not self.plan.client_projection,
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        partitions = matching_partitions(self.source.manifest, self.plan.pruning_filter, self.plan.filter_reads)
        self.scanned = {partition.number for partition in partitions}
        self.stats.objects_pruned += len(self.source.manifest.partitions) - len(partitions)
        before = (self.stats.rows_scanned, self.stats.rows_returned, self.stats.bytes_read, self.stats.wall_s)
        at_client_before = self._objects_at_client()
        for table in self._tables(partitions):
            yield from table.to_batches(max_chunksize=self.batch_size)
        if not self.logged:
            return
        in_storage = (
            self.stats.filter_in_storage
            and self.stats.projection_in_storage
            and self._objects_at_client() == at_client_before
        )
        rows_scanned, rows_returned, read, wall_s = (
            now - then
            for now, then in zip(
                (self.stats.rows_scanned, self.stats.rows_returned, self.stats.bytes_read, self.stats.wall_s), before
            )
        )
        record_query(
            self.source.backend,
            self.source.name,
            self.source.schema,
            "scan",
            self.plan.needed,
            self.filter,
            dict(
                rows_scanned=rows_scanned,
                rows_returned=rows_returned,
                bytes_read=read,
                wall_s=wall_s,
                in_storage=in_storage,
            ),
            [partition.object_name for partition in partitions],
        )

    def _objects_at_client(self) -> int:
        """Objects whose filter and projection the client ran (so far)."""
        return self.stats.objects_read_plain + self.stats.objects_pushed_back + self.stats.objects_over_object

    def object_table(self, partition: Partition, decided: Decision | None = None) -> pa.Table:
        """One object's rows, for a fragment of the Arrow dataset (which Arrow
        has already pruned by the object's statistics). decided: what a sampled
        object of the same query decided; without it this object is the sample."""
        (table,) = self._tables([partition], decided)
        return table

    def partition_tables(self, partitions: list[Partition]) -> list[pa.Table]:
        """The rows of each of partitions (already pruned) that pass the filter, with the scan's columns."""
        return list(self._tables(partitions))

    def _tables(self, partitions: list[Partition], decided: Decision | None = None) -> Iterator[pa.Table]:
        started = time.perf_counter()
        try:
            tables = (
                self._column_object_tables(partitions, decided)
                if self.source.manifest.has_column_objects
                else self._cost_based(partitions, decided)
            )
            for table in tables:
                self.stats.objects_scanned += 1
                if table.schema != self.projected_schema:  # e.g. nullability of computed columns
                    table = self._conform(table)
                self.stats.rows_returned += table.num_rows
                yield table
        except ObjectNotFoundError as error:
            raise self.source.missing(error) from None
        finally:
            self.stats.wall_s += time.perf_counter() - started

    def _column_object_tables(self, partitions: list[Partition], decided: Decision | None) -> Iterator[pa.Table]:
        """Partitions of several objects, a run of one layout at a time: in the
        object holding every column the scan needs, the scan as for any object
        (decided: a sample's decision on such objects); else the needed columns
        of each object holding some (the projection in storage, no filter:
        their rows must line up), zipped and finished here."""
        schema = self.source.schema
        needed = self.plan.needed
        for objects, whole, run in runs(partitions, schema.names, needed):
            if whole is not None:
                yield from self._object_scan(run, whole, self.columns, self.filter, decided)
                continue
            # completed here, over the zipped pieces
            self.stats.filter_in_storage = self.stats.filter_partly_in_storage = self.filter is None
            reads = [
                self._object_scan(run, index, [name for name in columns if needed is None or name in needed], None)
                for index, columns in enumerate(objects)
                if needed is None or set(columns) & set(needed)
            ]
            for partition, pieces in zip(run, zip(*reads)):
                yield pads.dataset(zipped(partition, list(pieces), schema.names)).to_table(
                    columns=self.columns, filter=self.filter
                )

    def _object_scan(
        self,
        partitions: list[Partition],
        index: int,
        columns: Columns,
        filter: pc.Expression | None,
        decided: Decision | None = None,
    ) -> Iterator[pa.Table]:
        """Object index of each of partitions scanned as its own dataset (the
        cost model weighs that object alone); its metrics added to this scan's."""
        execution = ScanExecution(
            column_view(self.source, partitions, index),
            columns,
            None if filter is None else unbound(filter),  # bound to the dataset, not to the object's columns
            batch_size=self.batch_size,
            options=self.options,
            logged=False,
        )
        execution.stats = self.stats
        for table in execution._cost_based(execution.source.manifest.partitions, decided):
            yield table if table.schema == execution.projected_schema else execution._conform(table)
        self.sampled = self.sampled or execution.sampled

    def _conform(self, table: pa.Table) -> pa.Table:
        """The reply's columns (carriers, types as stored) as the scan's types."""
        try:
            return as_dataset_types(table, self.projected_schema)
        except (pa.ArrowException, ValueError) as error:  # storage replied with other columns
            raise CorruptReplyError(
                f"a result of scanning {self.source.name!r} does not have the requested columns: {first_line(error)}"
            ) from None

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), self.projected_schema)

    def count_rows(self) -> int:
        if self.filter is None:
            return self.source.manifest.num_rows
        counter = ScanExecution(self.source, [], self.filter, options=self.options)
        rows = sum(batch.num_rows for batch in counter.to_batches())
        self.stats.absorb(counter.stats)
        return rows

    def head(self, num_rows: int) -> pa.Table:
        batches, remaining = [], num_rows
        stream = self.to_batches()
        try:
            for batch in stream:
                if remaining <= 0:
                    break
                batches.append(batch.slice(0, remaining))
                remaining -= batches[-1].num_rows
        finally:
            stream.close()
        return pa.Table.from_batches(batches, self.projected_schema)

    def take(self, indices: pa.Array | list[int]) -> pa.Table:
        return self.to_table().take(indices)

    def _request(self) -> ScanRequest:
        return ScanRequest(
            filter=self.plan.filter_substrait,
            projection=self.plan.projection_substrait,
            result=ResultOptions(
                compression=self.policy.compression,
                batch_size=self.batch_size,
                max_result_bytes=self.options.max_result_bytes,
                reply_within_object=self.policy.within_object,
            ),
            pushback=self.options.pushback,
        )

    def _pushdown(self, partitions: list[Partition], gate: SampleGate | None = None) -> Generator[pa.Table, None, int]:
        """The objects' work in storage; returns how many objects it answered
        (all, unless gate's decision stopped the calls early). gate: the cost
        model's sample, told of each reply counted."""
        started, cpu_before = time.perf_counter(), self.stats.storage_cpu_s
        returned_before = self.stats.bytes_returned
        read_decoded = partitions_decoded_bytes(self.source.manifest, partitions, self.plan.needed)
        decoded = {partition.number: int(size) for partition, size in zip(partitions, read_decoded)}
        calls = ObjectCalls(
            self.source.backend, self._request(), f"scanning {self.source.name!r}", self.options.use_threads
        )
        answered = yield from calls.each(
            partitions,
            lambda partition, reply: self._replied(partition, reply, decoded[partition.number]),
            self._refused,
            gate,
        )
        self.rates.pushdown_phase(
            answered,
            self.stats.bytes_returned - returned_before,
            self.stats.storage_cpu_s - cpu_before,
            time.perf_counter() - started,
        )
        return answered

    def _refused(self, partitions: list[Partition]) -> Iterator[pa.Table]:
        """The user may not call the object class: plain reads."""
        self.stats.class_calls_refused = True
        return self._read_whole(partitions)

    def _replied(self, partition: Partition, reply: Reply, read_decoded: int) -> pa.Table:
        """One object's rows as storage replied them (a loaded node's push-back
        done here), its statistics counted; finished here if need be.
        read_decoded: the decoded bytes of the columns read in the object (ingest statistics)."""
        if reply.executed == Executed.NONE:  # pushed back: do it here
            self._count_push_back(reply)
            size, rows, table = self._read_and_filter(partition)
            self._count_plain_read(size, rows)
            return table
        self.stats.count_reply(reply.statistics)
        self.stats.rows_scanned += reply.statistics[ROWS_SCANNED]
        self.stats.continuations += reply.statistics.get(CALLS, 1) - 1
        self.stats.bytes_decoded += reply.statistics.get(BYTES_DECODED, reply.statistics[BYTES_RETURNED])
        self.stats.rows_read_by_index += reply.statistics.get(ROWS_READ_BY_INDEX, 0)
        self.stats.index_bytes_read += reply.statistics.get(INDEX_BYTES_READ, 0)
        self._observe(reply, read_decoded)
        table = reply.rows
        # Its buffers' size: nbytes works out each column's span (~30 us a reply, per object).
        self.rates.reply_decoded(table.get_total_buffer_size(), reply.decode_cpu_s, self.policy.compression)
        if self.plan.client_filter is not None or self.plan.client_projection:  # what storage could not do
            table = as_dataset_types(table, pa.schema([self.source.schema.field(n) for n in table.column_names]))
            table = pads.dataset(table).to_table(columns=self.columns, filter=self.plan.client_filter)
        return table

    def _observe(self, reply: Reply, read_decoded: int) -> None:
        """Storage's costs and the codec's compression, for the cost model."""
        sent = reply.statistics[BYTES_RETURNED]
        self.rates.reply(
            read_decoded or reply.statistics[BYTES_READ],
            reply.statistics.get(BYTES_DECODED, sent),
            sent,
            reply.statistics[STORAGE_CPU_NS] / 1e9,
            self.policy.compression,
        )

    def _count_push_back(self, reply: Reply) -> None:
        """A loaded node declined, or the reply would have passed its object's
        size (storage's work and any bytes moved are then waste)."""
        cpu_s = reply.statistics.get(STORAGE_CPU_NS, 0) / 1e9
        self.stats.storage_cpu_s += cpu_s
        self.stats.bytes_returned += reply.statistics.get(BYTES_RETURNED, 0)  # earlier calls' replies
        self.stats.bytes_decoded += reply.statistics.get(BYTES_RETURNED, 0)
        if reply.statistics.get(REPLY_OVER_OBJECT):
            self.stats.objects_over_object += 1
            self.stats.bytes_abandoned += reply.statistics.get(BYTES_ABANDONED, 0)
            self.stats.wasted_storage_cpu_s += cpu_s
        else:
            self.stats.objects_pushed_back += 1

    def _cost_based(self, partitions: list[Partition], decided: Decision | None = None) -> Iterator[pa.Table]:
        """By the mode, a decision made before (statistics, or an earlier sample),
        or a sample: the first objects' replies decide for the rest, while the
        calls of two waves more run on (SampleGate). A pushdown the cost model chose is watched
        the same way: replies that pass their objects' size make plain reads of
        the objects whose calls had not started."""
        if not partitions:
            return
        decision = decided or self.planned_decision(partitions)
        if decision.pushdown is not None:
            self.stats.cost_model = decision.reason if self.policy.mode == "auto" else ""
        watched = decision.pushdown is not False and self.policy.mode == "auto" and decided is None
        if not watched:
            yield from self._pushdown(partitions) if decision.pushdown else self._read_whole(partitions)
            return
        sample = partitions[: sample_size(self.source.backend)]
        before = (self.stats.bytes_returned, self.stats.objects_pushed_back, self.stats.objects_over_object)
        sample_before = (self.stats.bytes_decoded, self.stats.storage_cpu_s)
        rest = len(partitions) - len(sample)

        def decide() -> bool:
            nonlocal decision
            if decision.pushdown is None:
                decision = self._sample_decision(sample, rest, before, sample_before)
                self.sampled = decision
            elif self.stats.objects_over_object > before[2]:
                basis = sampled([partition.number for partition in sample])
                decision = Decision(
                    False, f"{decision.reason}; but {basis}: replies would pass their size: plain reads"
                )
            self.stats.cost_model = decision.reason
            return bool(decision.pushdown)

        yield from sampled_placement(self.source.backend, partitions, decide, self._pushdown, self._read_whole)

    def _sample_decision(
        self,
        sample: list[Partition],
        rest: int,
        before: tuple[int, int, int],
        sample_before: tuple[int, float],
    ) -> Decision:
        """What the sampled objects' replies (the statistics counted since before) decide for the rest."""
        if self.stats.objects_pushed_back > before[1]:
            return Decision(True, "sample pushed back by a loaded node: no estimate, pushdown")
        basis = sampled([partition.number for partition in sample])
        if self.stats.objects_over_object > before[2]:
            return Decision(False, f"{basis}: its reply would pass its size: plain reads for {rest} objects")
        needed = self.plan.needed
        sent = self.stats.bytes_returned - before[0]
        ratio = sent / max(1, sum(bytes_read(partition, needed) for partition in sample))  # objects whole
        measured = (sent, self.stats.bytes_decoded - sample_before[0], self.stats.storage_cpu_s - sample_before[1])
        estimated = self.policy.estimate(self._sample_work(sample, measured, needed))
        if estimated is not None:
            return self.policy.by_estimate(basis, estimated, rest)
        return self.policy.by_ratio(basis, ratio, rest)

    def _sample_work(self, sample: list[Partition], measured: tuple[int, int, float], needed: list[str] | None) -> Work:
        """The sampled objects' work as their replies measured it (bytes sent,
        decoded, storage CPU): the other objects are taken to be like them."""
        sent, reply_decoded, cpu_s = measured
        manifest = self.source.manifest
        read = int(partitions_decoded_bytes(manifest, sample, needed).sum())
        object_bytes = sum(bytes_read(partition, needed, manifest) for partition in sample)
        variable = variable_width_bytes(manifest, sample, needed)
        return Work(object_bytes, read, reply_decoded, sent, cpu_s, objects=len(sample), variable_bytes=variable)

    def planned_decision(self, partitions: list[Partition]) -> Decision:
        """The placement decided before any object runs (what explain() shows)."""
        predicted = None
        if self.policy.mode == "auto":
            predicted = predicted_reply_ratio(self.source.manifest, self.filter, partitions, self.columns)
        sample = [partition.number for partition in partitions[: sample_size(self.source.backend)]]
        return self.policy.decide(predicted, len(partitions), sample or [0])

    def _read_whole(self, partitions: list[Partition]) -> Iterator[pa.Table]:
        """The baseline a pushdown must beat: move whole objects to the client and
        let pyarrow filter them here, decoding only the columns it needs."""
        started, cpu_before, moved = time.perf_counter(), self.rates.client_cpu_s, 0
        each = partitions_decoded_bytes(self.source.manifest, partitions, self.plan.needed)
        hosts = self.source.backend.storage_hosts
        largest = float(each.max(initial=0))
        for size, rows, table in at_client(self._read_and_filter, partitions, self.options.use_threads, hosts, largest):
            self._count_plain_read(size, rows)
            moved += size
            yield table
        wall_s = time.perf_counter() - started
        decoded = float(each.sum())
        variable = variable_width_bytes(self.source.manifest, partitions, self.plan.needed)
        cpu_s = self.rates.client_cpu_s - cpu_before
        self.rates.plain_phase(len(partitions), moved, cpu_s, wall_s, (decoded - variable, variable))

    def _read_and_filter(self, partition: Partition) -> tuple[int, int, pa.Table]:
        return read_partition(self.source, partition, self.columns, self.filter, self.plan.filter_reads)

    def _count_plain_read(self, size: int, rows: int) -> None:
        self.stats.objects_read_plain += 1
        self.stats.bytes_read += size
        self.stats.bytes_returned += size
        self.stats.bytes_decoded += size
        self.stats.rows_scanned += rows
