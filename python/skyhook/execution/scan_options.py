"""How scans and aggregates run: one typed options type, made once from the
keywords the reading methods of Dataset take (errors.options_from) and passed
on as it is. The keywords are typed too (AggregateKeywords, ScanKeywords:
``**options: Unpack[ScanKeywords]``), field for field as ScanOptions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import pyarrow as pa

from skyhook.rpc.result_options import PushbackLimits

DEFAULT_MAX_RESULT_BYTES = 1 << 30


@dataclass(frozen=True)
class ScanOptions:
    use_threads: bool = True
    #: True: every object runs in storage; False: read whole and done here; "auto": the cost model decides.
    pushdown: bool | str = "auto"
    #: The selectivity above which the cost model reads plainly (None: its estimate of the crossover).
    pushdown_threshold: float | None = None
    #: The largest reply of one object (scans).
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    #: Push-back: a node declines past this many skyhook calls on it, or stops past this CPU per slice.
    max_in_flight: int | None = None
    max_slice_cpu_ns: int | None = None
    #: "none", "lz4" or "zstd" (None: across a link, the fastest for its observed rates
    #: once they are known, else the backend's; execution/reply_codec.py).
    reply_compression: str | None = None
    #: Storage pushes back a reply larger than its object (None: unless pushdown=True).
    reply_within_object: bool | None = None

    @property
    def pushback(self) -> PushbackLimits:
        return PushbackLimits(max_in_flight=self.max_in_flight, max_slice_cpu_ns=self.max_slice_cpu_ns)


class AggregateKeywords(TypedDict, total=False):
    """ScanOptions as keywords: what aggregates take (see ScanOptions for each)."""

    use_threads: bool
    pushdown: bool | str
    pushdown_threshold: float | None
    max_result_bytes: int
    max_in_flight: int | None
    max_slice_cpu_ns: int | None
    reply_compression: str | None
    reply_within_object: bool | None


class ScanKeywords(AggregateKeywords, total=False):
    """What the reading methods take: ScanOptions as keywords, the largest
    batch to yield, and pyarrow's own scanner options (used by the Arrow
    dataset's scanner; fragment_scan_options is skyhook's own, so ignored)."""

    batch_size: int | None
    batch_readahead: int
    fragment_readahead: int
    cache_metadata: bool
    memory_pool: pa.MemoryPool | None
    fragment_scan_options: object
