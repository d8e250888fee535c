"""The time of pushdown against the time of plain reads, for the objects a
decision covers, from the rates the store connection observed
(observed_rates.py). Work on both sides overlaps (calls and plain reads are in
flight together), so each path takes as long as its slowest resource:

- pushdown: storage's CPU over its parallelism, the replies as sent over the
  link, the client decoding the replies;
- plain read: the objects' bytes over the link, and the client's own time:
  as recent batches of plain reads took per object and per decoded byte of
  fixed- and of variable-width columns once a few were seen, else its decode
  CPU over its parallelism.

Parallelism is observed (CPU seconds over wall seconds), not the cores: on a
shared machine it is what the work actually got, below one core if need be. Until it is observed, the
cores of this machine (client) and one (storage).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from skyhook.execution.observed_rates import ObservedRates


@dataclass(frozen=True)
class Work:
    """Totals over the objects a decision covers."""

    object_bytes: float  # what plain reads move (the extents of the groups needed)
    decoded_bytes: float  # the columns read, decoded (either side decodes them)
    reply_decoded: float  # the replies' decoded bytes
    reply_sent: float | None = None  # as sent; None: by the codec's observed compression
    storage_cpu_s: float | None = None  # measured on a sample; None: by storage's observed costs
    objects: int = 0  # how many (0: not known, plain reads then by the client's CPU rate)
    variable_bytes: float = 0.0  # of decoded_bytes, in variable-width columns (strings, lists)


@dataclass(frozen=True)
class Estimate:
    pushdown_s: float
    plain_s: float
    link_bytes_per_second: float

    @property
    def pushdown(self) -> bool:
        return self.pushdown_s <= self.plain_s

    def describe(self) -> str:
        return (
            f"estimated pushdown {self.pushdown_s:.3f} s vs plain reads {self.plain_s:.3f} s "
            f"(link {self.link_bytes_per_second / 1e6:.0f} MB/s)"
        )


def estimate(rates: ObservedRates, work: Work, codec: str, within_object: bool = False) -> Estimate | None:
    """None while a rate the estimate needs has not been observed.
    within_object: storage pushes back replies that would pass their objects'
    size, so such pushdown costs its work and then the plain reads."""
    link = rates.link_bytes_per_second
    client_s = plain_client_seconds(rates, work)
    if link is None or client_s is None:
        return None
    storage_cpu_s = work.storage_cpu_s
    if storage_cpu_s is None:
        costs = rates.storage.coefficients()
        if costs is None:
            return None
        storage_cpu_s = costs[0] * work.decoded_bytes + costs[1] * work.reply_decoded
    sent = work.reply_sent
    if sent is None:
        factor = 1.0 if codec == "none" else rates.compression_factor(codec)
        if factor is None:
            return None
        sent = work.reply_decoded * factor
    client_parallelism = rates.client_parallelism.value or os.cpu_count() or 1
    pushdown_s = max(
        storage_cpu_s / (rates.storage_parallelism.value or 1.0),
        sent / link,
        (rates.reply_cpu_per_byte(codec) or 0.0) * work.reply_decoded / client_parallelism,
    )
    plain_s = max(work.object_bytes / link, client_s)
    if within_object and sent > work.object_bytes:
        pushdown_s += plain_s
    return Estimate(pushdown_s, plain_s, link)


def plain_client_seconds(rates: ObservedRates, work: Work) -> float | None:
    """The client's time for plain reads of work, by recent batches of them or its CPU rate."""
    if work.objects:
        fitted = rates.plain_seconds(work.objects, (work.decoded_bytes - work.variable_bytes, work.variable_bytes))
        if fitted is not None:
            return fitted
    client = rates.client_cpu_per_byte.value
    if client is None:
        return None
    return client * work.decoded_bytes / (rates.client_parallelism.value or os.cpu_count() or 1)
