"""The cost model of scans: per object, push the scan into storage or read the
object plainly and filter at the client.

Pushdown pays when the reply is much smaller than the object; at high
selectivity storage does the client's decoding plus an IPC encode and the
reply is as large as the object (measured: at 100 % pushdown is 14-30 %
slower). Partition statistics settle the clear case (every row passes and
every column is wanted); otherwise the first object is pushed down as a sample
and its reply-to-object size ratio decides for the rest.
"""

from __future__ import annotations

import pyarrow.compute as pc

from skyhook.manifest import Manifest, Partition
from skyhook.pruning import matching_partitions

#: Push down while a reply is expected to be at most this fraction of its object.
DEFAULT_PUSHDOWN_THRESHOLD = 0.25


def every_row_passes(manifest: Manifest, filter: pc.Expression | None, partitions: list[Partition]) -> bool:
    """Statistics prove the filter is true (or null) for every row of partitions."""
    if filter is None:
        return True
    may_fail = {p.number for p in matching_partitions(manifest, ~filter)}
    return not may_fail & {p.number for p in partitions}
