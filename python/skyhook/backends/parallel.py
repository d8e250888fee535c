"""Ordered, bounded parallel map: many storage calls in flight, results in order."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from itertools import takewhile
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def ordered_map(
    executor: Executor, function: Callable[[Item], Result], items: Iterable[Item], window: int
) -> Iterator[Result]:
    """Results of function over items, in order, with at most window calls pending.
    Closing the iterator cancels the calls that have not started."""
    pending: deque[Future[Result]] = deque()
    try:
        for item in items:
            pending.append(executor.submit(function, item))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


class Admission:
    """How many of a stream's calls may start, in order: a first few (a cost
    model's sample and some more, so that no host waits for the decision),
    then all of them, or no more than have started (the stream ends early)."""

    def __init__(self, first: int) -> None:
        self._allowed = first

    def admits(self, index: int) -> bool:
        return index < self._allowed

    def admit_all(self) -> None:
        self._allowed = sys.maxsize

    def stop(self) -> None:
        self._allowed = 0


def admitted(items: Iterable[Item], admission: Admission | None) -> Iterator[Item]:
    """items while admission lets each start (all without one); checked as each is taken."""
    if admission is None:
        return iter(items)
    return (item for _, item in takewhile(lambda pair: admission.admits(pair[0]), enumerate(items)))
