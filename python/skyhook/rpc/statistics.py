"""Names of the statistics a reply carries (cpp/skyhook/storage/: scan,
execute_plan, describe and node limits), and their table in a reply."""

from __future__ import annotations

from skyhook.errors import CorruptReplyError

ROWS_SCANNED = "rows_scanned"
ROWS_RETURNED = "rows_returned"
BYTES_READ = "bytes_read"
BYTES_RETURNED = "bytes_returned"
STORAGE_CPU_NS = "storage_cpu_ns"
SLICES = "slices"  # execute_plan
BYTES_DECODED = "bytes_decoded"  # the reply with its IPC bodies uncompressed
REPLY_OVER_OBJECT = "reply_over_object"  # 1: pushed back, the reply would pass the object's size
BYTES_ABANDONED = "bytes_abandoned"  # reply bytes encoded (or moved, by earlier calls) for nothing
NUM_ROWS = "num_rows"  # describe, transform
ZONES_SKIPPED = "zones_skipped"  # scan: zones (row groups, record batches) whose statistics exclude the filter
KEYS_ON_CODES = "keys_on_codes"  # execute_plan: group keys grouped on dictionary codes, not text
ROWS_READ_BY_INDEX = "rows_read_by_index"  # scan: rows an index found, the only ones filtered
INDEX_BYTES_READ = "index_bytes_read"  # scan: index blocks read from the omap
SECONDARY_REJECTED = "secondary_rejected"  # scan, execute_plan: statistics not used, not proven against the object
BYTES_WRITTEN = "bytes_written"  # transform
BYTES_BEFORE = "bytes_before"  # transform: the object's size before
LIMIT_CALL_MS = "limit_call_ms"
LIMIT_CALL_MEMORY_BYTES = "limit_call_memory_bytes"
LIMIT_NODE_MEMORY_BYTES = "limit_node_memory_bytes"  # what the node's calls may hold together
LIMIT_REPLY_BYTES = "limit_reply_bytes"
LIMIT_MIN_BATCH_SIZE = "limit_min_batch_size"
#: Added by the client: how many calls an object's reply took (node limits end calls early).
CALLS = "calls"

#: Statistics that add up over the calls of one object; the rest (limits) do not.
ADDITIVE = (
    ROWS_SCANNED,
    ROWS_RETURNED,
    BYTES_READ,
    BYTES_RETURNED,
    BYTES_DECODED,
    STORAGE_CPU_NS,
    SLICES,
    INDEX_BYTES_READ,
)  # a continued scan plans its zones again: zones_skipped and rows_read_by_index are the object's


class Statistics(dict[str, int]):
    """Reply statistics: one that a reply lacks makes the reply malformed, not the caller wrong."""

    def __missing__(self, name: str) -> int:
        raise CorruptReplyError(f"storage reply lacks the statistic {name!r}")
