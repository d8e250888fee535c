"""The designs of a dataset's objects as a table (``Dataset.design()``)."""

from __future__ import annotations

import pyarrow as pa

from skyhook.catalog.manifest import Manifest

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
    """One row per object, in partition order, as the manifest records it."""
    rows = []
    for partition in manifest.partitions:
        design = partition.design
        groups = [list(group.columns) or manifest.schema.names for group in design.column_groups]
        rows.append(
            {
                "object": partition.object_name,
                "format": design.format,
                "column_groups": groups,
                "group_bytes": [group.length for group in design.column_groups],
                "sort_by": [key.column + (" desc" if key.descending else "") for key in design.sort_by],
                "compression": design.compression,
                "row_group_size": design.row_group_size,
                "rows": partition.num_rows,
                "bytes": partition.size_bytes,
                "generation": design.generation,
            }
        )
    return pa.Table.from_pylist(rows, schema=DESIGN_TABLE_SCHEMA)
