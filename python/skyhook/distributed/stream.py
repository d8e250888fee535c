"""A stream step: source objects read through the storage-side scan (with the
plan's filter and projection, and for a cluster the step's key range), the
rows cut into the step's target objects and each built by the core's writer
in the plan's design. With column objects each cut is written as an object
per column group (a cluster's cut sorted here first, so that all of them hold
its rows in one order). Re-running it writes the same objects again."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.backends.base import Backend
from skyhook.backends.object_codec import encode_object
from skyhook.backends.object_store import PendingWrite
from skyhook.catalog.design import DESIGN_ATTRIBUTE, ColumnGroup, ObjectDesign
from skyhook.catalog.manifest import Manifest
from skyhook.distributed import zorder
from skyhook.distributed.plan import Plan, Step
from skyhook.distributed.source_scan import scan_sources
from skyhook.plan.expressions import conjunction


def run_stream(backend: Backend, plan: Plan, step: Step, manifest: Manifest, pending: PendingWrite) -> None:
    """Writes the step's targets from the current manifest's sources; records
    what it wrote and what moved in step."""
    served = step.ranges()
    filter = conjunction(plan.target_filter(), ranges_filter(plan, served))
    table, stats = scan_sources(backend, manifest, step.sources, plan.columns, filter)
    written = []
    layout = plan.column_objects or [table.column_names]
    width = len(layout)
    for number, chunk in enumerate(_split(plan, step, served, table, len(step.targets) // width)):
        if not chunk.num_rows:
            continue
        if plan.column_objects is not None and plan.cluster_by is not None:
            chunk = chunk.take(pc.sort_indices(chunk, [(plan.cluster_by, "ascending", "at_end")]))
        for name, columns in zip(step.targets[number * width : (number + 1) * width], layout):
            design = plan.design if plan.column_objects is None else column_object_design(plan.design, columns)
            encoded, attribute = encode_object(chunk.select(columns), design)
            backend.put_object(name, encoded, {DESIGN_ATTRIBUTE: attribute})
            written.append(name)
            pending.heartbeat()
    step.written = written
    step.measured = {
        "rows": table.num_rows,
        "bytes_read": stats.bytes_read,
        "bytes_returned": stats.bytes_returned,
        "bytes_decoded": stats.bytes_decoded,
        "selected_bytes": table.nbytes,
    }


def column_object_design(design: bytes, columns: list[str]) -> bytes:
    """The plan's design for an object of columns: one group of them (sorting is left out by the plan)."""
    request = ObjectDesign.from_bytes(design)
    return replace(request, column_groups=(ColumnGroup(tuple(columns), 0, 0),)).to_bytes()


def _split(plan: Plan, step: Step, served: list[int], table: pa.Table, pieces: int) -> list[pa.Table]:
    """The rows of each of the step's pieces target partitions: one cluster range each, or equal runs."""
    if served and plan.zorder is not None:
        return z_ranges(plan, served, table)
    if served:
        filters = [_interval(plan, index, index) for index in served]
        return [table if filter is None else table.filter(filter) for filter in filters]
    if step.rows:  # a filter kept fewer rows: fewer objects of the planned size
        pieces = max(1, min(pieces, math.ceil(pieces * table.num_rows / step.rows)))
    per_object = math.ceil(table.num_rows / pieces) if table.num_rows else 0
    return [table.slice(index * per_object, per_object) for index in range(pieces)] if per_object else []


def ranges_filter(plan: Plan, served: list[int]) -> pc.Expression | None:
    """A filter every row of the served cluster ranges passes (None: every row):
    the key interval from the first range to the last, or for a Z-order
    cluster the box around the ranges' boxes (z_ranges cuts each range)."""
    if not served:
        return None
    if plan.zorder is not None:
        boxes = [box for box in (plan.boxes[index] for index in served) if box is not None] if plan.boxes else []
        if not boxes:
            return None
        union = [(min if place % 2 == 0 else max)(box[place] for box in boxes) for place in range(len(boxes[0]))]
        return zorder.box_filter(plan.zorder, plan.key_bucket_bounds(), union)
    return _interval(plan, served[0], served[-1])


def _interval(plan: Plan, first: int, last: int) -> pc.Expression | None:
    """Range cluster ranges first..last: keys in [bounds[first-1], bounds[last]); the last range holds nulls and NaNs too."""
    bounds = plan.key_bounds()
    if bounds is None or len(bounds) == 0:
        return None
    key = pc.field(plan.cluster_by)
    lower = key >= pc.scalar(bounds[first - 1]) if first > 0 else None
    if last < len(bounds):
        return conjunction(lower, key < pc.scalar(bounds[last]))
    # "not below": every key at or above the bound, and NaNs (no comparison is true of them).
    return None if first == 0 else ~(key < pc.scalar(bounds[first - 1])) | key.is_null()


def z_ranges(plan: Plan, served: list[int], table: pa.Table) -> list[pa.Table]:
    """The rows of table in each served Z-order range (zorder.range_of), in z order."""
    z = zorder.z_values([table.column(key) for key in plan.zorder or []], plan.key_bucket_bounds(), plan.zorder_bits)
    bounds = plan.key_bounds()
    ranges = zorder.range_of(z, bounds.to_numpy() if bounds is not None else np.array([], np.uint64))
    order = np.argsort(ranges, kind="stable")
    by_range = ranges[order]
    chunks = []
    for index in served:
        rows = order[np.searchsorted(by_range, index) : np.searchsorted(by_range, index, side="right")]
        chunks.append(table.take(pa.array(rows[np.argsort(z[rows], kind="stable")])))
    return chunks
