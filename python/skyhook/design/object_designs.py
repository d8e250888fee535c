"""The designs of a dataset's objects as a table, read from the objects
themselves (each carries its own in its skyhook.design attribute)."""

from __future__ import annotations

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.design import DESIGN_ATTRIBUTE
from skyhook.catalog.manifest import Manifest
from skyhook.design.object_transform import stored_design


def object_designs(backend: Backend, manifest: Manifest) -> pa.Table:
    """A row per object: object, format, column_groups, sort_by, compression,
    rows, bytes, generation. Objects written before designs say their
    manifest's format, "(all)" and compression "unknown"."""
    rows = []
    for partition in manifest.partitions:
        design = stored_design(backend.object_attribute(partition.object_name, DESIGN_ATTRIBUTE))
        rows.append(
            {
                "object": partition.object_name,
                "format": design.format if design else manifest.format,
                "column_groups": design.describe_groups() if design else "(all)",
                "sort_by": ",".join(f"{key.column}{':desc' if key.descending else ''}" for key in design.sort_by)
                if design
                else "",
                "compression": design.compression if design else "unknown",
                "rows": partition.num_rows,
                "bytes": sum(group.length for group in design.column_groups) if design else partition.size_bytes,
                "generation": design.generation if design else 0,
            }
        )
    schema = pa.schema(
        [
            ("object", pa.string()),
            ("format", pa.string()),
            ("column_groups", pa.string()),
            ("sort_by", pa.string()),
            ("compression", pa.string()),
            ("rows", pa.int64()),
            ("bytes", pa.int64()),
            ("generation", pa.int64()),
        ]
    )
    return pa.Table.from_pylist(rows, schema)
