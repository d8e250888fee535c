"""Statistics that storage computed on an object (its secondary design:
cpp/skyhook/storage/secondary/zone_statistics.h), kept in the manifest per
partition so that the client prunes and costs by them without asking storage.

Each row holds, per column, the object-level min, max, null count, distinct
estimate and equi-depth histogram (the values at the 0, 1/32, .., 32/32
quantiles of the non-null values), tagged with the design generation and the
size of the object they describe. A transform raises the generation, any
rewrite changes the size (or the generation): the partition then no longer
matches its tag and its statistics are stale, never used. A null row: none.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.catalog.design import ObjectDesign

#: The metadata key under which storage tags a statistics batch with its data's
#: identity (cpp/skyhook/storage/secondary/omap_value.h, data_identity.h).
IDENTITY_METADATA = b"skyhook.identity"


def column_statistics_type(type: pa.DataType) -> pa.StructType:
    return pa.struct(
        [
            ("min", type),
            ("max", type),
            ("null_count", pa.int64()),
            ("distinct", pa.int64()),  # HyperLogLog estimate (about 3 % error); null: not hashable
            ("histogram", pa.list_(type)),  # null: the type has no order
        ]
    )


def object_statistics_type(schema: pa.Schema) -> pa.StructType:
    return pa.struct(
        [
            ("generation", pa.int64()),
            ("size_bytes", pa.int64()),
            ("columns", pa.struct([(field.name, column_statistics_type(field.type)) for field in schema])),
        ]
    )


@dataclass(frozen=True)
class DataTag:
    """Which data of an object statistics describe."""

    generation: int
    size_bytes: int

    def describes(self, design: ObjectDesign, size_bytes: int) -> bool:
        return self.generation == design.generation and self.size_bytes == size_bytes


def data_tag(identity: bytes) -> DataTag:
    """The tag of the identity storage wrote: ``size=N;L:format;L:design``
    (each part length-prefixed, ``-`` when absent); an object without a design
    attribute is generation 0, as a legacy design. ValueError when malformed."""
    head, _, rest = identity.partition(b";")
    if not head.startswith(b"size="):
        raise ValueError("the statistics' identity has no size")
    parts = []
    for _ in range(2):
        length, _, rest = rest.partition(b":")
        size = int(length)
        parts.append(rest[:size])
        rest = rest[size + 1 :]
    design = parts[1]
    generation = 0 if design == b"-" else ObjectDesign.from_bytes(design).generation
    return DataTag(generation, int(head[len(b"size=") :]))


def statistics_row(batch: pa.RecordBatch, schema: pa.Schema) -> pa.StructArray | None:
    """The manifest row (one row of object_statistics_type(schema)) of a
    statistics batch storage returned, from its whole-object row; None when the
    batch does not fit schema or carries no identity. Values stay Arrow values:
    a round trip through Python would lose precision (nanosecond timestamps)."""
    identity = (batch.schema.metadata or {}).get(IDENTITY_METADATA)
    if identity is None or batch.num_rows == 0:
        return None
    try:
        tag = data_tag(identity)
    except (ValueError, pa.ArrowException):
        return None
    whole = batch.slice(batch.num_rows - 1)  # the zone -1 row: the whole object
    if whole.schema.get_field_index("zone") < 0 or whole.column("zone")[0].as_py() != -1:
        return None
    columns = []
    for field in schema:
        wanted = column_statistics_type(field.type)
        if whole.schema.get_field_index(field.name) < 0:
            return None
        stored = whole.column(field.name)
        if not pa.types.is_struct(stored.type) or any(
            stored.type.get_field_index(child.name) < 0 or stored.type.field(child.name).type != child.type
            for child in wanted
        ):
            return None
        children = [pc.struct_field(stored, child.name) for child in wanted]
        columns.append(pa.StructArray.from_arrays(children, fields=list(wanted)))
    return pa.StructArray.from_arrays(
        [
            pa.array([tag.generation], pa.int64()),
            pa.array([tag.size_bytes], pa.int64()),
            pa.StructArray.from_arrays(columns, names=schema.names),
        ],
        names=["generation", "size_bytes", "columns"],
    )
