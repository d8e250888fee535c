"""Comparing what storage returned with what the oracle computed."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def assert_same_table(actual: pa.Table, expected: pa.Table) -> None:
    """Equal schema and values in the same order; NaN equals NaN; dictionaries
    by their values (how a dictionary encodes them is not the answer)."""
    assert actual.schema.names == expected.schema.names
    assert [f.type for f in actual.schema] == [f.type for f in expected.schema]
    assert actual.num_rows == expected.num_rows
    for name in expected.column_names:
        left, right = actual.column(name).combine_chunks(), expected.column(name).combine_chunks()
        if pa.types.is_dictionary(right.type):
            left, right = left.dictionary_decode(), right.dictionary_decode()
        if pa.types.is_floating(right.type):
            assert pc.is_nan(left).equals(pc.is_nan(right)), name
            left = pc.if_else(pc.is_nan(left), pa.scalar(0, left.type), left)
            right = pc.if_else(pc.is_nan(right), pa.scalar(0, right.type), right)
        assert left.equals(right), f"column {name} differs"


def assert_one_line_error(code: int, stdout: str, stderr: str, expected: str, expected_code: int = 1) -> None:
    """A command's failure: one line on stderr, no traceback."""
    assert "Traceback" not in stdout + stderr, stdout + stderr
    assert code == expected_code, (code, stdout, stderr)
    assert len(stderr.splitlines()) == 1 and stderr.startswith("error: "), stderr
    assert expected in stderr, stderr
