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

import importlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.catalog.pruning import matching_partitions
from skyhook.catalog.versions import reopened
from skyhook.errors import DatasetChangedError, InvalidRequestError, SkyhookError
from skyhook.execution.aggregate_execution import AggregateExecution
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.scan_execution import ScanExecution
from skyhook.execution.scan_plan import plan_scan
from skyhook.ingest.write import WriteKeywords
from skyhook.plan.aggregate import AggregateQuery

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: A partition's stored bytes unless asked otherwise (Dask suggests 100 MB-1 GB in memory).
PARTITION_BYTES = 64 << 20
#: Partitions to_skyhook computes at once while it writes the ones before.
WRITE_WINDOW = 4


def require_dask(module: str = "dask.dataframe") -> Any:
    """A module of Dask, or a clear error when Dask is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SkyhookError("Dask is not installed: pip install 'skyhook[dask]'") from None


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
    #: The version opened: read while it is kept, after an overwrite too (catalog/versions.py).
    version: int = 0

    def __dask_tokenize__(self) -> tuple:
        """What names the partitions' tasks (Dask cannot tokenize a store)."""
        return (self.store.uri, self.dataset, self.generation, self.version, str(self.filter))

    def narrowed(self, predicate: pc.Expression) -> ObjectGroupReader:
        """This reader with predicate also applied (a filter Dask pushed down)."""
        combined = predicate if self.filter is None else self.filter & predicate
        return replace(self, filter=combined)

    def __call__(self, numbers: list[int], columns: list[str] | None = None) -> Any:
        """A Dask partition: the objects' rows as pandas."""
        return self.table(numbers, columns).to_pandas(types_mapper=_types_mapper)

    def table(self, numbers: list[int], columns: list[str] | None = None) -> pa.Table:
        """The rows of objects numbers (positions in the manifest) that pass the filter, with columns."""
        subset = DatasetObjects(self.manifest().subset(numbers), self.store.backend)
        return ScanExecution(subset, None if columns is None else list(columns), self.filter).to_table()

    def manifest(self) -> Any:
        """The manifest generation this reader reads (or its version while that is
        kept); DatasetChangedError once neither is there."""
        manifest = reopened(self.store.backend, self.store.manifest(self.dataset), self.generation, self.version)
        if manifest is None:
            raise DatasetChangedError(
                f"dataset {self.dataset!r} in {self.store.uri} was overwritten or transformed since it was "
                f"opened (generation {self.generation}, version {self.version}), and that version is no "
                "longer kept: open it again"
            )
        return manifest


def frame_of(
    dataset: Any, columns: list[str] | None, filter: pc.Expression | None, partition_bytes: int = PARTITION_BYTES
) -> Any:
    """dataset's rows as a Dask DataFrame (see the module); filter: the dataset's own and the caller's."""
    dataframe = require_dask()
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

    reader = ObjectGroupReader(dataset.store, manifest.dataset, manifest.generation, filter, manifest.version)
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


# Functions whose partials combine exactly: the partials each is made of, and how those combine.
_PARTIALS = {"sum": ("sum",), "count": ("count",), "min": ("min",), "max": ("max",), "mean": ("sum", "count")}
_COMBINED = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}
_NO_KEY = "__all_rows"  # the one group of an aggregate without keys


@dataclass(frozen=True)
class PartialAggregator:
    """One partition's partial aggregates, computed in storage by the objects
    of its group (as dataset.group_by(keys).aggregate does for all of them)."""

    reader: ObjectGroupReader
    keys: list[str]
    partials: list[tuple[str, str]]

    def __dask_tokenize__(self) -> tuple:
        return (self.reader.__dask_tokenize__(), self.keys, self.partials)

    def __call__(self, numbers: list[int]) -> Any:
        manifest = self.reader.manifest()
        query = AggregateQuery.make(manifest.schema, self.keys, self.partials, self.reader.filter)
        subset = DatasetObjects(manifest.subset(numbers), self.reader.store.backend)
        frame = AggregateExecution(subset, query).run().to_pandas(types_mapper=_types_mapper)
        if not self.keys:
            frame[_NO_KEY] = 0
        return frame


def aggregate(
    dataset: Any,
    keys: str | list[str],
    aggregations: list[tuple[str, str]],
    filter: pc.Expression | None = None,
    partition_bytes: int = PARTITION_BYTES,
) -> Any:
    """Grouped aggregates of dataset as a Dask DataFrame (one row per group, in
    no order; columns as dataset.group_by(keys).aggregate names them): each
    partition's objects aggregate in storage, Dask merges those partials in a
    tree (split_every), means are finished from sums and counts (as float64).
    Functions: sum, count, min, max, mean; groups with null keys kept."""
    dataframe = require_dask()
    keys = [keys] if isinstance(keys, str) else list(keys)
    unsupported = sorted({function for _, function in aggregations} - set(_PARTIALS))
    if unsupported:
        raise InvalidRequestError(
            f"Dask aggregates combine {', '.join(_PARTIALS)}; not {unsupported[0]!r} (use group_by(...).aggregate)"
        )
    partials = list(dict.fromkeys((column, part) for column, function in aggregations for part in _PARTIALS[function]))
    manifest = dataset.manifest
    AggregateQuery.make(manifest.schema, keys, partials, filter)  # checked here, not in a task
    groups = object_groups(manifest, None, filter, partition_bytes=partition_bytes) or [[]]
    reader = ObjectGroupReader(dataset.store, manifest.dataset, manifest.generation, filter, manifest.version)
    aggregator = PartialAggregator(reader, keys, partials)
    meta = aggregator([])
    frame = dataframe.from_map(aggregator, groups, meta=meta, label=f"skyhook-aggregate-{manifest.dataset}")
    by = keys or [_NO_KEY]
    merged = frame.groupby(by, dropna=False).agg(
        {f"{column}_{part}": _COMBINED[part] for column, part in partials}, split_every=8
    )
    merged = merged.reset_index()
    for column, function in aggregations:
        if function == "mean":  # as float64 (a decimal sum's exact quotient may pass decimal128's precision)
            merged[f"{column}_mean"] = merged[f"{column}_sum"].astype("float64") / merged[f"{column}_count"]
    return merged[[*keys, *(f"{column}_{function}" for column, function in aggregations)]]


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
    """Strings as pandas' pyarrow-backed strings (what Dask uses); decimals,
    dates, times, binaries and nested types as pyarrow-backed columns (as
    Python objects, Dask would take them for strings); the rest as to_pandas
    makes them."""
    import pandas as pd

    if pa.types.is_string(type) or pa.types.is_large_string(type):
        return pd.StringDtype("pyarrow")
    if (
        pa.types.is_decimal(type)
        or pa.types.is_date(type)
        or pa.types.is_time(type)
        or pa.types.is_binary(type)
        or pa.types.is_large_binary(type)
        or pa.types.is_fixed_size_binary(type)
        or pa.types.is_nested(type)
    ):
        return pd.ArrowDtype(type)
    return None


def to_skyhook(frame: Any, store: Any, name: str, *, mode: str = "create", **options: Unpack[WriteKeywords]) -> Any:
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


__all__ = ["PARTITION_BYTES", "aggregate", "frame_of", "to_skyhook"]
