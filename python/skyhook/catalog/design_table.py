"""The designs of a dataset's objects as a table (``Dataset.design()``)."""

from __future__ import annotations

import pyarrow as pa

from skyhook.catalog.manifest import ColumnObject, Manifest

DESIGN_TABLE_SCHEMA = pa.schema(
    [
        pa.field("object", pa.string(), False),
        pa.field("format", pa.string(), False),
        # Each group's columns; an object before designs has one group of every column.
        pa.field("column_groups", pa.list_(pa.list_(pa.string())), False),
        pa.field("group_bytes", pa.list_(pa.int64()), False),
        pa.field("sort_by", pa.list_(pa.string()), False),  # "column" or "column desc"
        pa.field("compression", pa.string(), False),  # "unknown" for objects before designs
        pa.field("row_group_size", pa.int64(), False),
        pa.field("rows", pa.int64(), False),
        pa.field("bytes", pa.int64(), False),
        pa.field("generation", pa.int64(), False),
    ]
)


def design_table(manifest: Manifest) -> pa.Table:
    """One row per object (a partition's column objects after its object), in
    partition order, as the manifest records it."""
    rows = []
    for partition in manifest.partitions:
        for held in partition.objects(manifest.schema.names):
            rows.append(_row(held, partition.num_rows))
    return pa.Table.from_pylist(rows, schema=DESIGN_TABLE_SCHEMA)


def _row(held: ColumnObject, num_rows: int) -> dict:
    design = held.design
    groups = [list(group.columns) or list(held.columns) for group in design.column_groups]
    return {
        "object": held.object_name,
        "format": design.format,
        "column_groups": groups,
        "group_bytes": [group.length for group in design.column_groups],
        "sort_by": [key.column + (" desc" if key.descending else "") for key in design.sort_by],
        "compression": design.compression,
        "row_group_size": design.row_group_size,
        "rows": num_rows,
        "bytes": held.size_bytes,
        "generation": design.generation,
    }
