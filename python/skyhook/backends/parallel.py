"""Ordered, bounded parallel map: many storage calls in flight, results in order."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
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
