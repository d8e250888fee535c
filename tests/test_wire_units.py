"""Typed requests and replies without a backend: the header fields they carry
are the ones the C++ decoders read, and they encode and decode as the protocol says."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pytest

from skyhook.rpc.frame import PREFIX, REQUEST_MAGIC
from skyhook.rpc.reply import Executed, Reply, decode_reply, merge_continuations
from skyhook.rpc.requests import DataRequest, DescribeRequest, PlanRequest, ScanRequest
from skyhook.rpc.result_options import PushbackLimits, ResultOptions
from skyhook.rpc.statistics import CALLS, ROWS_SCANNED, Statistics
from support.replies import frame, header

CPP = Path(__file__).parent.parent / "cpp" / "skyhook"


def fields_read_by(source: str) -> set[str]:
    """Header fields a C++ decoder reads: header.Int64("name"), DecodeExpressions(header, "name", ...),
    DecodeFlag(header, "name")."""
    text = next(CPP.rglob(source)).read_text()
    return set(
        re.findall(r'(?:header\.(?:String|Int64|Binary)\(|(?:DecodeExpressions|DecodeFlag)\(header, )"(\w+)"', text)
    )


def own_fields(request: type) -> set[str]:
    shared = {field.name for field in dataclasses.fields(DataRequest)}
    return {field.name for field in dataclasses.fields(request)} - shared


@pytest.mark.parametrize(
    "python, source",
    [
        (ScanRequest, "scan_request.cc"),
        (PlanRequest, "plan_request.cc"),
    ],
)
def test_requests_carry_the_fields_cpp_reads(python, source):
    assert own_fields(python) == fields_read_by(source)


@pytest.mark.parametrize(
    "python, source", [(ResultOptions, "result_options.cc"), (PushbackLimits, "pushback_limits.cc")]
)
def test_options_carry_the_fields_cpp_reads(python, source):
    assert {field.name for field in dataclasses.fields(python)} == fields_read_by(source)


def header_of(request: bytes) -> dict:
    magic, version, _, length, _ = PREFIX.unpack(request[: PREFIX.size])
    assert (magic, version, length % 8) == (REQUEST_MAGIC, 1, 0)
    header = pa.ipc.open_stream(request[PREFIX.size : PREFIX.size + length]).read_all()
    return {name: (column.type, column[0].as_py()) for name, column in zip(header.column_names, header.columns)}


def test_absent_fields_are_left_out_and_present_ones_typed():
    assert header_of(DescribeRequest().encode()) == {"method": (pa.string(), "describe")}
    request = ScanRequest(
        filter=b"f", result=ResultOptions(batch_size=5, compression="lz4"), pushback=PushbackLimits(max_in_flight=0)
    )
    assert header_of(request.encode()) == {
        "method": (pa.string(), "scan"),
        "filter": (pa.binary(), b"f"),
        "compression": (pa.string(), "lz4"),
        "batch_size": (pa.int64(), 5),
        "delta_sorted_integers": (pa.int64(), 1),  # asked for with any compression
        "max_in_flight": (pa.int64(), 0),
    }


def test_a_continuation_changes_only_the_start_row():
    request = PlanRequest(plan=b"p", result=ResultOptions(compression="zstd"))
    resumed = request.resumed_at(70)
    assert resumed == PlanRequest(plan=b"p", result=ResultOptions(compression="zstd", start_row=70))
    assert header_of(resumed.encode()) == {**header_of(request.encode()), "start_row": (pa.int64(), 70)}


@pytest.mark.parametrize(
    "wire, executed", [(None, Executed.ALL), ("filter", Executed.FILTER_ONLY), ("none", Executed.NONE)]
)
def test_executed_is_typed(wire, executed):
    executed_field = {} if wire is None else {"executed": pa.array([wire])}
    decoded = decode_reply(frame(header(status=pa.array([0], pa.int32()), message=pa.array([""]), **executed_field)))
    assert decoded.executed is executed


def test_continuations_add_up_what_adds_up():
    def part(rows: int, limit: int) -> Reply:
        sink = pa.BufferOutputStream()
        table = pa.table({"x": list(range(rows))})
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return Reply(0, "", statistics=Statistics({ROWS_SCANNED: rows, "limit_call_ms": limit}), body=sink.getvalue())

    merged = merge_continuations([part(3, 5), part(4, 5)])
    assert merged.statistics == {ROWS_SCANNED: 7, "limit_call_ms": 5, CALLS: 2}
    assert merged.reader().read_all().column("x").to_pylist() == [0, 1, 2, 0, 1, 2, 3]
