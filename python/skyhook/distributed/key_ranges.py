"""Which of a cluster's key ranges a query's logged range on the key meets:
range i holds keys in [bounds[i-1], bounds[i]) (open at both ends)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.plan.predicate_ranges import ColumnRange


def ranges_met(bounds: pa.Array, on_key: ColumnRange) -> list[bool] | None:
    """Per range, whether on_key's [low, high] meets it (None: a literal not of the key's type)."""
    try:
        low, high = (None if v is None else pa.scalar(v).cast(bounds.type) for v in (on_key.low, on_key.high))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    lowers, uppers = [None, *bounds], [*bounds, None]
    return [
        (high is None or lower is None or pc.less_equal(lower, high).as_py())
        and (low is None or upper is None or pc.less(low, upper).as_py())
        for lower, upper in zip(lowers, uppers)
    ]
