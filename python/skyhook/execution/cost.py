"""The cost model of scans: per object, push the scan into storage or read the
object plainly and filter at the client.

Pushdown pays when the reply is much smaller than the object; at high
selectivity storage does the client's decoding plus an IPC encode and the
reply is as large as the object (measured: at 100 % pushdown is 14-30 %
slower). When partition statistics prove that every row passes, the decoded
sizes of the wanted columns predict the reply; otherwise the first object is
pushed down as a sample and its reply-to-object size ratio decides the rest.
An object whose design keeps its columns in several groups is read only in the
extents of the groups that hold the needed columns: those are its bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow.compute as pc

from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.pruning import matching_partitions
from skyhook.plan.expressions import columns_read

#: Push down while a reply, as sent (compressed), is expected to be at most this
#: fraction of its object. Pushdown stops paying when the *decoded* reply nears a
#: quarter of the object (storage decodes, filters and encodes what the client
#: would only decode); compressed, that reply is smaller by the codec's factor, so
#: the threshold on compressed bytes falls with it. bench/replies.py, lineitem SF 1,
#: 3 columns of 25 % of the rows (pushdown about as fast as plain reads): reply/object
#: 0.251 uncompressed, 0.095 lz4, 0.056 zstd.
PUSHDOWN_THRESHOLDS = {"none": 0.25, "lz4": 0.10, "zstd": 0.05}


def every_row_passes(manifest: Manifest, filter: pc.Expression | None, partitions: list[Partition]) -> bool:
    """Statistics prove the filter is true (or null) for every row of partitions."""
    if filter is None:
        return True
    may_fail = {p.number for p in matching_partitions(manifest, ~filter)}
    return not may_fail & {p.number for p in partitions}


def predicted_reply_ratio(
    manifest: Manifest, filter: pc.Expression | None, partitions: list[Partition], columns
) -> float | None:
    """Reply bytes over object bytes when statistics can tell (every row passes
    and plain columns are wanted); None when only a sample can."""
    if isinstance(columns, Mapping) or not every_row_passes(manifest, filter, partitions):
        return None
    names = manifest.schema.names if columns is None else list(columns)
    kept = {p.number for p in partitions}
    statistics = [row for partition, row in zip(manifest.partitions, manifest.statistics) if partition.number in kept]
    reply = sum(row[name]["bytes"].as_py() or 0 for row in statistics for name in names)
    needed = columns_read(manifest.schema, columns, filter)
    return reply / max(1, sum(bytes_read(p, needed) for p in partitions))


def bytes_read(partition: Partition, columns: list[str] | None) -> int:
    """The bytes of an object that a read of columns (None: all) reads: the
    extents of the column groups that hold them, or the whole object."""
    if partition.design.monolithic:
        return partition.size_bytes
    return sum(group.length for group in partition.design.groups_holding(columns))
