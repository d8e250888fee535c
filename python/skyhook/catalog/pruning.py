"""Partition pruning: which partitions' statistics can satisfy a filter.

Each partition's statistics become a guarantee (an expression known to be true
of every row in it); Arrow's expression simplification then decides which
partitions the filter can match, exactly as pyarrow prunes Hive partitions.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.manifest_memo import per_manifest


def _column_guarantee(ref: pc.Expression, column: pa.StructScalar, num_rows: int) -> pc.Expression:
    # Scalars stay Arrow scalars: a round trip through Python would lose
    # precision (nanosecond timestamps) and so prune wrongly.
    null_count = column["null_count"].as_py()
    if null_count == num_rows:
        return ref.is_null()
    if not column["min"].is_valid or not column["max"].is_valid:
        return ref.is_valid() if null_count == 0 else pc.scalar(True)
    value_range = (ref >= pc.scalar(column["min"])) & (ref <= pc.scalar(column["max"]))
    # With nulls present only the weaker "null or in range" holds, which Arrow
    # does not use for pruning: correct, merely less selective.
    return value_range if null_count == 0 else ref.is_null() | value_range


def _column_guarantees(manifest: Manifest, index: int) -> dict[str, pc.Expression] | None:
    """Per column, what the partition at index guarantees of it: its ingest
    statistics, completed where fresh by those storage computed on its object
    (true when they cannot be expressed); None when it holds no rows."""
    partition = manifest.partitions[index]
    if partition.num_rows == 0:
        return None
    statistics, fresh = manifest.statistics[index], manifest.fresh_object_statistics(index)
    guarantees = {}
    for name in manifest.schema.names:
        column = statistics[name]
        if fresh is not None and not (column["min"].is_valid and column["max"].is_valid):
            column = fresh[name]
        try:
            guarantees[name] = _column_guarantee(pc.field(name), column, partition.num_rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            guarantees[name] = pc.scalar(True)
    return guarantees


@per_manifest
def _every_column_guarantee(manifest: Manifest) -> list[dict[str, pc.Expression] | None]:
    return [_column_guarantees(manifest, index) for index in range(len(manifest.partitions))]


def fragment_guarantee(manifest: Manifest, index: int, columns: Iterable[str] | None = None) -> pc.Expression:
    """The guarantee of the manifest's partition at index, of columns (None:
    all): a filter reading only those is pruned by it as by the whole one."""
    parts = _every_column_guarantee(manifest)[index]
    if parts is None:
        return pc.scalar(False)
    guarantee = pc.scalar(True)
    for name in manifest.schema.names if columns is None else columns:
        guarantee = guarantee & parts[name]
    return guarantee


@per_manifest
def guarantees(manifest: Manifest) -> list[pc.Expression]:
    """fragment_guarantee of each of the manifest's partitions."""
    return [fragment_guarantee(manifest, index) for index in range(len(manifest.partitions))]


def matching_partitions(
    manifest: Manifest, filter: pc.Expression | None, columns: Iterable[str] | None = None
) -> list[Partition]:
    """The partitions whose statistics filter may match; columns: those filter
    reads (None: all), to which the guarantees are cut (simplifying a filter
    against every column's guarantee cost tens of milliseconds a query)."""
    if filter is None or not manifest.partitions or holds_nan_literal(filter):
        return list(manifest.partitions)
    wanted = None if columns is None else set(columns)
    read = None if wanted is None else tuple(name for name in manifest.schema.names if name in wanted)
    known = _candidates_by_columns(manifest)
    candidates = known.get(read)
    if candidates is None:
        candidates = known.setdefault(read, _candidates(manifest, read))
    try:
        kept = {int(fragment.path) for fragment in candidates.get_fragments(filter=filter)}
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return list(manifest.partitions)
    return [partition for partition in manifest.partitions if partition.number in kept]


@per_manifest
def _candidates_by_columns(manifest: Manifest) -> dict[tuple[str, ...] | None, pads.Dataset]:
    """The manifest's partitions as a dataset, per tuple of columns read, built
    once (a query would otherwise combine every partition's guarantees again)."""
    return {}


def _candidates(manifest: Manifest, columns: tuple[str, ...] | None) -> pads.Dataset:
    """The partitions as fragments named by number, each with its guarantee of columns (None: all)."""
    if columns is None:
        partition_guarantees = guarantees(manifest)
    else:
        partition_guarantees = [
            fragment_guarantee(manifest, index, columns) for index in range(len(manifest.partitions))
        ]
    return pads.FileSystemDataset.from_paths(
        [str(partition.number) for partition in manifest.partitions],
        schema=manifest.schema,
        format=pads.IpcFileFormat(),
        filesystem=pafs.LocalFileSystem(),
        partitions=partition_guarantees,
    )


def wholly_matching(manifest: Manifest, index: int, filter: pc.Expression | None, columns: set[str]) -> bool:
    """Whether the statistics prove that every row of the partition at index
    passes filter (which reads columns): no row can fail it, and none of its
    columns holds a null or (floats are refused) a NaN, which would make it null or false."""
    if filter is None:
        return True
    if holds_nan_literal(filter):
        return False
    statistics = manifest.statistics[index]
    for name in columns:
        if pa.types.is_floating(manifest.schema.field(name).type) or statistics[name]["null_count"].as_py() != 0:
            return False
    failing = pads.FileSystemDataset.from_paths(
        ["0"],
        schema=manifest.schema,
        format=pads.IpcFileFormat(),
        filesystem=pafs.LocalFileSystem(),
        partitions=[guarantees(manifest)[index]],
    )
    try:
        return not list(failing.get_fragments(filter=~filter))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return False


def holds_nan_literal(expression: pc.Expression) -> bool:
    """Whether a literal of expression (or a value of an IN list's set) is a
    floating-point NaN (True when Arrow cannot serialize it: unknown). Arrow's
    simplification orders NaN above every number, so against statistics that
    bound x it takes `x < NaN` as true and `not (x < NaN)` as false: pruning
    with such a filter would drop matching rows."""
    try:  # Arrow's serialization: literals and options are the columns of its one batch
        batch = pa.ipc.open_file(expression.__reduce__()[1][0]).get_batch(0)
    except pa.ArrowNotImplementedError:
        return True
    return any(_holds_nan(column) for column in batch.columns)


def _holds_nan(array: pa.Array) -> bool:
    kind = array.type
    if pa.types.is_floating(kind):
        return pa.types.is_float16(kind) or bool(pc.any(pc.is_nan(array)).as_py())
    if pa.types.is_dictionary(kind):
        return _holds_nan(array.dictionary)
    if isinstance(array, pa.StructArray):
        return any(_holds_nan(child) for child in array.flatten())
    if isinstance(array, (pa.ListArray, pa.LargeListArray, pa.FixedSizeListArray, pa.ListViewArray)):
        return _holds_nan(array.flatten())
    return kind.num_fields > 0  # other nested values: unknown, taken as holding one
