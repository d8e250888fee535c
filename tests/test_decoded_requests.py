"""Decoded requests kept across calls (cpp/skyhook/protocol/decoded_requests.h):
a query's later calls reuse its filter's checked, decoded form, found by the
request's exact bytes. Two filters of the same length get each its own answer;
what fails validation is refused every time, also the second; bytes valid as
a projection are still checked as a filter. Both backends."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.substrait as pas
import pytest

import skyhook
from skyhook.rpc.frame import encode_request_frame
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import ScanRequest

F = pc.field
TABLE = pa.table({"id": pa.array(range(3000), pa.int64()), "x": pa.array([i * 0.5 for i in range(3000)])})


@pytest.fixture
def dataset(store):
    return store.write_dataset("t", TABLE, rows_per_object=1000)


def call_scan(dataset, request: bytes, partition: int = 0) -> pa.Table:
    reply = decode_reply(
        dataset.store.backend.call(dataset.manifest.partitions[partition].object_name, "scan", request)
    )
    reply.raise_for_status("scan")
    return reply.reader().read_all()


def serialized(expression: pc.Expression) -> bytes:
    return bytes(pas.serialize_expressions([expression], ["f"], TABLE.schema))


def test_filters_of_one_length_get_each_their_own_rows(dataset):
    below, above = F("id") < 1500, F("id") > 1500
    assert len(serialized(below)) == len(serialized(above)) and serialized(below) != serialized(above)
    object_rows = TABLE.slice(1000, 1000)
    for _ in range(3):
        for filter in (below, above):
            got = call_scan(dataset, ScanRequest(filter=serialized(filter)).encode(), partition=1)
            assert got.equals(object_rows.filter(filter))
            assert dataset.to_table(filter=filter).sort_by("id").equals(TABLE.filter(filter))


@pytest.mark.parametrize(
    "fields, error, message",
    [
        ({"filter": b"\x08\x96\x01 not substrait"}, skyhook.InvalidRequestError, "Substrait filter"),
        ({"filter": serialized(F("id") + 1)}, skyhook.InvalidRequestError, "boolean"),
        # Valid bytes, but a literal IN list longer than a request may carry.
        ({"filter": serialized(F("id").isin(pa.array(range(5000))))}, skyhook.InvalidRequestError, "IN"),
    ],
)
def test_invalid_filters_are_refused_every_time(dataset, fields, error, message):
    for _ in range(3):
        with pytest.raises(error, match=message):
            call_scan(dataset, encode_request_frame({"method": "scan", **fields}))


def test_bytes_valid_as_a_projection_are_checked_again_as_a_filter(dataset):
    plus_one = serialized(F("id") + 1)
    got = call_scan(dataset, ScanRequest(projection=plus_one).encode())
    assert got.column(0).to_pylist() == list(range(1, 1001))
    for _ in range(2):
        with pytest.raises(skyhook.InvalidRequestError, match="boolean"):
            call_scan(dataset, ScanRequest(filter=plus_one).encode())
