"""A stream step: source objects read through the storage-side scan (with the
plan's filter and projection, and for a cluster the step's key range), the
rows cut into the step's target objects and each built by the core's writer
in the plan's design. Re-running it writes the same objects again."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.backends.base import Backend
from skyhook.backends.object_codec import encode_object
from skyhook.backends.object_store import PendingWrite
from skyhook.catalog.design import DESIGN_ATTRIBUTE
from skyhook.catalog.manifest import Manifest
from skyhook.distributed import zorder
from skyhook.distributed.plan import Plan, Step
from skyhook.distributed.source_scan import scan_sources
from skyhook.plan.expressions import conjunction


def run_stream(backend: Backend, plan: Plan, step: Step, manifest: Manifest, pending: PendingWrite) -> None:
    """Writes the step's targets from the current manifest's sources; records
    what it wrote and what moved in step."""
    filter = conjunction(plan.target_filter(), key_range(plan, step.key_range))
    table, stats = scan_sources(backend, manifest, step.sources, plan.columns, filter)
    if plan.zorder is not None and step.key_range is not None:
        table = z_range(plan, step.key_range, table)
    pieces = len(step.targets)
    if step.rows:  # a filter kept fewer rows: fewer objects of the planned size
        pieces = max(1, min(pieces, math.ceil(pieces * table.num_rows / step.rows)))
    per_object = math.ceil(table.num_rows / pieces) if table.num_rows else 0
    written = []
    for index, name in enumerate(step.targets[:pieces]):
        chunk = table.slice(index * per_object, per_object) if per_object else table.slice(0, 0)
        if chunk.num_rows == 0:
            break
        encoded, attribute = encode_object(chunk, plan.design)
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


def key_range(plan: Plan, index: int | None) -> pc.Expression | None:
    """The rows of cluster range index: keys in [bounds[index-1], bounds[index]); the last range holds nulls and NaNs too.
    For a Z-order cluster, a filter on the box around the range's rows (z_range cuts the range)."""
    if index is not None and plan.zorder is not None:
        box = (plan.boxes or [])[index]
        return None if box is None else zorder.box_filter(plan.zorder, plan.key_bucket_bounds(), box)
    bounds = plan.key_bounds()
    if index is None or bounds is None or len(bounds) == 0:
        return None
    key = pc.field(plan.cluster_by)
    if index < len(bounds):
        lower = key >= pc.scalar(bounds[index - 1]) if index > 0 else None
        return conjunction(lower, key < pc.scalar(bounds[index]))
    # "not below": every key at or above the bound, and NaNs (no comparison is true of them).
    return ~(key < pc.scalar(bounds[index - 1])) | key.is_null()


def z_range(plan: Plan, index: int, table: pa.Table) -> pa.Table:
    """The rows of table in Z-order range index (z in [bounds[index-1], bounds[index])), in z order."""
    z = zorder.z_values([table.column(key) for key in plan.zorder or []], plan.key_bucket_bounds(), plan.zorder_bits)
    bounds = plan.key_bounds()
    ranges = np.searchsorted(bounds.to_numpy() if bounds is not None else np.array([], np.uint64), z, side="right")
    rows = np.flatnonzero(ranges == index)
    return table.take(pa.array(rows[np.argsort(z[rows], kind="stable")]))
