"""Running a decomposed aggregate: sub-plans in storage, one object each, the
super-plan at the client. Each reply says how much of its sub-plan ran; the
client finishes the rest with the same plan's input on Acero and the same
partial functions, so the answer never depends on where the work ran:

- all:    storage returned the object's partial aggregates;
- filter: storage filtered and projected but did not aggregate (storage of
          today always aggregates; older storage did so for computed decimals):
          the client aggregates the rows, or, when the first such reply is
          large next to its object, reads the remaining objects plainly (the
          cost model);
- none:   a loaded node pushed the work back: the client reads the object.

A filter Substrait cannot carry makes every object a plain read.

A partition whose columns live in several objects (column objects) runs its
sub-plans in storage, as any object does, on the one of its objects that
holds every column the query reads; when they span objects, the scan reads
each object's columns, zips them by row and the client computes the
partition's partials (execution/column_objects.py).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.substrait as pas

from skyhook.catalog.pruning import matching_partitions
from skyhook.errors import ObjectNotFoundError
from skyhook.execution.column_objects import column_view, runs
from skyhook.execution.cost import bytes_read, largest_decoded_bytes
from skyhook.execution.object_work import ObjectCalls, WorkStatistics, placement_policy, sampled_placement
from skyhook.execution.placement import (
    Placement,
    SampleGate,
    at_client,
    sample_size,
    sampled,
)
from skyhook.execution.plain_read import read_partition
from skyhook.execution.scan_execution import ScanExecution
from skyhook.execution.scan_options import ScanOptions
from skyhook.execution.workload_log import record_query
from skyhook.plan.aggregate import AggregateQuery, Decomposition, SubPlan, decompose, full_plan
from skyhook.plan.expressions import columns_read, place_filter
from skyhook.plan.merge import ORDER, merge
from skyhook.plan.predicate_ranges import with_list_bounds
from skyhook.plan.substrait import UncarriedTypes
from skyhook.rpc.reply import Executed, Reply
from skyhook.rpc.requests import PlanRequest
from skyhook.rpc.result_options import ResultOptions
from skyhook.rpc.statistics import (
    KEYS_ON_CODES,
    ROWS_SCANNED,
)

if TYPE_CHECKING:
    from skyhook.catalog.manifest import Partition
    from skyhook.execution.dataset_objects import DatasetObjects


@dataclass
class AggregateStatistics(WorkStatistics):
    objects_at_client: int = 0  # the client aggregated (any reason)
    partial_rows: int = 0  # rows of partial aggregates that crossed to the client
    keys_on_codes: int = 0  # (object, key) pairs storage grouped on dictionary codes instead of text
    aggregate_in_storage: bool = True  # every object's aggregate ran in storage
    where: dict[int, Placement] = field(default_factory=dict)  # partition -> what ran where


class AggregateExecution:
    def __init__(
        self,
        source: DatasetObjects,
        query: AggregateQuery,
        options: ScanOptions = ScanOptions(),
    ) -> None:
        self.source = source
        self.query = query
        self.options = options
        self.policy = placement_policy(options, source.backend)
        schema = source.schema
        self.output_schema = query.output_schema(schema)
        placement = None if query.filter is None else place_filter(query.filter, schema)
        self._filter_reads = None if placement is None else placement.reads
        filter_ok = placement is None or placement.client is None
        #: Storage can run some of the filter's conjuncts: a scan filters with them, the client aggregates.
        self.filter_partly_in_storage = placement is not None and placement.storage is not None and not filter_ok
        self.stats = AggregateStatistics(filter_in_storage=filter_ok)
        #: Per partition in column objects: the dataset of its object holding the query's columns, and that object.
        self._targets: dict[int, tuple[DatasetObjects, Partition]] = {}
        #: Per partition whose query columns span its objects: the sub-plans' input rows, zipped at the client.
        self._zipped: dict[int, pa.Table] = {}
        #: None: the keys or inputs have types Substrait cannot carry; pyarrow aggregates plain reads.
        self.plan: bytes | None = None
        self.decomposition: Decomposition | None = None
        try:
            self.plan = full_plan(schema, query, self.output_schema, filter_in_storage=filter_ok)
            self.decomposition = decompose(self.plan, query.plan_keys, schema)
        except UncarriedTypes:
            self.stats.filter_in_storage = self.stats.aggregate_in_storage = False

    def run(self) -> pa.Table:
        started = time.perf_counter()
        try:
            result = self._run()
        except ObjectNotFoundError as error:
            raise self.source.missing(error) from None
        inputs = [*self.query.keys, *(a.column for a in self.query.aggregations if a.column is not None)]
        needed = columns_read(self.source.schema, inputs, self.query.filter, self._filter_reads)
        scanned = [p for p in self.source.manifest.partitions if p.number in self.stats.where]
        record_query(
            self.source.backend,
            self.source.name,
            self.source.schema,
            "aggregate",
            needed,
            self.query.filter,
            dict(
                rows_scanned=self.stats.rows_scanned,
                rows_returned=None,
                bytes_read=sum(bytes_read(partition, needed) for partition in scanned),
                wall_s=time.perf_counter() - started,
                in_storage=self.stats.aggregate_in_storage and self.stats.filter_in_storage,
            ),
            [partition.object_name for partition in scanned],
        )
        return result

    def _run(self) -> pa.Table:
        manifest = self.source.manifest
        partitions = matching_partitions(
            manifest, with_list_bounds(self.query.filter, manifest.schema), self._filter_reads
        )
        self.stats.objects_pruned = len(manifest.partitions) - len(partitions)
        if not partitions:
            return self.query.run_locally(self.source.schema.empty_table())
        if self.decomposition is None:
            if manifest.has_column_objects:
                return self.query.run_locally(self._scanned_rows(partitions, Placement.CLIENT_ZIPPED))
            return self.query.run_locally(pa.concat_tables(self._plain_reads(partitions)))
        if self.filter_partly_in_storage and self.policy.mode is not False:
            return self.query.run_locally(self._scanned_rows(partitions, Placement.STORAGE_PART_OF_FILTER))
        if manifest.has_column_objects:
            self._place(partitions)
        partials = self._everywhere(self.decomposition.sub_plan, partitions, main=True)
        distinct = [self._everywhere(sub, partitions, main=False) for sub in self.decomposition.distinct_plans]
        self.stats.aggregate_in_storage = set(self.stats.where.values()) == {Placement.STORAGE}
        result = merge(self.query, self.decomposition, partials, distinct, self.output_schema)
        if not self.query.keys and result.num_rows == 0:  # grouped partials of no rows: pyarrow's one row
            return self.query.run_locally(self.source.schema.empty_table())
        return result

    def _place(self, partitions: list[Partition]) -> None:
        """Where each partition in column objects runs: on the object holding
        every column the query reads, or (they span objects) zipped here."""
        needed = columns_read(self.source.schema, self.query.input_columns(), self.query.filter)
        spanning = []
        for objects, index, run in runs(partitions, self.source.schema.names, needed):
            if index is None:
                spanning += run
            elif len(objects) > 1:
                view = column_view(self.source, run, index)
                self._targets.update(
                    (partition.number, (view, target)) for partition, target in zip(run, view.manifest.partitions)
                )
        if spanning:
            columns = self.decomposition.read_schema.names
            tables = self._zipped_scan(spanning, columns, self.query.filter)
            self._zipped = {partition.number: self._plan_inputs(table) for partition, table in zip(spanning, tables)}

    def _target(self, partition: Partition) -> tuple[DatasetObjects, Partition]:
        """The dataset and object a partition's sub-plans run on."""
        return self._targets.get(partition.number, (self.source, partition))

    def _zipped_scan(self, partitions: list[Partition], columns: list[str], filter) -> list[pa.Table]:
        """Each partition's rows of columns that pass filter, read by the scan
        (which zips the objects of partitions whose columns span them)."""
        scan = ScanExecution(self.source, columns, filter, options=self.options, logged=False)
        tables = scan.partition_tables(partitions)
        self.stats.rows_scanned += scan.stats.rows_scanned
        self.stats.bytes_read += scan.stats.bytes_read
        self.stats.bytes_returned += scan.stats.bytes_returned
        self.stats.storage_cpu_s += scan.stats.storage_cpu_s
        self.stats.zones_skipped += scan.stats.zones_skipped
        self.stats.secondary_rejected += scan.stats.secondary_rejected
        return tables

    def _scanned_rows(self, partitions: list[Partition], placement: Placement) -> pa.Table:
        """The rows pyarrow aggregates, read by a scan: when Substrait cannot carry
        the query's types (objects in column objects), or can carry only some of
        the filter's conjuncts (the scan runs those in storage)."""
        needed = columns_read(self.source.schema, self.query.input_columns(), self.query.filter)
        for partition in partitions:
            self._record(partition, placement, main=True)
        self.stats.aggregate_in_storage = False
        return pa.concat_tables(self._zipped_scan(partitions, needed, self.query.filter))

    def _plain_reads(self, partitions: list[Partition]) -> Iterator[pa.Table]:
        read = lambda partition: read_partition(self.source, partition, filter=self.query.filter)  # noqa: E731
        for partition, (size, rows, table) in zip(
            partitions,
            at_client(
                read,
                partitions,
                self.options.use_threads,
                self.source.backend.storage_hosts,
                largest_decoded_bytes(self.source.manifest, partitions, None),
            ),
        ):
            self.stats.bytes_returned += size
            self.stats.rows_scanned += rows
            self._record(partition, Placement.CLIENT, main=True)
            yield table

    def _everywhere(self, sub: SubPlan, partitions: list[Partition], main: bool) -> pa.Table:
        tables, numbers = [], []
        stored = [partition for partition in partitions if partition.number not in self._zipped]
        zipped = [partition for partition in partitions if partition.number in self._zipped]
        results = zip(stored, self._results(sub, stored, main))
        for partition, table in chain(results, ((p, self._zipped_partials(sub, p, main)) for p in zipped)):
            tables.append(table)
            numbers.append(partition.number)
            if main:
                self.stats.partial_rows += table.num_rows
        # Each row's object, as one column for all objects (per object, its calls cost more than its rows).
        order = pa.array(np.repeat(np.array(numbers, np.int64), [table.num_rows for table in tables]))
        if not tables[0].num_columns:  # tables without columns concatenate to no rows
            return pa.table({ORDER: order})
        return pa.concat_tables(tables).append_column(ORDER, order)

    def _zipped_partials(self, sub: SubPlan, partition: Partition, main: bool) -> pa.Table:
        self._record(partition, Placement.CLIENT_ZIPPED, main)
        return sub.aggregate_rows(self._zipped[partition.number])

    def _results(self, sub: SubPlan, partitions: list[Partition], main: bool) -> Iterator[pa.Table]:
        if not partitions:
            return
        if not self.stats.filter_in_storage or self.policy.mode is False:
            yield from self._at_client(sub, partitions, Placement.CLIENT, main)
            return
        if not main or self.policy.mode is True:  # the cost model decides on the main sub-plan only
            yield from self._in_storage(sub, partitions, main)
            return
        first = partitions[: sample_size(self.source.backend)]
        returned_before = self.stats.bytes_returned

        def decide() -> bool:
            if not any(self.stats.where.get(p.number) == Placement.STORAGE_FILTER_ONLY for p in first):
                return True
            sizes = sum(self._target(partition)[1].size_bytes for partition in first)
            ratio = (self.stats.bytes_returned - returned_before) / max(1, sizes)
            basis = sampled([partition.number for partition in first])
            return self.policy.by_ratio(basis, ratio, len(partitions) - len(first)).pushdown

        yield from sampled_placement(
            self.source.backend,
            partitions,
            decide,
            lambda objects, gate: self._in_storage(sub, objects, main, gate),
            lambda objects: self._at_client(sub, objects, Placement.CLIENT_COST_MODEL, main),
        )

    def _in_storage(
        self, sub: SubPlan, partitions: list[Partition], main: bool, gate: SampleGate | None = None
    ) -> Generator[pa.Table, None, int]:
        """Each object's part of sub in storage; returns how many objects it
        answered (all, unless gate's decision stopped the calls early). gate:
        the cost model's sample, told of each reply counted."""
        if not partitions:
            return 0
        request = PlanRequest(
            plan=sub.plan,
            result=ResultOptions(compression=self.policy.compression, reply_within_object=self.policy.within_object),
            pushback=self.options.pushback,
        )
        calls = ObjectCalls(
            self.source.backend,
            request,
            f"aggregating {self.source.name!r}",
            self.options.use_threads,
            lambda partition: self._target(partition)[1].object_name,
        )
        return (
            yield from calls.each(
                partitions,
                lambda partition, reply: self._finish(sub, partition, reply, main),
                lambda left: self._at_client(sub, left, Placement.CLIENT_NOT_PERMITTED, main),
                gate,
            )
        )

    def _finish(self, sub: SubPlan, partition: Partition, reply: Reply, main: bool) -> pa.Table:
        """One object's reply counted, and the partials it holds or that the client makes of it."""
        self.stats.count_reply(reply.statistics)
        self.stats.keys_on_codes += reply.statistics.get(KEYS_ON_CODES, 0)
        if reply.executed is Executed.NONE:
            (table,) = self._at_client(sub, [partition], Placement.PUSHED_BACK, main)
            return table
        if main:
            self.stats.rows_scanned += reply.statistics[ROWS_SCANNED]
        rows = reply.rows
        if reply.executed is Executed.FILTER_ONLY:
            self._record(partition, Placement.STORAGE_FILTER_ONLY, main)
            return sub.aggregate_rows(rows)
        self._record(partition, Placement.STORAGE, main)
        return rows

    def _record(self, partition: Partition, placement: Placement, main: bool) -> None:
        if not main:
            return
        self.stats.objects_scanned += 1
        self.stats.where[partition.number] = placement
        if placement == Placement.PUSHED_BACK:
            self.stats.objects_pushed_back += 1
        if placement != Placement.STORAGE:
            self.stats.objects_at_client += 1

    def _at_client(
        self, sub: SubPlan, partitions: list[Partition], placement: Placement, main: bool
    ) -> Iterator[pa.Table]:
        completed = at_client(
            lambda partition: self._complete_here(sub, partition),
            partitions,
            self.options.use_threads,
            self.source.backend.storage_hosts,
            largest_decoded_bytes(self.source.manifest, partitions, self.decomposition.read_schema.names),
        )
        for partition, (size, rows, table) in zip(partitions, completed):
            self.stats.bytes_returned += size
            self.stats.rows_scanned += rows
            self._record(partition, placement, main)
            yield table

    def _complete_here(self, sub: SubPlan, partition: Partition) -> tuple[int, int, pa.Table]:
        """The object's sub-plan on this machine: a plain read that filters, the
        plan's projections on Acero, and the sub-plan's aggregate in pyarrow."""
        columns = self.decomposition.read_schema.names  # decoding the others would be waste
        size, rows, table = read_partition(*self._target(partition), columns, self.query.filter, self._filter_reads)
        return size, rows, sub.aggregate_rows(self._plan_inputs(table))

    def _plan_inputs(self, table: pa.Table) -> pa.Table:
        """The rows every sub-plan aggregates: the input plan's projections of
        table (rows the read has filtered) on Acero."""
        inputs = pas.run_query(
            pa.py_buffer(self.decomposition.input_plan),
            use_threads=False,
            table_provider=lambda names, schema: table.select(schema.names).cast(schema),
        )
        return inputs.read_all()
