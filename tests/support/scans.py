"""Scans with pushdown forced, for tests that check what storage skipped."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import skyhook
from skyhook.execution.scan_execution import ScanStatistics


def pushed_down(
    dataset: skyhook.Dataset, filter: pc.Expression | None, columns: list[str] | None = None
) -> tuple[pa.Table, ScanStatistics]:
    """The scan's rows and its statistics, every object scanned in storage."""
    scanner = dataset.scanner(columns=columns, filter=filter, pushdown=True)
    return scanner.to_table(), scanner.stats
