"""Partition pruning: which partitions' statistics can satisfy a filter.

Each partition's statistics become a guarantee (an expression known to be true
of every row in it); Arrow's expression simplification then decides which
partitions the filter can match, exactly as pyarrow prunes Hive partitions.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.manifest_memo import per_manifest


def partition_guarantee(
    schema: pa.Schema, statistics: pa.StructScalar, num_rows: int, fresh: pa.StructScalar | None = None
) -> pc.Expression:
    """fresh: the statistics storage computed on the partition's object, for
    the columns whose bounds statistics lacks (both describe the same rows)."""
    if num_rows == 0:
        return pc.scalar(False)
    guarantee = pc.scalar(True)
    for field in schema:
        column = statistics[field.name]
        if fresh is not None and not (column["min"].is_valid and column["max"].is_valid):
            column = fresh[field.name]
        guarantee = guarantee & _column_guarantee(pc.field(field.name), column, num_rows)
    return guarantee


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


def fragment_guarantee(manifest: Manifest, index: int) -> pc.Expression:
    """The guarantee of the manifest's partition at index: its ingest
    statistics, completed where fresh by those storage computed on its object
    (true when they cannot be expressed)."""
    partition = manifest.partitions[index]
    fresh = manifest.fresh_object_statistics(index)
    try:
        return partition_guarantee(manifest.schema, manifest.statistics[index], partition.num_rows, fresh)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return pc.scalar(True)


@per_manifest
def guarantees(manifest: Manifest) -> list[pc.Expression]:
    """fragment_guarantee of each of the manifest's partitions."""
    return [fragment_guarantee(manifest, index) for index in range(len(manifest.partitions))]


def matching_partitions(manifest: Manifest, filter: pc.Expression | None) -> list[Partition]:
    if filter is None or not manifest.partitions:
        return list(manifest.partitions)
    candidates = pads.FileSystemDataset.from_paths(
        [str(partition.number) for partition in manifest.partitions],
        schema=manifest.schema,
        format=pads.IpcFileFormat(),
        filesystem=pafs.LocalFileSystem(),
        partitions=guarantees(manifest),
    )
    try:
        kept = {int(fragment.path) for fragment in candidates.get_fragments(filter=filter)}
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return list(manifest.partitions)
    return [partition for partition in manifest.partitions if partition.number in kept]


def wholly_matching(manifest: Manifest, index: int, filter: pc.Expression | None, columns: set[str]) -> bool:
    """Whether the statistics prove that every row of the partition at index
    passes filter (which reads columns): no row can fail it, and none of its
    columns holds a null or (floats are refused) a NaN, which would make it null or false."""
    if filter is None:
        return True
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
