"""The type a request names each column by: what Substrait carries of it.

pyarrow's Substrait producer cannot name every Arrow type, and Arrow's consumer
reads some back as another type: a dictionary as its values, decimal32/64 as
fixed-size binary, a zoned timestamp as UTC, views as plain strings and
binaries; duration, decimal256, large and fixed-size lists it cannot name at
all. A request names each column by its *carrier*, storage converts the
object's column to it exactly (cpp/skyhook/storage/object/object_columns.h),
and the client converts replies back to the dataset's types.

A faithful carrier keeps the values and their order, so comparisons, IN lists
and null tests on it are the dataset's (every function, when only the layout
differs: string and binary views); other functions may differ (hour() of
a zoned timestamp, the precision of decimal arithmetic) and run at the client.
An opaque carrier (duration as int64, decimal256 as fixed_size_binary[32],
the same bytes) only carries a column through a projection.
"""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas

_UTC = "UTC"
_OPAQUE = {pa.types.is_duration: pa.int64(), pa.types.is_decimal256: pa.binary(32)}


@functools.lru_cache(maxsize=256)
def carrier(type: pa.DataType) -> pa.DataType | None:
    """The type a request names a column of this type by; None: Substrait cannot carry it."""
    for is_kind, opaque in _OPAQUE.items():
        if is_kind(type):
            return opaque
    if pa.types.is_dictionary(type):
        return type.value_type if _named_as_itself(type.value_type) else None
    if pa.types.is_decimal32(type) or pa.types.is_decimal64(type):
        return pa.decimal128(type.precision, type.scale)
    if pa.types.is_timestamp(type) and type.tz is not None and type.tz != _UTC:
        return pa.timestamp(type.unit, _UTC)
    if pa.types.is_string_view(type):
        return pa.string()
    if pa.types.is_binary_view(type):
        return pa.binary()
    return type if _named_as_itself(type) else None


def is_layout_only(type: pa.DataType) -> bool:
    """The carrier holds the same values in another layout (a view's values as a
    plain string or binary): every function means on it what it means on the column."""
    return pa.types.is_string_view(type) or pa.types.is_binary_view(type)


def is_faithful(type: pa.DataType) -> bool:
    """Comparisons on the column's carrier are comparisons on the column."""
    return carrier(type) is not None and not any(is_kind(type) for is_kind in _OPAQUE)


def request_schema(schema: pa.Schema) -> pa.Schema:
    """schema with each column as its carrier, and as null where Substrait
    cannot carry it: the positions stay (Arrow binds references by position),
    and an expression must not read such a column (see is_carried)."""
    return pa.schema([field.with_type(carrier(field.type) or pa.null()) for field in schema])


def is_carried(field: pa.Field) -> bool:
    return carrier(field.type) is not None


def as_dataset_types(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """table's columns (carriers, or types as stored) as schema's types (ValueError: other columns).
    An object in column groups holds its columns in the groups' order: they are put in schema's."""
    if table.column_names != schema.names and sorted(table.column_names) == sorted(schema.names):
        table = table.select(schema.names)
    if table.column_names != schema.names:
        raise ValueError(f"columns {table.column_names} where {schema.names} were expected")
    columns = [_converted(column, field.type) for column, field in zip(table.columns, schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def _converted(column: pa.ChunkedArray, type: pa.DataType) -> pa.ChunkedArray:
    if column.type == type:
        return column
    if column.type == carrier(type) and not is_faithful(type):
        return pa.chunked_array([chunk.view(type) for chunk in column.chunks], type)
    return column.cast(type)


def _named_as_itself(type: pa.DataType) -> bool:
    """Arrow's consumer reads the type pyarrow's producer names it by back as the same type."""
    try:
        named = pas.serialize_expressions([pc.field("x")], ["x"], pa.schema([("x", type)]))
        return pas.deserialize_expressions(named).schema.field(0).type == type
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
