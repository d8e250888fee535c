"""Writes fuzz_objects regression inputs whose Parquet footers lie in their
row-group statistics (min > max, NaN, invalid UTF-8, a decimal beyond its
precision, a date past the max): the storage scan must neither crash on them
nor skip by values that are not valid bounds (zone_bounds.cc).

    .venv/bin/python cpp/fuzz/craft_footers.py
"""

from __future__ import annotations

import datetime
import io
import struct
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
# Selector bytes: Parquet (kFormats[0]) + 8 x the fixed request (sorted names).
SCAN_FILTER_PROJECTION = 0 + 8 * 5  # filters on i32, s and dec
COUNT_BY_DATE = 0 + 8 * 0  # filters on d


def statistic(data: bytes, column: str, which: str):
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    return getattr(metadata.row_group(0).column(metadata.schema.names.index(column)).statistics, which)


def patched(data: bytes, old: bytes, new: bytes) -> bytes:
    """The object with every occurrence of `old` in its footer replaced."""
    assert len(old) == len(new)
    footer_length = struct.unpack("<i", data[-8:-4])[0]
    start = len(data) - 8 - footer_length
    footer = data[start:-8]
    assert old in footer, old
    return data[:start] + footer.replace(old, new) + data[-8:]


def main() -> None:
    data = (HERE / "objects/typed.parquet").read_bytes()
    day = datetime.date(1970, 1, 1)
    dec_max = int(statistic(data, "dec", "max").scaleb(2))
    lies = {
        "i32-min-above-max": (
            SCAN_FILTER_PROJECTION,
            struct.pack("<i", statistic(data, "i32", "max")),
            struct.pack("<i", statistic(data, "i32", "min") - 1),
        ),
        "string-max-invalid-utf8": (
            SCAN_FILTER_PROJECTION,
            statistic(data, "s", "max").encode(),
            b"\xff" * len(statistic(data, "s", "max").encode()),
        ),
        "decimal-max-beyond-precision": (
            SCAN_FILTER_PROJECTION,
            dec_max.to_bytes(6, "big", signed=True),
            (10**13).to_bytes(6, "big", signed=True),
        ),
        "date-min-past-max": (
            COUNT_BY_DATE,
            struct.pack("<i", (statistic(data, "d", "min") - day).days),
            struct.pack("<i", (datetime.date(2100, 1, 1) - day).days),
        ),
        "double-min-nan": (
            SCAN_FILTER_PROJECTION,
            struct.pack("<d", statistic(data, "f64", "min")),
            struct.pack("<d", float("nan")),
        ),
    }
    for name, (selector, old, new) in lies.items():
        entry = bytes([selector]) + patched(data, old, new)
        (HERE / "regressions/fuzz_objects" / f"parquet-footer-statistics-{name}").write_bytes(entry)


if __name__ == "__main__":
    main()
