"""Running a decomposed aggregate: sub-plans in storage, one object each, the
super-plan at the client. An object whose node pushed its work back, or whose
filter Substrait cannot carry, is completed here with the same sub-plan on
Acero, so the answer never depends on where the work ran."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas

from skyhook.cost import DEFAULT_PUSHDOWN_THRESHOLD
from skyhook.expressions import to_substrait
from skyhook.plan.aggregate import AggregateQuery, Decomposition, decompose, full_plan, rows_plan
from skyhook.plain_read import read_partition
from skyhook.plan.merge import ORDER, merge
from skyhook.protocol import encode_request
from skyhook.pruning import matching_partitions

if TYPE_CHECKING:
    from skyhook.dataset import Dataset
    from skyhook.manifest import Partition


@dataclass
class AggregateStatistics:
    objects_scanned: int = 0
    objects_pruned: int = 0
    objects_pushed_back: int = 0     # a loaded node declined; the client did the work
    objects_at_client: int = 0       # every object completed by the client
    rows_scanned: int = 0
    partial_rows: int = 0            # rows of partial aggregates that crossed to the client
    bytes_returned: int = 0
    storage_cpu_s: float = 0.0
    filter_in_storage: bool = True
    aggregate_in_storage: bool = True  # False: storage filtered and projected, the client aggregated
    where: dict[int, str] = field(default_factory=dict)  # partition -> storage | pushed back | client

    def as_dict(self) -> dict:
        return asdict(self)


class AggregateExecution:
    def __init__(self, dataset: Dataset, query: AggregateQuery, *, use_threads: bool = True,
                 max_in_flight: int | None = None, max_slice_cpu_ns: int | None = None,
                 pushdown_threshold: float = DEFAULT_PUSHDOWN_THRESHOLD) -> None:
        self.dataset = dataset
        self.query = query
        self.use_threads = use_threads
        self.pushdown_threshold = pushdown_threshold
        self.pushback_limits = {"max_in_flight": max_in_flight, "max_slice_cpu_ns": max_slice_cpu_ns}
        schema = dataset.schema
        self.output_schema = query.output_schema(schema)
        filter_ok = query.filter is None or \
            to_substrait([query.filter], ["filter"], schema, is_filter=True) is not None
        self.plan = full_plan(schema, query, filter_in_storage=filter_ok)
        self.decomposition: Decomposition = decompose(self.plan, query.keys, schema)
        in_storage = query.aggregates_in_storage(schema)
        self.rows_plan = None if in_storage else rows_plan(schema, query, filter_in_storage=filter_ok)
        self.stats = AggregateStatistics(filter_in_storage=filter_ok, aggregate_in_storage=in_storage)

    def run(self) -> pa.Table:
        manifest = self.dataset.manifest
        partitions = matching_partitions(manifest, self.query.filter)
        self.stats.objects_pruned = len(manifest.partitions) - len(partitions)
        if not partitions:
            return self.query.run_locally(self.dataset.schema.empty_table())
        if self.rows_plan is not None:
            rows = self._run_everywhere(self.rows_plan, partitions, count=True, sample_first=True).sort_by(ORDER)
            return self.query.aggregate_inputs(rows.drop_columns([ORDER])).cast(self.output_schema)
        partials = self._run_everywhere(self.decomposition.sub_plan, partitions, count=True)
        distinct = [self._run_everywhere(plan, partitions, count=False)
                    for plan in self.decomposition.distinct_plans]
        return merge(self.query, self.decomposition, partials, distinct, self.output_schema)

    def _run_everywhere(self, plan: bytes, partitions: list[Partition], count: bool,
                        sample_first: bool = False) -> pa.Table:
        results = self._sampled_results(plan, partitions) if sample_first else \
            self._results(plan, partitions, count)
        tables = []
        for partition, table in zip(partitions, results):
            tables.append(table.append_column(ORDER, pa.array([partition.number] * table.num_rows, pa.int64())))
            if count:
                self.stats.partial_rows += table.num_rows
        return pa.concat_tables(tables)

    def _sampled_results(self, plan: bytes, partitions: list[Partition]) -> Iterator[pa.Table]:
        """Rows that storage only filters and computes can outweigh the objects:
        the first object's reply decides, as for scans, whether the rest are
        sent to storage or read plainly."""
        sample, rest = partitions[:1], partitions[1:]
        returned_before = self.stats.bytes_returned
        yield from self._results(plan, sample, count=True)
        ratio = (self.stats.bytes_returned - returned_before) / max(1, sample[0].size_bytes)
        if ratio <= self.pushdown_threshold:
            yield from self._results(plan, rest, count=True)
            return
        for partition in rest:
            self._record(partition, "client (cost model)", True)
            yield self._complete_here(plan, partition)

    def _results(self, plan: bytes, partitions: list[Partition], count: bool) -> Iterator[pa.Table]:
        if not self.stats.filter_in_storage:
            for partition in partitions:
                self._record(partition, "client", count)
                yield self._complete_here(plan, partition)
            return
        request = encode_request({"method": "execute_plan", "plan": plan,
                                  "compression": self.dataset.store.backend.reply_compression,
                                  **self.pushback_limits})
        replies = self.dataset.store.backend.call_each(
            "execute_plan", [p.object_name for p in partitions], request,
            f"aggregating {self.dataset.name!r}", parallel=self.use_threads)
        for partition, reply in zip(partitions, replies):
            self.stats.storage_cpu_s += reply.statistics["storage_cpu_ns"] / 1e9
            self.stats.bytes_returned += reply.body.size
            if reply.executed == "none":
                self._record(partition, "pushed back", count)
                yield self._complete_here(plan, partition)
            else:
                self._record(partition, "storage", count)
                self.stats.rows_scanned += reply.statistics["rows_scanned"] if count else 0
                yield reply.reader().read_all()

    def _record(self, partition: Partition, where: str, count: bool) -> None:
        if not count:
            return
        self.stats.objects_scanned += 1
        self.stats.where[partition.number] = where
        if where == "pushed back":
            self.stats.objects_pushed_back += 1
        if where != "storage":
            self.stats.objects_at_client += 1

    def _complete_here(self, plan: bytes, partition: Partition) -> pa.Table:
        """The object's sub-plan on this machine: plain read, same plan, same engine."""
        filter = None if self.stats.filter_in_storage else self.query.filter
        size, rows, table = read_partition(self.dataset, partition, filter=filter)
        self.stats.bytes_returned += size
        self.stats.rows_scanned += rows
        return pas.run_query(pa.py_buffer(plan), use_threads=False,
                             table_provider=lambda names, schema: table.select(schema.names).cast(schema)).read_all()
