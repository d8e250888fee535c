"""The scans Arrow's fragments ask for: one object each, run by the same scan
execution and placement policy as the user's Scanner."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.catalog.manifest import Partition
from skyhook.execution.column_objects import holding, layout
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.placement import Decision
from skyhook.execution.scan_execution import ScanExecution, ScanStatistics
from skyhook.execution.scan_options import ScanOptions
from skyhook.execution.scan_plan import ScanPlan, plan_scan
from skyhook.plan.expressions import columns_read

# Query shapes whose plans and sampled decisions are kept (a dataset object sees few).
_DECISIONS_KEPT = 256
# Scan options that change what a sample decides.
_DECIDING_OPTIONS = ("pushdown", "pushdown_threshold", "reply_compression", "reply_within_object")


class ObjectScans:
    def __init__(self, source: DatasetObjects) -> None:
        self.source = source
        #: Metrics of the scans pyarrow itself started (joins, Acero, pyarrow's Scanner).
        self.stats = ScanStatistics()
        # Arrow scans objects independently and in parallel: the first object of a
        # query shape to finish is its sample, and the objects after it (of this
        # scan and of later ones; the dataset's data never changes) follow it.
        self._decisions: dict[tuple, Decision] = {}
        self._plans: dict[tuple, ScanPlan] = {}
        self._lock = threading.Lock()

    def scan_object(
        self, index: int, filter: pc.Expression, columns: list[str], batch_size: int, scan: ScanExecution | None
    ) -> pa.RecordBatchReader:
        """Called from Arrow's I/O threads for the fragment of object ``index``:
        the object's rows that may pass filter, with at least columns. scan is
        the skyhook scan this belongs to, if any: its options and metrics."""
        options = scan.options if scan is not None else ScanOptions()
        filter = None if filter.equals(pc.scalar(True)) else filter
        partition = self.source.manifest.partitions[index]
        shape = (
            str(filter),
            tuple(columns),
            *(getattr(options, key) for key in _DECIDING_OPTIONS),
            *self._read(partition, columns, filter),
        )
        with self._lock:
            decided = self._decisions.get(shape)
        plan = self._plan(columns, filter)
        execution = ScanExecution(self.source, columns, filter, batch_size=batch_size, options=options, plan=plan)
        table = execution.object_table(partition, decided)
        if decided is None and execution.sampled is not None:
            with self._lock:
                if len(self._decisions) >= _DECISIONS_KEPT:
                    self._decisions.clear()
                self._decisions.setdefault(shape, execution.sampled)
        (scan.stats if scan is not None else self.stats).absorb(execution.stats)
        return table.to_reader(max_chunksize=batch_size)

    def _plan(self, columns: list[str], filter: pc.Expression | None) -> ScanPlan:
        """The query's plan, made by its first object's scan (the others, in
        parallel, wait for it: a plan takes about a millisecond) and reused."""
        key = (str(filter), tuple(columns))
        with self._lock:
            planned = self._plans.get(key)
            if planned is not None and (filter is None or planned.filter.equals(filter)):
                return planned
            if len(self._plans) >= _DECISIONS_KEPT:
                self._plans.clear()
            self._plans[key] = plan_scan(self.source.schema, columns, filter)
            return self._plans[key]

    def _read(self, partition: Partition, columns: list[str], filter: pc.Expression | None) -> tuple:
        """Which of its objects a scan of partition reads: a sample's decision holds for objects alike."""
        if not self.source.manifest.has_column_objects:
            return ()
        needed = columns_read(self.source.schema, columns, filter)
        return layout(partition, self.source.schema.names), holding(partition, needed)
