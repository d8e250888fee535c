"""The scans Arrow's fragments ask for: one object each, run by the same scan
execution and placement policy as the user's Scanner."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.scan_execution import ScanExecution, ScanStatistics


class ObjectScans:
    def __init__(self, source: DatasetObjects) -> None:
        self.source = source
        #: Metrics of the scans pyarrow itself started (joins, Acero, pyarrow's Scanner).
        self.stats = ScanStatistics()

    def scan_object(
        self, index: int, filter: pc.Expression, columns: list[str], batch_size: int, scan: ScanExecution | None
    ) -> pa.RecordBatchReader:
        """Called from Arrow's I/O threads for the fragment of object ``index``:
        the object's rows that may pass filter, with at least columns. scan is
        the skyhook scan this belongs to, if any: its options and metrics."""
        options = scan.options if scan is not None else {}
        execution = ScanExecution(
            self.source,
            columns,
            None if filter.equals(pc.scalar(True)) else filter,
            batch_size=batch_size,
            **options,
        )
        table = execution.object_table(self.source.manifest.partitions[index])
        (scan.stats if scan is not None else self.stats).absorb(execution.stats)
        return table.to_reader(max_chunksize=batch_size)
