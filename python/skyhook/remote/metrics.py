"""What the server did, for operators: per call (GetFlightInfo, DoGet, ...)
how many, how many failed and how long they took, and the rows and bytes
streamed; read through the skyhook.metrics action, and logged a line per
call (key=value, so log tools can parse it)."""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, dataclass, field

LOG = logging.getLogger("skyhook.remote")


@dataclass
class CallCounts:
    calls: int = 0
    errors: int = 0
    seconds: float = 0.0
    slowest_seconds: float = 0.0


@dataclass
class Metrics:
    calls: dict[str, CallCounts] = field(default_factory=dict)
    rows_streamed: int = 0
    bytes_streamed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def called(self, method: str, user: str | None, seconds: float, error: str | None) -> None:
        with self.lock:
            counts = self.calls.setdefault(method, CallCounts())
            counts.calls += 1
            counts.errors += error is not None
            counts.seconds += seconds
            counts.slowest_seconds = max(counts.slowest_seconds, seconds)
        LOG.info("call=%s user=%s seconds=%.3f error=%s", method, user or "-", seconds, error or "-")

    def streamed(self, rows: int, size: int) -> None:
        with self.lock:
            self.rows_streamed += rows
            self.bytes_streamed += size

    def report(self) -> dict:
        with self.lock:
            calls = {method: asdict(counts) for method, counts in sorted(self.calls.items())}
            return {"calls": calls, "rows_streamed": self.rows_streamed, "bytes_streamed": self.bytes_streamed}
