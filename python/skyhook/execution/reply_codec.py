"""The codec replies travel with, when the user leaves it open: the one whose
replies cost the least time per decoded byte on the slowest of the three
resources they pass through (the link, storage encoding them, the client
decoding them), by the rates the store connection observed. zstd moves the
fewest bytes but costs the most CPU on both ends: it wins on a slow link, lz4
where a client with a small CPU share drinks from a fast link, no codec where
the link is faster than either end could compress."""

from __future__ import annotations

from skyhook.backends.base import MethodCaller
from skyhook.execution.observed_rates import ObservedRates
from skyhook.rpc.result_options import COMPRESSIONS, checked_compression

#: Per decoded byte of a lineitem reply, until observed: bytes sent, storage's CPU
#: seconds to encode, the client's to decode (pyarrow's IPC writer and reader on
#: this project's machine; the client's with the replies' framing and threads).
PRIORS = {
    "none": (1.0, 0.08e-9, 0.03e-9),
    "lz4": (0.40, 0.8e-9, 0.55e-9),
    "zstd": (0.23, 2.0e-9, 1.5e-9),
}


def reply_codec(requested: str | None, backend: MethodCaller, rates: ObservedRates) -> str:
    """As requested; else, across a link whose rate and the client's CPU share
    have been observed, the fastest codec for these rates; else the backend's default."""
    codec = checked_compression(requested, backend.reply_compression)
    link, client = rates.link_bytes_per_second, rates.client_parallelism.value
    if requested is not None or backend.runs_in_process or link is None or client is None:
        return codec
    storage = rates.storage_parallelism.value or 1.0
    return min(COMPRESSIONS, key=lambda name: seconds_per_byte(rates, name, link, client, storage))


def seconds_per_byte(rates: ObservedRates, codec: str, link: float, client: float, storage: float) -> float:
    """The slowest resource's seconds per decoded byte of replies with codec."""
    _, encode, decode = PRIORS[codec]
    decode = rates.reply_cpu_per_byte(codec) or decode
    return max(compression_factor(rates, codec) / link, decode / client, encode / storage)


def compression_factor(rates: ObservedRates, codec: str) -> float:
    """Bytes sent per decoded byte: as observed; else the prior, scaled by how
    another codec's observed factor compares with its prior (the data's own
    compressibility)."""
    observed = rates.compression_factor(codec)
    if observed is not None or codec == "none":
        return observed or 1.0
    prior = PRIORS[codec][0]
    for other in ("zstd", "lz4"):
        seen = rates.compression_factor(other)
        if other != codec and seen is not None:
            return min(1.0, prior * seen / PRIORS[other][0])
    return prior
