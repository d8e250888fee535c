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
  is shared, or the link is the bottleneck). Batches of plain reads also fit
  their wall seconds per object and per decoded byte of fixed-width and of
  variable-width columns: what everything the client does (opening, planning
  and decoding, on the CPU it has) made of them, which a CPU rate alone misses.
- Storage: CPU = per decoded byte read (decode, filter) + per decoded reply
  byte (encode), fitted by least squares over recent replies (the costs differ
  by 3x between a selective and a full reply); its parallelism is storage CPU
  seconds over the wall seconds of the calls that spent them (below 1 when
  other work shares its cores: then each CPU second costs more than a second),
  from batches the link did not hold up (moving their bytes took under half
  their time), as are the client's.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np

#: A link period (or a reply phase) shorter in bytes says more about latency than throughput.
MIN_LINK_SAMPLE_BYTES = 1 << 20
#: Replies smaller than this (decoded) are mostly their fixed framing: not a compression sample.
MIN_COMPRESSION_SAMPLE_BYTES = 64 << 10
#: Weight of a new observation in a smoothed rate.
SMOOTHING = 0.3
#: Weight kept by earlier replies in storage's fit at each new one (about the last 50 objects).
STORAGE_MEMORY = 0.98
#: Weight kept by earlier batches of plain reads in their fit at each new one (about the last 5).
PLAIN_MEMORY = 0.8


@dataclass
class Smoothed:
    """An exponentially weighted mean; None until observed."""

    value: float | None = None

    def observe(self, sample: float) -> None:
        self.value = sample if self.value is None else (1 - SMOOTHING) * self.value + SMOOTHING * sample


class LinearFit:
    """y = sum of coefficient * x over a few terms, every coefficient >= 0: least
    squares over decayed sums of recent observations (each new one keeps
    `memory` of the weight of those before). Where the full fit has a negative
    term (or the observations cannot tell the terms apart), the best fit of
    fewer terms explains them."""

    def __init__(self, terms: int, memory: float, least_observations: int = 1) -> None:
        self.memory, self.least_observations = memory, least_observations
        self.gram = np.zeros((terms, terms))
        self.moments = np.zeros(terms)
        self.observations = 0

    def observe(self, xs: tuple[float, ...], y: float) -> None:
        x = np.asarray(xs, dtype=np.float64)
        self.gram = self.memory * self.gram + np.outer(x, x)
        self.moments = self.memory * self.moments + x * y
        self.observations += 1

    def coefficients(self) -> tuple[float, ...] | None:
        """None until least_observations were made (or nothing could be fitted)."""
        if self.observations < self.least_observations:
            return None
        terms = len(self.moments)
        best, best_residual = None, math.inf
        for used in range(1, 1 << terms):
            chosen = [term for term in range(terms) if used >> term & 1]
            gram = self.gram[np.ix_(chosen, chosen)]
            scale = np.prod(np.diag(gram))
            if scale <= 0 or abs(np.linalg.det(gram)) <= 1e-9 * scale:
                continue  # these terms cannot be told apart
            solved = np.linalg.solve(gram, self.moments[chosen])
            if (solved < 0).any():
                continue
            coefficients = np.zeros(terms)
            coefficients[chosen] = solved
            residual = coefficients @ self.gram @ coefficients - 2 * coefficients @ self.moments
            if best is None or residual < best_residual - 1e-12 * abs(best_residual):
                best, best_residual = coefficients, residual
        return None if best is None else tuple(float(value) for value in best)


class ObservedRates:
    """The rates of one store connection (one backend object)."""

    def __init__(self, link_bytes_per_second: float | None = None) -> None:
        self.link_override = link_bytes_per_second
        self.link = Smoothed()
        self.client_cpu_per_byte = Smoothed()  # plain reads: decode and filter, per decoded byte needed
        self.reply_cpu: dict[str, Smoothed] = {}  # codec -> the client's decode of a reply, per decoded byte
        self.storage = LinearFit(2, STORAGE_MEMORY)  # CPU s = a * decoded bytes read + b * decoded reply bytes
        # Wall s of a batch of plain reads = a * objects + b * fixed-width + c * variable-width decoded
        # bytes: what the client's work (its CPU share, its threads, the link) made of them.
        self.plain = LinearFit(3, PLAIN_MEMORY, least_observations=3)
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
            self.storage.observe((read_decoded, reply_decoded), cpu_s)
            if reply_decoded >= MIN_COMPRESSION_SAMPLE_BYTES:
                self.compression.setdefault(codec, Smoothed()).observe(sent / reply_decoded)

    def reply_decoded(self, decoded: int, cpu_s: float, codec: str) -> None:
        if decoded >= MIN_LINK_SAMPLE_BYTES:
            with self._lock:
                self.reply_cpu.setdefault(codec, Smoothed()).observe(cpu_s / decoded)

    def reply_cpu_per_byte(self, codec: str) -> float | None:
        """The client's CPU seconds to decode a reply with codec, per decoded byte."""
        observed = self.reply_cpu.get(codec)
        return None if observed is None else observed.value

    def pushdown_phase(self, objects: int, moved: int, storage_cpu_s: float, wall_s: float) -> None:
        """Calls of one request to several objects: storage CPU seconds per wall second."""
        if self._cpu_bound(objects, moved, storage_cpu_s, wall_s):
            with self._lock:
                self.storage_parallelism.observe(storage_cpu_s / wall_s)

    def plain_phase(
        self, objects: int, moved: int, client_cpu_s: float, wall_s: float, decoded: tuple[float, float]
    ) -> None:
        """Plain reads of several objects: client CPU seconds per wall second,
        and their wall seconds against their decoded (fixed-width, variable-width) bytes."""
        with self._lock:
            if objects and wall_s > 0:
                self.plain.observe((objects, *decoded), wall_s)
            if self._cpu_bound(objects, moved, client_cpu_s, wall_s):
                self.client_parallelism.observe(client_cpu_s / wall_s)

    def plain_seconds(self, objects: int, decoded: tuple[float, float]) -> float | None:
        """The wall seconds plain reads of objects would take, as recent batches
        of them did; None until a few were observed."""
        with self._lock:
            costs = self.plain.coefficients()
        return None if costs is None else float(np.dot(costs, (objects, *decoded)))

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
