"""The design advisor: designs proposed from the workload log, each with the
bytes the logged queries would read in storage before and after, estimated
from the manifest's statistics. Every proposal's before is one model: each
query's read as storage executes it today (lookup_reads.py: the objects and
zones statistics cannot rule out; the pre-filter's filter column everywhere
and the other columns where a match is, or whole zones).

- cluster key: the column most often range- or equality-filtered, weighted by
  the bytes its queries read. After: the ranges of the cluster the planner
  would build (its key bounds) that the query's key range touches, each an
  equal share of the dataset; within them (sorted by the key) the zones of
  its matches and one more per object met, read by the same model.
- compaction: many objects under half the target size (fewer calls; bytes alike).
- index: point lookups (equality) on a column that is not the cluster key.
  After: per lookup and object, the zones (row groups) its observed matches
  are expected in, the other zones skipped; lookups whose matches were not
  observed (aggregates) as before.
- column groups: the columns most queries read, when they are a minority.
- codec: the codec measured on a sample (skyhook.ingest.codec_choice) when its
  estimated read beats the objects' codec by CODEC_GAIN; the logged queries'
  bytes scaled by the sample's encodings (advice: Dataset.transform applies it).
The first two are transforms (``apply`` plans and runs them); an index that
cuts bytes is applied after them (Dataset.create_index); the others are
reported for part 1's designs."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.pruning import matching_partitions
from skyhook.distributed.key_ranges import ranges_met
from skyhook.distributed.lookup_reads import ObjectRead, lookup_reads
from skyhook.distributed.planner import make_plan
from skyhook.distributed.target import TransformTarget, resolve
from skyhook.errors import InvalidRequestError
from skyhook.execution.cost import bytes_read, column_bytes
from skyhook.execution.workload_log import QueryRecord
from skyhook.ingest.codec_choice import CodecChoice
from skyhook.ingest.partitioning import DEFAULT_TARGET_OBJECT_SIZE
from skyhook.plan.predicate_ranges import ColumnRange


@dataclass(frozen=True)
class Advice:
    kind: str  # "cluster", "compact", "index", "column groups", "codec"
    description: str
    bytes_before: int  # bytes the logged queries read in storage, by the statistics
    bytes_after: int  # estimated only for transforms (advice only: as before)
    target: TransformTarget | None = None  # a transform that applies it
    index: str | None = None  # the column an index on which applies it

    @property
    def applicable(self) -> bool:
        return self.target is not None or (self.index is not None and self.benefit > 1)

    @property
    def benefit(self) -> float:
        return self.bytes_before / max(1, self.bytes_after)

    def __str__(self) -> str:
        if not self.applicable:
            return f"{self.kind}: {self.description}; its queries read {self.bytes_before:,} bytes (advice only)"
        return (
            f"{self.kind}: {self.description}; logged queries read {self.bytes_before:,} -> "
            f"{self.bytes_after:,} bytes ({self.benefit:.1f}x) [--apply]"
        )


#: How much shorter the measured codec's estimated read must be to propose converting to it.
CODEC_GAIN = 1.1


def advise(
    backend: Backend, manifest: Manifest, records: list[QueryRecord], codec: CodecChoice | None = None
) -> list[Advice]:
    """Proposed designs, the transforms first, the most beneficial first;
    codec: the codec measured for the dataset's objects, if any."""
    if not records:
        raise InvalidRequestError(f"no queries of {manifest.dataset!r} are logged: run the workload first")
    proposals = [_cluster(backend, manifest, records), _compaction(manifest, records)]
    transforms = sorted((a for a in proposals if a is not None), key=lambda a: -a.benefit)
    key = next((a.target.cluster_by for a in transforms if a.kind == "cluster"), None)
    others = [index_advice(manifest, records, key), _column_groups(manifest, records), _codec(manifest, records, codec)]
    return transforms + [a for a in others if a is not None]


def _bytes_before(manifest: Manifest, record: QueryRecord) -> int:
    return lookup_reads(manifest, record, _matching(manifest, record)).bytes


def _matching(manifest: Manifest, record: QueryRecord) -> list[Partition]:
    """The partitions today's statistics cannot rule out for the record's predicates."""
    conditions = [r.expression(manifest.schema.field(r.column)) for r in _ranges(manifest, record)]
    filter = None
    for condition in (c for c in conditions if c is not None):
        filter = condition if filter is None else filter & condition
    return matching_partitions(manifest, filter)


def _ranges(manifest: Manifest, record: QueryRecord) -> list[ColumnRange]:
    return [r for r in record.predicates if r.column in manifest.schema.names]


def _cluster(backend: Backend, manifest: Manifest, records: list[QueryRecord]) -> Advice | None:
    weights: Counter[str] = Counter()
    for record in records:
        for found in _ranges(manifest, record):
            if found.low is not None or found.high is not None:
                weights[found.column] += max(1, record.bytes_read)
    if not weights or len(manifest.partitions) < 2:
        return None
    key = weights.most_common(1)[0][0]
    if pa.types.is_nested(manifest.schema.field(key).type):
        return None
    target = TransformTarget(cluster_by=key, rows_per_object=_rows_per_object(manifest))
    bounds = make_plan(backend, manifest, resolve(target, manifest)).key_bounds()
    ranges = 1 if bounds is None else len(bounds) + 1
    before = after = 0
    for record in records:
        before += _bytes_before(manifest, record)
        on_key = [r for r in _ranges(manifest, record) if r.column == key]
        touched = _ranges_touched(bounds, on_key[0]) if on_key else None
        after += _clustered_read(manifest, record, None if touched is None else max(1, touched) / ranges)
    return Advice("cluster", f"cluster by {key!r} ({len(bounds or []) + 1} key ranges)", before, after, target)


def _clustered_read(manifest: Manifest, record: QueryRecord, share: float | None) -> int:
    """The record's read once clustered, by lookup_reads: the objects of the
    key ranges met (share of the dataset's rows, its matches all there) and,
    sorted by the key, in them the zones of its matches and one more per
    object (its range starting mid-zone). Every zone: of every object when
    the query's key range is unknown (share None), of the objects met when its
    matches are (aggregates). Modelled as today's objects at the clustered
    objects' density, scaled by share."""
    rows = manifest.num_rows
    if not rows:
        return 0
    scanned, returned = rows, record.rows_returned
    if share is not None:
        scanned = share * rows
        if returned is not None:
            zone_rows = max(p.design.row_group_size for p in manifest.partitions)
            scanned = min(scanned, returned + share * len(manifest.partitions) * zone_rows)
            returned = math.ceil(returned / share)
        scanned /= share
    dense = replace(record, rows_scanned=math.ceil(scanned), rows_returned=returned)
    return int(lookup_reads(manifest, dense, manifest.partitions).bytes * (share or 1.0))


def _rows_per_object(manifest: Manifest) -> int:
    """Keeps the dataset's object count (at least its row count / 2) for a cluster."""
    return max(1, -(-manifest.num_rows // max(2, len(manifest.partitions))))


def _ranges_touched(bounds: pa.Array | None, on_key: ColumnRange) -> int | None:
    """How many of the cluster's key ranges the key range meets (None: unknown)."""
    if bounds is None:
        return 1
    met = ranges_met(bounds, on_key)
    return None if met is None else sum(met)


def _compaction(manifest: Manifest, records: list[QueryRecord]) -> Advice | None:
    small = [p for p in manifest.partitions if p.size_bytes < DEFAULT_TARGET_OBJECT_SIZE // 2]
    if len(small) < 4:
        return None
    before = sum(_bytes_before(manifest, record) for record in records)
    calls = sum(len(record.objects) for record in records)
    merged = -(-sum(p.size_bytes for p in small) // DEFAULT_TARGET_OBJECT_SIZE)
    return Advice(
        "compact",
        f"merge {len(small)} small objects into about {merged} (the logged queries made {calls} object calls)",
        before,
        before,
        TransformTarget(object_size=DEFAULT_TARGET_OBJECT_SIZE),
    )


def index_advice(manifest: Manifest, records: list[QueryRecord], cluster_key: str | None = None) -> Advice | None:
    """An index on the column most point lookups compare (not the cluster key)."""
    lookups = Counter(
        r.column for record in records for r in _ranges(manifest, record) if r.kind == "eq" and r.column != cluster_key
    )
    if not lookups:
        return None
    column, count = lookups.most_common(1)[0]
    looked_up = [record for record in records if any(r.column == column and r.kind == "eq" for r in record.predicates)]
    before = after = 0
    models: Counter[str] = Counter()
    for record in looked_up:
        reads = lookup_reads(manifest, record, _matching(manifest, record))
        before += reads.bytes
        after += sum(_bytes_with_index(manifest, read, record.columns, column) for read in reads.objects)
        models[reads.describe()] += 1
    model = models.most_common(1)[0][0]
    return Advice("index", f"an index on {column!r} ({count} point lookups; {model})", before, after, index=column)


def _bytes_with_index(manifest: Manifest, read: ObjectRead, columns: list[str], column: str) -> int:
    """The bytes an object's read takes when an index finds the zones holding
    the lookup's matches: those zones and one index block per match at most,
    capped at the read without it (an index costing more brings nothing)."""
    if read.matches is None:
        return read.bytes
    partition = read.partition
    matches = max(1, math.ceil(read.matches))
    index_size = _column_bytes(manifest, column)[partition.number] + _INDEX_ROW_BYTES * partition.num_rows
    blocks = max(1, -(-index_size // INDEX_BLOCK_BYTES))
    index_read = index_size * min(blocks, matches) // blocks
    zones = bytes_read(partition, columns) * read.zones_hit / read.zones
    return min(read.bytes, int(zones) + index_read)


#: An index block's size (column_index.h, kIndexBlockBytes) and its bytes per row besides the key.
INDEX_BLOCK_BYTES = 64 * 1024
_INDEX_ROW_BYTES = 8


def _column_bytes(manifest: Manifest, column: str) -> list[int]:
    """The column's decoded bytes (Arrow buffers, by its statistics) per
    partition, by number (0 where unknown): about what its index holds."""
    if len(manifest.statistics) == 0:
        return [0] * len(manifest.partitions)
    return column_bytes(manifest)[column].tolist()


def _column_groups(manifest: Manifest, records: list[QueryRecord]) -> Advice | None:
    reads = Counter(column for record in records for column in record.columns)
    hot = [column for column, count in reads.items() if count >= len(records) / 2]
    if not hot or len(hot) * 2 > len(manifest.schema):
        return None
    before = sum(_bytes_before(manifest, record) for record in records)
    return Advice("column groups", f"a column group of the hot columns {', '.join(sorted(hot))}", before, before)


def _codec(manifest: Manifest, records: list[QueryRecord], choice: CodecChoice | None) -> Advice | None:
    codecs = Counter(partition.design.compression for partition in manifest.partitions)
    if choice is None or not codecs:
        return None
    current = codecs.most_common(1)[0][0]
    costs = {cost.codec: cost for cost in choice.costs}
    if current not in costs or costs[current].read_s < CODEC_GAIN * costs[choice.codec].read_s:
        return None
    before, after = costs[current], costs[choice.codec]
    read = sum(_bytes_before(manifest, record) for record in records)
    return Advice(
        "codec",
        f"compression {current} -> {choice.codec} (Design(compression={choice.codec!r})): estimated read "
        f"{before.read_s * 1e3:.2f} -> {after.read_s * 1e3:.2f} ms per {choice.sample_rows} rows at "
        f"{choice.link_bytes_per_second / 1e6:.0f} MB/s",
        read,
        read * after.sample_bytes // max(1, before.sample_bytes),
    )
