"""The bytes a logged query reads in storage without an index, per object,
modelled the way storage executes a filtered scan
(cpp/skyhook/storage/secondary/scan_zones.cc):

- zones (row groups) that the object's footer statistics rule out are not
  read: the query's rows_scanned counts only the rows of zones read, so its
  share of the objects' rows is the share of zones read;
- the pre-filter (storage/object/physical_prefilter.cc), when it applies (see
  ``prefilter_column``): the first qualifying filter column of every zone
  read, the other requested columns only of the zones expected to hold a
  match (the observed matches spread evenly: m matches over Z zones hit
  Z(1 - (1 - 1/Z)^m)); each column's share of the object by its decoded
  bytes (the ingest statistics), the stored bytes being unknown to the catalog,
  besides the footer (FOOTER_BYTES_PER_CHUNK per zone and column), read whole;
- otherwise whole zones: of every zone read, the requested columns (their
  chunks' share as above in a Parquet object of one extent, else their
  extents: column groups, or the whole object).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from skyhook.catalog.manifest import Manifest, Partition
from skyhook.execution.cost import bytes_read, column_bytes, footer_bytes, zone_count
from skyhook.execution.workload_log import QueryRecord

#: A zone whose pre-filter keeps more than this share of its rows is read
#: whole, and so is every later zone of the scan (scan_zones.cc, kMaxSelectedShare).
MAX_SELECTED_SHARE = 0.5


@dataclass(frozen=True)
class ObjectRead:
    """One object's read of a logged query, without an index."""

    partition: Partition
    zones: int  # row groups in the object
    zones_read: float  # not ruled out by the zones' statistics
    matches: float | None  # expected rows passing (None: not observed)
    zones_hit: float  # expected to hold a match (every zone read when unknown)
    bytes: int


@dataclass(frozen=True)
class LookupReads:
    objects: list[ObjectRead]
    prefilter: str | None  # the column the pre-filter reads in every zone; None: whole zones

    @property
    def bytes(self) -> int:
        return sum(read.bytes for read in self.objects)

    def describe(self) -> str:
        """Which model the estimate used, for the advice's text."""
        if self.prefilter is None:
            return "without it: whole zones (no pre-filter applies)"
        return (
            f"without it: the pre-filter reads {self.prefilter!r} in every zone not skipped, "
            "other columns where a match is"
        )


def prefilter_column(manifest: Manifest, record: QueryRecord) -> str | None:
    """The column storage's pre-filter would read first for record's filter,
    None when it would not apply. A mirror of storage's rule
    (filter_terms.cc PhysicalRanges/InFieldDomain, scan_zones.cc), limited to
    what the log records: a comparison (``eq`` or ``range``; not an IN list
    of several values, while one of a single value is logged and pre-filtered
    as an equality) of a column stored as a signed integer or a date with a
    literal of its type (a cast or an OR leaves no range in the log); the
    first such column in the schema's order; not when the observed
    selectivity passes MAX_SELECTED_SHARE. tests/test_workload_advisor.py checks it against
    storage's bytes read. Timestamps and decimals stored as integers qualify
    in storage too, but the log records no literal of their types."""
    if record.selectivity is not None and record.selectivity > MAX_SELECTED_SHARE:
        return None
    compared = {r.column for r in record.predicates if r.kind in ("eq", "range") and (r.low, r.high) != (None, None)}
    for field in manifest.schema:
        if field.name in compared and (pa.types.is_signed_integer(field.type) or pa.types.is_date32(field.type)):
            return field.name
    return None


def lookup_reads(manifest: Manifest, record: QueryRecord, partitions: list[Partition]) -> LookupReads:
    """The reads of partitions (those the query cannot rule out) by record's
    query without an index."""
    rows = sum(p.num_rows for p in partitions)
    scanned = 1.0 if not rows or not record.rows_scanned else min(1.0, record.rows_scanned / rows)
    column = prefilter_column(manifest, record)
    sizes = column_bytes(manifest) if len(manifest.statistics) else {}
    objects, prefiltered = [], False
    for partition in partitions:
        zones = zone_count(partition)
        zones_read = max(1.0, scanned * zones)
        matches, hit = None, zones_read
        if record.rows_returned is not None and rows:
            matches = record.rows_returned * partition.num_rows / rows
            hit = zones_read * (1 - (1 - 1 / zones_read) ** matches) if zones_read > 1 else min(1.0, matches)
        decoded = {name: int(sizes[name][partition.number]) for name in sizes}
        total = sum(decoded.values())
        if not _column_chunks(partition) or not total:
            read = bytes_read(partition, record.columns) * zones_read / zones
        else:
            size = bytes_read(partition, None)
            footer = footer_bytes(partition, size, len(manifest.schema))
            data = (size - footer) / total
            if column is None:
                read = footer + data * sum(decoded[name] for name in record.columns) * zones_read / zones
            else:
                first = data * decoded[column]
                others = data * sum(decoded[name] for name in record.columns if name != column)
                read = footer + (first * zones_read + others * hit) / zones
                prefiltered = True
        objects.append(ObjectRead(partition, zones, zones_read, matches, hit, int(read)))
    return LookupReads(objects, column if prefiltered else None)


def _column_chunks(partition: Partition) -> bool:
    """Parquet objects kept in one extent: storage reads only the requested
    columns' chunks of them, and pre-filters them (ObjectReader.SelectsZones)."""
    return not partition.column_objects and partition.design.monolithic and partition.design.format == "parquet"
