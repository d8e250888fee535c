"""Datasets as Dask DataFrames, and Dask DataFrames as datasets
(``pip install 'skyhook[dask]'``).

``dataset.to_dask(columns=, filter=)`` gives a DataFrame with a partition per
group of objects (about ``partition_bytes`` of them, after the filter's
statistics ruled objects out): each partition scans its objects where the
dask worker runs, filter and columns in storage as any scan of them, and a
column selection made later in Dask (``frame[["a", "b"]]``) narrows what
storage returns too. Datasets pickle by reference, so workers reopen the
same manifest generation (an overwrite since is an error, never other rows).
``to_skyhook(frame, store, name)`` writes a DataFrame's partitions as one
dataset in one commit: the rows of all of them or none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.catalog.pruning import matching_partitions
from skyhook.errors import DatasetChangedError, InvalidRequestError, SkyhookError
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.scan_execution import ScanExecution
from skyhook.execution.scan_plan import plan_scan

#: A partition's stored bytes unless asked otherwise (Dask suggests 100 MB-1 GB in memory).
PARTITION_BYTES = 64 << 20
#: Partitions to_skyhook computes at once while it writes the ones before.
WRITE_WINDOW = 4


def _dask() -> Any:
    try:
        import dask.dataframe
    except ImportError:
        raise SkyhookError("Dask is not installed: pip install 'skyhook[dask]'") from None
    return dask.dataframe


@dataclass(frozen=True)
class ObjectGroupReader:
    """Reads one partition: a group of objects of a dataset's manifest
    generation, with a filter, and the columns Dask asks for (columns=). It
    holds the store (pickled by URI), not the dataset: the scheduler unpickles
    the graph, and a dataset overwritten since must fail in its task, where
    the error reaches the caller as itself."""

    store: Any
    dataset: str
    generation: str
    filter: pc.Expression | None

    def __dask_tokenize__(self) -> tuple:
        """What names the partitions' tasks (Dask cannot tokenize a store)."""
        return (self.store.uri, self.dataset, self.generation, str(self.filter))

    def narrowed(self, predicate: pc.Expression) -> ObjectGroupReader:
        """This reader with predicate also applied (a filter Dask pushed down)."""
        combined = predicate if self.filter is None else self.filter & predicate
        return ObjectGroupReader(self.store, self.dataset, self.generation, combined)

    def __call__(self, numbers: list[int], columns: list[str] | None = None) -> Any:
        """A Dask partition: the objects' rows as pandas."""
        return self.table(numbers, columns).to_pandas(types_mapper=_types_mapper)

    def table(self, numbers: list[int], columns: list[str] | None = None) -> pa.Table:
        """The rows of objects numbers (positions in the manifest) that pass the filter, with columns."""
        manifest = self.store.manifest(self.dataset).version(self.generation)
        if manifest is None:
            raise DatasetChangedError(
                f"dataset {self.dataset!r} in {self.store.uri} was overwritten or transformed since it was "
                f"opened (generation {self.generation}): open it again"
            )
        subset = DatasetObjects(manifest.subset(numbers), self.store.backend)
        return ScanExecution(subset, None if columns is None else list(columns), self.filter).to_table()


def frame_of(
    dataset: Any, columns: list[str] | None, filter: pc.Expression | None, partition_bytes: int = PARTITION_BYTES
) -> Any:
    """dataset's rows as a Dask DataFrame (see the module); filter: the dataset's own and the caller's."""
    dataframe = _dask()
    if not isinstance(partition_bytes, int) or isinstance(partition_bytes, bool) or partition_bytes < 1:
        raise InvalidRequestError(f"partition_bytes must be a number of bytes >= 1, not {partition_bytes!r}")
    manifest = dataset.manifest
    groups = object_groups(manifest, columns, filter, partition_bytes=partition_bytes)
    meta = (
        plan_scan(manifest.schema, columns, filter).projected_schema.empty_table().to_pandas(types_mapper=_types_mapper)
    )
    if not groups:  # nothing can match: one empty partition
        return dataframe.from_pandas(meta, npartitions=1)
    from skyhook.dask_pushdown import read_expression

    reader = ObjectGroupReader(dataset.store, manifest.dataset, manifest.generation, filter)
    return read_expression(reader, groups, meta, f"skyhook-{manifest.dataset}")


def object_groups(
    manifest: Any,
    columns: list[str] | None,
    filter: pc.Expression | None,
    partition_bytes: int | None = None,
    parallelism: int | None = None,
) -> list[list[int]]:
    """The manifest's objects the filter's statistics leave, in groups of
    consecutive ones of about partition_bytes (or in about parallelism groups)."""
    plan = plan_scan(manifest.schema, columns, filter)
    kept = [(p.number, p.stored_bytes) for p in matching_partitions(manifest, plan.pruning_filter, plan.filter_reads)]
    if partition_bytes is None:
        partition_bytes = max(1, sum(size for _, size in kept) // max(1, parallelism or 1))
    return list(_groups(kept, partition_bytes))


def _groups(sizes: list[tuple[int, int]], target: int) -> Iterator[list[int]]:
    """Consecutive objects in groups of about target bytes (an object larger than it alone)."""
    group: list[int] = []
    held = 0
    for number, size in sizes:
        if group and held + size > target:
            yield group
            group, held = [], 0
        group.append(number)
        held += size
    if group:
        yield group


def _types_mapper(type: pa.DataType) -> Any:
    """Strings as pandas' pyarrow-backed strings (what Dask uses), the rest as to_pandas makes them."""
    import pandas as pd

    if pa.types.is_string(type) or pa.types.is_large_string(type):
        return pd.StringDtype("pyarrow")
    return None


def to_skyhook(frame: Any, store: Any, name: str, *, mode: str = "create", **options: Any) -> Any:
    """Writes a Dask DataFrame as dataset name of store in one commit (mode
    "create", "overwrite" or "append"; options as Store.write_dataset's):
    partitions are computed WRITE_WINDOW at a time, in order, and streamed
    into the write; a partition that fails leaves the dataset as it was."""
    import dask

    schema = pa.Schema.from_pandas(frame._meta, preserve_index=False)
    parts = frame.to_delayed()

    def batches() -> Iterator[pa.RecordBatch]:
        for start in range(0, len(parts), WRITE_WINDOW):
            for part in dask.compute(*parts[start : start + WRITE_WINDOW]):
                table = pa.Table.from_pandas(part, schema=schema, preserve_index=False)
                yield from table.to_batches()

    return store.write_dataset(name, pa.RecordBatchReader.from_batches(schema, batches()), mode=mode, **options)


__all__ = ["PARTITION_BYTES", "frame_of", "to_skyhook"]
