"""The cost model of scans: per object, push the scan into storage or read the
object plainly and filter at the client.

Pushdown pays when the reply is much smaller than the object; at high
selectivity storage does the client's decoding plus an IPC encode and the
reply is as large as the object (measured: at 100 % pushdown is 14-30 %
slower). When partition statistics prove that every row passes, the decoded
sizes of the wanted columns predict the reply; when every object has fresh
statistics from storage (histograms), the filter's estimated selectivity on
each object (selectivity.py) times those sizes does; otherwise the first object
is pushed down as a sample and its reply-to-object size ratio decides the rest.
An object whose design keeps its columns in several groups is read only in the
extents of the groups that hold the needed columns, one Parquet file in one
extent only in its footer and the needed columns' chunks, and a partition in
column objects only in the objects holding them: those are its bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.manifest_memo import per_manifest
from skyhook.catalog.pruning import matching_partitions
from skyhook.execution.column_objects import opened
from skyhook.execution.link_cost import Work
from skyhook.execution.parquet_ranges import TAIL_BYTES
from skyhook.execution.selectivity import estimated_selectivities
from skyhook.plan.expressions import columns_read, filter_columns

#: Push down while a reply, as sent (compressed), is expected to be at most this
#: fraction of its object. Pushdown stops paying when the *decoded* reply nears a
#: quarter of the object (storage decodes, filters and encodes what the client
#: would only decode); compressed, that reply is smaller by the codec's factor, so
#: the threshold on compressed bytes falls with it. bench/replies.py, lineitem SF 1,
#: 3 columns of 25 % of the rows (pushdown about as fast as plain reads): reply/object
#: 0.251 uncompressed, 0.095 lz4, 0.056 zstd.
PUSHDOWN_THRESHOLDS = {"none": 0.25, "lz4": 0.10, "zstd": 0.05}

#: The Parquet footer's bytes per column chunk (its metadata and statistics;
#: about 120 measured), read whole by every read of an object.
FOOTER_BYTES_PER_CHUNK = 128


def every_row_passes(manifest: Manifest, filter: pc.Expression | None, partitions: list[Partition]) -> bool:
    """Statistics prove the filter is true (or null) for every row of partitions."""
    if filter is None:
        return True
    may_fail = {p.number for p in matching_partitions(manifest, ~filter, filter_columns(filter, manifest.schema))}
    return not may_fail & {p.number for p in partitions}


@dataclass(frozen=True)
class Prediction:
    """The replies' decoded bytes, predicted from statistics, and the work they
    come from (totals over the objects)."""

    work: Work
    basis: str  # how, for Decision reasons: "statistics: ..."
    #: The objects' bytes, Parquet files whole (what PUSHDOWN_THRESHOLDS were measured against).
    object_bytes: float
    every_row_passes: bool = False

    @property
    def ratio(self) -> float:
        """Decoded reply bytes over the objects' bytes."""
        return self.work.reply_decoded / max(1.0, self.object_bytes)


def predicted_reply_ratio(
    manifest: Manifest, filter: pc.Expression | None, partitions: list[Partition], columns
) -> Prediction | None:
    """Reply bytes over object bytes when statistics can tell (plain columns
    are wanted, and every row passes or every object's selectivity can be
    estimated); None when only a sample can."""
    if isinstance(columns, Mapping):
        return None
    names = manifest.schema.names if columns is None else list(columns)
    # Decoded bytes of the wanted columns, per partition (ingest statistics).
    wanted = partitions_decoded_bytes(manifest, partitions, names).astype(np.float64)
    needed = columns_read(manifest.schema, columns, filter)
    read = max(1, sum(bytes_read(p, needed, manifest) for p in partitions))
    whole = max(1, sum(bytes_read(p, needed) for p in partitions))
    decoded = float(partitions_decoded_bytes(manifest, partitions, needed).sum())
    shape = dict(objects=len(partitions), variable_bytes=variable_width_bytes(manifest, partitions, needed))
    if every_row_passes(manifest, filter, partitions):
        return Prediction(
            Work(read, decoded, float(wanted.sum()), **shape), "statistics: every row passes", whole, True
        )
    selectivities = object_selectivities(manifest, filter, partitions)
    if selectivities is None:
        return None
    rows = np.array([p.num_rows for p in partitions], dtype=np.float64)
    kept = (selectivities * rows).sum() / max(1.0, rows.sum())
    return Prediction(
        Work(read, decoded, float((selectivities * wanted).sum()), **shape),
        f"statistics: estimated selectivity {kept:.3f} (object histograms)",
        whole,
    )


def partitions_decoded_bytes(manifest: Manifest, partitions: list[Partition], columns: list[str] | None) -> np.ndarray:
    """Decoded bytes of columns (None: all) in each of partitions (ingest statistics; 0 where unknown)."""
    numbers = [partition.number for partition in partitions]
    sizes = [size[numbers] for name, size in column_bytes(manifest).items() if columns is None or name in columns]
    return np.sum(sizes, axis=0) if sizes else np.zeros(len(partitions))


def largest_decoded_bytes(manifest: Manifest, partitions: list[Partition], columns: list[str] | None) -> float:
    """The most decoded bytes of columns (None: all) in one of partitions (0: none known)."""
    return float(partitions_decoded_bytes(manifest, partitions, columns).max(initial=0))


def variable_width_bytes(manifest: Manifest, partitions: list[Partition], columns: list[str] | None) -> float:
    """Decoded bytes of the variable-width columns among columns (strings, binaries, lists) in partitions."""
    sizes = column_bytes(manifest)
    numbers = [partition.number for partition in partitions]
    return float(
        sum(
            sizes[field.name][numbers].sum()
            for field in manifest.schema
            if (columns is None or field.name in columns) and not _fixed_width(field.type)
        )
    )


def _fixed_width(type: pa.DataType) -> bool:
    try:
        return type.bit_width > 0
    except ValueError:  # strings, binaries, lists, structs: no fixed width
        return False


@per_manifest
def column_bytes(manifest: Manifest) -> dict[str, np.ndarray]:
    """Per column, its decoded bytes (Arrow buffers, by the ingest statistics)
    in each partition, by number (0 where unknown)."""
    return {
        name: manifest.statistics.field(name).field("bytes").fill_null(0).to_numpy(zero_copy_only=False)
        for name in manifest.schema.names
    }


def object_selectivities(
    manifest: Manifest, filter: pc.Expression | None, partitions: list[Partition]
) -> np.ndarray | None:
    """Per partition, the share of its rows filter keeps, estimated from the
    statistics storage computed on its object; None unless all are fresh and
    the filter's shape can be estimated."""
    if filter is None:
        return np.ones(len(partitions))
    if any(manifest.fresh_object_statistics(p.number) is None for p in partitions):
        return None
    indices = pa.array([p.number for p in partitions], pa.int64())
    statistics = pc.struct_field(manifest.object_statistics.take(indices), "columns")
    rows = np.array([p.num_rows for p in partitions], dtype=np.float64)
    return estimated_selectivities(manifest.schema, filter, statistics, rows)


def bytes_read(partition: Partition, columns: list[str] | None, manifest: Manifest | None = None) -> int:
    """The bytes of a partition that a read of columns (None: all) reads: of
    each object it opens (with column objects, only those holding the
    columns), the extents of the column groups that hold them, or the whole
    object; given the manifest, of a Parquet object in one extent its tail
    (the footer) and the columns' chunks, as a plain read reads them."""
    total = 0
    for design, size, held in opened(partition, columns):
        if manifest is not None and held is not None and design.monolithic and design.format == "parquet":
            total += parquet_read_bytes(manifest, partition, size, held)
        elif design.monolithic:
            total += size
        else:
            total += sum(group.length for group in design.groups_holding(held))
    return total


def zone_count(partition: Partition) -> int:
    """The row groups (zones) of a partition's objects, by its design."""
    return max(1, -(-partition.num_rows // max(1, partition.design.row_group_size)))


def footer_bytes(partition: Partition, size: int, columns: int) -> int:
    """A Parquet object's footer of size bytes holding columns columns of partition:
    FOOTER_BYTES_PER_CHUNK per column chunk."""
    return min(size, FOOTER_BYTES_PER_CHUNK * zone_count(partition) * max(1, columns))


def parquet_read_bytes(manifest: Manifest, partition: Partition, size: int, held: list[str]) -> int:
    """A plain read's bytes of a Parquet object of size bytes holding columns
    held of partition: its tail (holding the footer, FOOTER_BYTES_PER_CHUNK per
    chunk) and the columns' chunks, each column's share of the rest being its
    share of the object's decoded bytes (the ingest statistics; the catalog
    knows no stored sizes)."""
    stored = next((o.columns for o in partition.objects(manifest.schema.names) if set(held) <= set(o.columns)), ())
    sizes = column_bytes(manifest)
    decoded = {name: int(sizes[name][partition.number]) for name in stored if name in sizes}
    footer = footer_bytes(partition, size, len(stored))
    total = sum(decoded.values())
    share = sum(decoded.get(name, 0) for name in held) / total if total else 1.0
    return min(size, max(TAIL_BYTES, footer) + int((size - footer) * share))
