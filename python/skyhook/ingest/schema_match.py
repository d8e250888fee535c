"""Rows appended to a dataset take its schema. Accepted: the same columns in any
order; a type that widens losslessly into the dataset's (a narrower integer,
float32 to float64, string or binary to their large forms, a dictionary of a
fitting type, all-null columns); a nullable column left out (it reads as
null). Refused with SchemaMismatchError: extra columns, a missing non-nullable
one, and every other type (a narrowing or a cast that can fail)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator

import pyarrow as pa

from skyhook.errors import SchemaMismatchError
from skyhook.ingest.sources import Source


def _widens(source: pa.DataType, target: pa.DataType) -> bool:
    """Every value of source is exactly a value of target."""
    types = pa.types
    if source == target or types.is_null(source):
        return True
    if types.is_dictionary(source):
        return _widens(source.value_type, target)
    if types.is_integer(source) and types.is_integer(target):
        if types.is_signed_integer(source) and not types.is_signed_integer(target):
            return False
        extra_bit = types.is_unsigned_integer(source) and types.is_signed_integer(target)
        return source.bit_width + extra_bit <= target.bit_width
    if types.is_floating(source) and types.is_floating(target):
        return source.bit_width <= target.bit_width
    return (types.is_string(source) and types.is_large_string(target)) or (
        types.is_binary(source) and types.is_large_binary(target)
    )


def schema_problems(source: pa.Schema, target: pa.Schema) -> list[str]:
    """Why rows of source cannot be appended to a dataset of target (none if they can)."""
    problems = [f"it has no column {name!r}" for name in source.names if name not in target.names]
    for field in target:
        if field.name not in source.names:
            if not field.nullable:
                problems.append(f"the input lacks the non-nullable column {field.name!r}")
        elif not _widens(source.field(field.name).type, field.type):
            problems.append(f"column {field.name!r} is {field.type}, the input's {source.field(field.name).type}")
    return problems


def conform(source: Source, target: pa.Schema, dataset: str) -> Source:
    """source's rows in target's schema (the module says what fits)."""
    if len(set(source.schema.names)) != len(source.schema.names):
        raise SchemaMismatchError(f"cannot append to dataset {dataset!r}: the input names a column twice")
    problems = schema_problems(source.schema, target)
    if problems:
        raise SchemaMismatchError(f"cannot append to dataset {dataset!r}: {'; '.join(problems)}")
    if source.schema.remove_metadata() == target.remove_metadata():
        return Source(target, ((key, batch.replace_schema_metadata(target.metadata)) for key, batch in source.batches))

    def conformed() -> Iterator[tuple[Hashable, pa.RecordBatch]]:
        for key, batch in source.batches:
            columns = [
                batch.column(field.name).cast(field.type)
                if field.name in batch.schema.names
                else pa.nulls(batch.num_rows, field.type)
                for field in target
            ]
            yield key, pa.RecordBatch.from_arrays(columns, schema=target)

    return Source(target, conformed())
