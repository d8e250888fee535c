"""Reading source objects for a transform through the storage-side scan: the
filter and projection run where the objects are, so only the selected rows
and columns leave storage (a loaded node may push an object back, which is
then read whole and filtered by this process, as any scan does)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest
from skyhook.errors import DatasetChangedError
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.scan_execution import ScanExecution, ScanStatistics
from skyhook.execution.scan_options import ScanOptions


def scan_sources(
    backend: Backend,
    manifest: Manifest,
    sources: list[str],
    columns: list[str] | None,
    filter: pc.Expression | None,
) -> tuple[pa.Table, ScanStatistics]:
    """The rows of sources (objects of manifest, read in their order) that pass
    filter, with columns (None: all); the scan's statistics."""
    subset = manifest.subset(source_numbers(manifest, sources))
    execution = ScanExecution(
        DatasetObjects(subset, backend), columns, filter, options=ScanOptions(pushdown=True), logged=False
    )
    return execution.to_table(), execution.stats


def source_numbers(manifest: Manifest, sources: list[str]) -> list[int]:
    """The partition numbers of sources; DatasetChangedError if one is no longer in the manifest."""
    index = {partition.object_name: number for number, partition in enumerate(manifest.partitions)}
    missing = [name for name in sources if name not in index]
    if missing:
        raise DatasetChangedError(
            f"dataset {manifest.dataset!r} no longer has object {missing[0]} (another writer replaced it "
            "since the plan was made): nothing was committed; cancel the plan and plan again"
        )
    return [index[name] for name in sources]
