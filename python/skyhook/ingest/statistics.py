"""Per-partition statistics, computed in storage by the describe method."""

from __future__ import annotations

import pyarrow as pa

from skyhook.backends.base import MethodCaller
from skyhook.catalog.manifest import statistics_type
from skyhook.errors import CorruptObjectError
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import DescribeRequest


def describe_object(caller: MethodCaller, object_name: str) -> tuple[pa.StructArray, dict[str, int]]:
    """Per-column statistics of one object ({min, max, null_count} per column,
    a one-row struct array) and the call's statistics, computed in storage."""
    return _described(caller.call(object_name, DescribeRequest.METHOD, DescribeRequest().encode()), object_name)


def _described(encoded: bytes, object_name: str) -> tuple[pa.StructArray, dict[str, int]]:
    reply = decode_reply(encoded)
    reply.raise_for_status(f"describing object {object_name}")
    return reply.reader().read_all().to_struct_array().combine_chunks(), reply.statistics


def partition_statistics(caller: MethodCaller, object_name: str, schema: pa.Schema) -> pa.StructArray:
    """The manifest's statistics row of one partition object of a dataset of schema."""
    return _in_schema(describe_object(caller, object_name)[0], schema)


def objects_statistics(caller: MethodCaller, objects: list[tuple[str, pa.Schema]]) -> list[pa.StructArray]:
    """partition_statistics of each (object, schema of its columns), the calls
    in flight together (a commit describes all its new objects at once)."""
    request = DescribeRequest().encode()
    replies = caller.call_many(DescribeRequest.METHOD, [(name, request) for name, _ in objects])
    return [_in_schema(_described(encoded, name)[0], schema) for (name, schema), encoded in zip(objects, replies)]


def damaged_objects(caller: MethodCaller, object_names: list[str]) -> list[str]:
    """ "object <name>: <what>" of the objects whose bytes fail their checksums (or do not
    decode), each read whole in storage by the describe method, the calls in flight together."""
    request = DescribeRequest().encode()
    replies = caller.call_many(DescribeRequest.METHOD, [(name, request) for name in object_names])
    damaged = []
    for name, encoded in zip(object_names, replies):
        try:
            decode_reply(encoded).raise_for_status(f"object {name}")
        except CorruptObjectError as error:
            damaged.append(str(error))
    return damaged


def _in_schema(row: pa.StructArray, schema: pa.Schema) -> pa.StructArray:
    # An object's columns are in the order of its column groups: take the dataset's.
    names = [field.name for field in row.type]
    if names != schema.names and sorted(names) == sorted(schema.names):
        row = pa.StructArray.from_arrays([row.field(name) for name in schema.names], schema.names)
    return row.cast(statistics_type(schema))


def concat_statistics(rows: list[pa.StructArray], schema: pa.Schema) -> pa.StructArray:
    if not rows:
        return pa.array([], statistics_type(schema))
    return pa.concat_arrays(rows)
