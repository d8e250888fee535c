"""What a store connection observes of its own work, for the cost model
(link_cost.py): the link's throughput, the client's and storage's CPU per byte,
storage's parallelism and each reply codec's compression. Nothing here is
configured (an optional fixed link rate aside, for tests and operators): every
rate is an exponentially smoothed estimate from the connection's transfers and
from the statistics its replies carry.

- Link: bytes of plain reads over the time at least one was in flight (reads
  overlap; a period counts once it moved at least MIN_LINK_SAMPLE_BYTES, as
  latency dominates smaller ones). Replies are not used: their time is
  mostly storage's work.
- Client: thread CPU seconds of a plain read's decode and filter per decoded
  byte of the columns it needed; its parallelism is those CPU seconds over the
  wall seconds of the reads that spent them (below the cores when the machine
  is shared, or the link is the bottleneck).
- Storage: CPU = per decoded byte read (decode, filter) + per decoded reply
  byte (encode), fitted by least squares over recent replies (the costs differ
  by 3x between a selective and a full reply); its parallelism is storage CPU
  seconds over the wall seconds of the calls that spent them (below 1 when
  other work shares its cores: then each CPU second costs more than a second),
  from batches the link did not hold up (moving their bytes took under half
  their time), as are the client's.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, field

#: A link period (or a reply phase) shorter in bytes says more about latency than throughput.
MIN_LINK_SAMPLE_BYTES = 1 << 20
#: Replies smaller than this (decoded) are mostly their fixed framing: not a compression sample.
MIN_COMPRESSION_SAMPLE_BYTES = 64 << 10
#: Weight of a new observation in a smoothed rate.
SMOOTHING = 0.3
#: Weight kept by earlier replies in storage's fit at each new one (about the last 50 objects).
STORAGE_MEMORY = 0.98


@dataclass
class Smoothed:
    """An exponentially weighted mean; None until observed."""

    value: float | None = None

    def observe(self, sample: float) -> None:
        self.value = sample if self.value is None else (1 - SMOOTHING) * self.value + SMOOTHING * sample


@dataclass
class StorageFit:
    """cpu_s = per_read_byte * decoded bytes read + per_reply_byte * decoded reply
    bytes, non-negative least squares over decayed sums of recent replies."""

    sums: list[float] = field(default_factory=lambda: [0.0] * 5)  # rr, rd, dd, rc, dc

    def observe(self, read: float, reply: float, cpu_s: float) -> None:
        terms = (read * read, read * reply, reply * reply, read * cpu_s, reply * cpu_s)
        self.sums = [STORAGE_MEMORY * old + new for old, new in zip(self.sums, terms)]

    def coefficients(self) -> tuple[float, float] | None:
        rr, rd, dd, rc, dc = self.sums
        if rr <= 0:
            return None
        determinant = rr * dd - rd * rd
        if determinant > 1e-9 * rr * dd:
            per_read, per_reply = (rc * dd - dc * rd) / determinant, (dc * rr - rc * rd) / determinant
            if per_read >= 0 and per_reply >= 0:
                return per_read, per_reply
        # Replies alike in shape (or a negative term): the cheaper one-term fit that explains most.
        by_read = (max(0.0, rc / rr), 0.0)
        by_reply = (0.0, max(0.0, dc / dd)) if dd > 0 else by_read
        residual = lambda a, b: a * a * rr + 2 * a * b * rd + b * b * dd - 2 * (a * rc + b * dc)  # noqa: E731
        return min(by_read, by_reply, key=lambda ab: residual(*ab))


class ObservedRates:
    """The rates of one store connection (one backend object)."""

    def __init__(self, link_bytes_per_second: float | None = None) -> None:
        self.link_override = link_bytes_per_second
        self.link = Smoothed()
        self.client_cpu_per_byte = Smoothed()  # plain reads: decode and filter, per decoded byte needed
        self.reply_cpu_per_byte = Smoothed()  # the client's decode of a reply, per decoded byte
        self.storage = StorageFit()
        self.storage_parallelism = Smoothed()
        self.client_parallelism = Smoothed()
        self.client_cpu_s = 0.0  # of every plain read so far, for the parallelism of a batch of them
        self.compression: dict[str, Smoothed] = {}  # codec -> bytes sent / decoded bytes
        self._lock = threading.Lock()
        self._in_flight = 0
        self._period_start = 0.0
        self._period_bytes = 0

    @property
    def link_bytes_per_second(self) -> float | None:
        return self.link_override or self.link.value

    def compression_factor(self, codec: str) -> float | None:
        """Reply bytes as sent over their decoded bytes, with codec."""
        observed = self.compression.get(codec)
        return None if observed is None else observed.value

    def transfer_started(self) -> None:
        with self._lock:
            if self._in_flight == 0:
                self._period_start, self._period_bytes = time.perf_counter(), 0
            self._in_flight += 1

    def transfer_ended(self, moved: int) -> None:
        with self._lock:
            self._in_flight -= 1
            self._period_bytes += moved
            if self._in_flight == 0 and self._period_bytes >= MIN_LINK_SAMPLE_BYTES:
                elapsed = max(1e-6, time.perf_counter() - self._period_start)
                self.link.observe(self._period_bytes / elapsed)

    def plain_read(self, decoded: int, cpu_s: float) -> None:
        with self._lock:
            self.client_cpu_s += cpu_s
            if decoded >= MIN_LINK_SAMPLE_BYTES:
                self.client_cpu_per_byte.observe(cpu_s / decoded)

    def reply(self, read_decoded: int, reply_decoded: int, sent: int, cpu_s: float, codec: str) -> None:
        with self._lock:
            self.storage.observe(read_decoded, reply_decoded, cpu_s)
            if reply_decoded >= MIN_COMPRESSION_SAMPLE_BYTES:
                self.compression.setdefault(codec, Smoothed()).observe(sent / reply_decoded)

    def reply_decoded(self, decoded: int, cpu_s: float) -> None:
        if decoded >= MIN_LINK_SAMPLE_BYTES:
            with self._lock:
                self.reply_cpu_per_byte.observe(cpu_s / decoded)

    def pushdown_phase(self, objects: int, moved: int, storage_cpu_s: float, wall_s: float) -> None:
        """Calls of one request to several objects: storage CPU seconds per wall second."""
        if self._cpu_bound(objects, moved, storage_cpu_s, wall_s):
            with self._lock:
                self.storage_parallelism.observe(storage_cpu_s / wall_s)

    def plain_phase(self, objects: int, moved: int, client_cpu_s: float, wall_s: float) -> None:
        """Plain reads of several objects: client CPU seconds per wall second."""
        if self._cpu_bound(objects, moved, client_cpu_s, wall_s):
            with self._lock:
                self.client_parallelism.observe(client_cpu_s / wall_s)

    def _cpu_bound(self, objects: int, moved: int, cpu_s: float, wall_s: float) -> bool:
        """Whether a batch's CPU seconds over its wall seconds tell its share of
        the cores: not when the link took most of the time (CPU then waited)."""
        link = self.link_bytes_per_second
        return objects >= 2 and cpu_s > 0 and wall_s > 0 and (link is None or moved / link < wall_s / 2)


_rates: weakref.WeakKeyDictionary[object, ObservedRates] = weakref.WeakKeyDictionary()
_rates_lock = threading.Lock()


def rates_of(backend: object) -> ObservedRates:
    """The observed rates of a store connection (kept as long as it is)."""
    with _rates_lock:
        rates = _rates.get(backend)
        if rates is None:
            rates = _rates[backend] = ObservedRates(getattr(backend, "link_bytes_per_second", None))
        return rates
