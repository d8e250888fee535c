"""Design(compression="auto"): the codec chosen by measured cost. A sample of
the rows is encoded with the C++ core's writer in the design (its format and
column groups) once per codec, and decoded with its reader; the codec whose
estimated read of the store is shortest wins:

    read time = encoded bytes / link rate + decode CPU seconds

The link rate is the one given to connect() or observed on the connection;
until one is known, LOCAL_READ_BYTES_PER_SECOND (an embedded store reads
from local memory or disk)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import pyarrow as pa

from skyhook.backends.object_codec import decode_object, encode_object
from skyhook.catalog.design import COMPRESSIONS, ObjectDesign

#: Rows encoded per codec: enough for the codecs' blocks, small enough to cost milliseconds.
SAMPLE_ROWS = 8192
#: Decodes timed per codec; the fastest counts (the machine is shared).
DECODE_REPEATS = 3
#: The read rate assumed until the connection has one (local disk, page cache).
LOCAL_READ_BYTES_PER_SECOND = 1e9


@dataclass(frozen=True)
class CodecCost:
    codec: str
    sample_bytes: int
    decode_s: float
    read_s: float  # sample_bytes / link + decode_s


@dataclass(frozen=True)
class CodecChoice:
    codec: str
    link_bytes_per_second: float
    link_observed: bool  # False: LOCAL_READ_BYTES_PER_SECOND assumed
    sample_rows: int
    costs: tuple[CodecCost, ...]

    def __str__(self) -> str:
        link = f"{self.link_bytes_per_second / 1e6:.0f} MB/s" + ("" if self.link_observed else " assumed")
        lines = [f"codec {self.codec} (link {link}, sample of {self.sample_rows} rows)"]
        lines += [
            f"  {cost.codec:>4}: {cost.sample_bytes:,} bytes, decode {cost.decode_s * 1e3:.2f} ms, "
            f"read {cost.read_s * 1e3:.2f} ms"
            for cost in self.costs
        ]
        return "\n".join(lines)


def choose_codec(sample: pa.Table, requested: ObjectDesign, link_bytes_per_second: float | None) -> CodecChoice:
    """The codec for objects of requested's design (its compression is ignored)
    whose rows look like sample's first SAMPLE_ROWS."""
    rows = sample.slice(0, SAMPLE_ROWS)
    link = link_bytes_per_second or LOCAL_READ_BYTES_PER_SECOND
    costs = tuple(_cost(rows, replace(requested, compression=codec), link) for codec in COMPRESSIONS)
    best = min(costs, key=lambda cost: cost.read_s)
    return CodecChoice(best.codec, link, link_bytes_per_second is not None, rows.num_rows, costs)


def _cost(rows: pa.Table, design: ObjectDesign, link: float) -> CodecCost:
    encoded, attribute = encode_object(rows, design.to_bytes())
    decode_s = float("inf")
    for _ in range(DECODE_REPEATS):
        started = time.perf_counter()
        decode_object(encoded.size, attribute, None, [(0, encoded)], None, "measuring a codec")
        decode_s = min(decode_s, time.perf_counter() - started)
    return CodecCost(design.compression, encoded.size, decode_s, encoded.size / link + decode_s)
