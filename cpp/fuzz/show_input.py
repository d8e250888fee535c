"""Prints a fuzz_requests input readably: the method and object its selector
byte chooses, the header fields, and each Substrait field as protobuf text.

    .venv/bin/python cpp/fuzz/show_input.py cpp/fuzz/regressions/fuzz_requests/FILE
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
from google.protobuf.message import DecodeError
from substrait.gen.proto import extended_expression_pb2, plan_pb2

HERE = Path(__file__).resolve().parent
METHODS = ["scan", "describe", "execute_plan"]  # kFuzzedMethods' order (fuzz_requests.cc)


def show(path: Path) -> None:
    data = path.read_bytes()
    objects = sorted(p.name for p in (HERE / "objects").iterdir())
    print(f"{path.name}: {METHODS[data[0] % 3]} on {objects[data[0] // 3 % len(objects)]}")
    request = data[1:]
    header_length = int.from_bytes(request[8:12], "little")
    try:
        header = pa.ipc.open_stream(request[16 : 16 + header_length]).read_next_batch()
    except (pa.ArrowException, ValueError) as error:
        print(f"  header does not decode: {error}")
        return
    for name, column in zip(header.schema.names, header.columns):
        value = column[0].as_py()
        if not isinstance(value, bytes):
            print(f"  {name}: {value!r}")
            continue
        message = plan_pb2.Plan() if name == "plan" else extended_expression_pb2.ExtendedExpression()
        try:
            message.ParseFromString(value)
            print(f"  {name}:\n    " + str(message).replace("\n", "\n    "))
        except DecodeError:
            print(f"  {name}: {len(value)} bytes that are not a {type(message).__name__}")


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        show(Path(argument))
