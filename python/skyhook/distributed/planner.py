"""Making a plan from a dataset's manifest and a resolved target: which objects
stay in place, which are merged or split (a group each), or, for a cluster,
the key ranges (from the key column alone, read through the storage-side
scan) that each target object covers. With column objects, each target
partition is an object per column group (consecutive target names)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.backends.base import Backend
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.pruning import wholly_matching
from skyhook.design.object_transform import TargetDesign
from skyhook.distributed import zorder
from skyhook.distributed.plan import Plan, Step, expression_bytes
from skyhook.distributed.source_scan import scan_sources
from skyhook.distributed.target import ResolvedTarget
from skyhook.execution.cost import column_bytes
from skyhook.names import new_generation, object_name
from skyhook.plan.expressions import filter_columns

#: Objects within this factor of the size target are right-sized (kept in place).
RIGHT_SIZED = (0.5, 1.5)


def make_plan(backend: Backend, manifest: Manifest, target: ResolvedTarget) -> Plan:
    fraction = _column_fraction(manifest, target.columns)
    written_to = target.into or manifest.dataset
    plan = Plan(
        id=new_generation(),
        dataset=manifest.dataset,
        into=target.into,
        planned_from=manifest.generation,
        groups=[],
        steps=[],
        summary=_summary(target),
        design=target.design.to_bytes(),
        filter=expression_bytes(target.filter),
        columns=None if target.columns is None else list(target.columns),
        cluster_by=target.cluster_by,
        column_objects=None if target.column_objects is None else [list(c) for c in target.column_objects],
    )
    if target.columns_only:
        _split_columns(manifest, target.column_objects, plan)
    elif target.cluster_by is not None or target.zorder is not None:
        _cluster(backend, manifest, target, plan, fraction, written_to)
    else:
        for kind, group in _groups(manifest, target, fraction):
            _add_group(plan, kind, group, target, fraction, written_to)
    return plan


def _split_columns(manifest: Manifest, layout: tuple[tuple[str, ...], ...], plan: Plan) -> None:
    """A group per partition not yet in layout: a stream reading it once and
    writing an object per column group, then its commit."""
    for partition in manifest.partitions:
        if _in_layout(manifest, partition, layout):
            continue
        generation = new_generation()
        group = len(plan.groups)
        plan.groups.append(generation)
        targets = [object_name(manifest.dataset, generation, index) for index in range(len(layout))]
        size = partition.stored_bytes
        sources = [partition.object_name]
        plan.steps.append(Step("stream", group, sources, targets, None, partition.num_rows, size, size, size))
        plan.steps.append(Step("commit", group, sources, []))


def _in_layout(manifest: Manifest, partition: Partition, layout: tuple[tuple[str, ...], ...] | None) -> bool:
    """Whether partition's objects hold the column groups of layout (None: any)."""
    held = sorted(sorted(o.columns) for o in partition.objects(manifest.schema.names))
    return layout is None or held == sorted(map(sorted, layout))


def _targets(written_to: str, generation: str, pieces: list[int], target: ResolvedTarget) -> list[str]:
    """The names of target partitions pieces: an object each, or one per column group."""
    width = 1 if target.column_objects is None else len(target.column_objects)
    return [object_name(written_to, generation, piece * width + k) for piece in pieces for k in range(width)]


def _cluster(
    backend: Backend, manifest: Manifest, target: ResolvedTarget, plan: Plan, fraction: float, written_to: str
) -> None:
    partitions = list(manifest.partitions)
    if not partitions:
        return
    keys = [target.cluster_by] if target.cluster_by is not None else list(target.zorder or ())
    table, _ = scan_sources(backend, manifest, [p.object_name for p in partitions], keys, target.filter)
    measure = sum(_measure(p, target, fraction) for p in partitions)
    ranges = max(1, math.ceil(measure / target.size))
    if target.zorder is None:
        bounds = _bounds(zorder.ordered_values(table.column(0)), ranges)
        present = range(len(bounds) + 1)
    else:
        bounds, present = _zorder(plan, table, keys, ranges)
    plan.bounds = _serialized(pa.table({"bound": bounds}))
    generation = new_generation()
    plan.groups.append(generation)
    sources = [p.object_name for p in partitions]
    size = sum(p.stored_bytes for p in partitions)
    moved = int(size * fraction / (len(bounds) + 1))  # per range
    # What a pass holds is its ranges' rows decoded, which compression can make many times their stored bytes.
    held = int(_decoded_bytes(manifest, target.columns) / (len(bounds) + 1))
    for served in _passes(list(present), max(1, target.pass_memory // max(1, held))):
        names = _targets(written_to, generation, served, target)
        # One read of the sources per pass, the rows split by range into the pass's targets.
        step = Step("stream", 0, sources, names, None, 0, size, moved * len(served), moved * len(served))
        step.key_ranges, step.memory = served, held * len(served)
        plan.steps.append(step)
    plan.steps.append(Step("commit", 0, sources, []))


def _passes(ranges: list[int], per_pass: int) -> list[list[int]]:
    """The ranges in runs of per_pass, in key order: each run one pass over the sources."""
    return [ranges[start : start + per_pass] for start in range(0, len(ranges), per_pass)]


def _zorder(plan: Plan, table: pa.Table, keys: list[str], ranges: int) -> tuple[pa.Array, list[int]]:
    """A Z-order cluster's z-value bounds and the ranges that hold rows; the
    keys' bucket bounds and each range's box go into plan."""
    bits = zorder.bits_per_key(len(keys), ranges)
    key_bounds = [zorder.bucket_bounds(table.column(key), bits) for key in keys]
    key_buckets = [zorder.buckets(table.column(key), bounds) for key, bounds in zip(keys, key_bounds)]
    z = zorder.interleave(key_buckets, bits)
    # Cells halve: allow the right-sized slack so that even data does not split into twice the objects.
    most = max(1, math.ceil(RIGHT_SIZED[1] * len(z) / ranges))
    bounds = pa.array(zorder.cell_bounds(np.sort(z), bits * len(keys), most, len(z) / ranges), pa.uint64())
    count = len(bounds) + 1
    plan.boxes = zorder.boxes(key_buckets, zorder.range_of(z, bounds.to_numpy()), count)
    plan.zorder, plan.zorder_bits = keys, bits
    plan.bucket_bounds = _serialized(
        pa.table({key: pa.array([values.to_pylist()], pa.list_(values.type)) for key, values in zip(keys, key_bounds)})
    )
    return bounds, [index for index in range(count) if plan.boxes[index] is not None]


def _serialized(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _bounds(ordered: pa.Array, ranges: int) -> pa.Array:
    """At most ranges - 1 distinct keys splitting the sorted keys into equal runs."""
    if len(ordered) == 0 or ranges <= 1:
        return ordered.slice(0, 0)
    picks = [len(ordered) * index // ranges for index in range(1, ranges)]
    return pc.unique(ordered.take(pa.array(picks, pa.int64())))


def _groups(manifest: Manifest, target: ResolvedTarget, fraction: float) -> list[tuple[str, list[Partition]]]:
    """(kind, sources) per group, in partition order: "stream" to merge or split,
    "local" to rewrite right-sized objects of another design in place, and last
    "copy": the right-sized objects a copy keeps whole (every row, every column, their design)."""
    built = None if target.asked is None else TargetDesign(target.asked, tuple(target.schema.names))
    low, high = target.size * RIGHT_SIZED[0], target.size * (1 if target.measure == "rows" else RIGHT_SIZED[1])
    groups: list[tuple[str, list[Partition]]] = []
    small: list[Partition] = []
    small_measure = 0.0
    whole: list[Partition] = []
    read = set() if target.filter is None else filter_columns(target.filter, manifest.schema)
    all_columns = target.columns is None or list(target.columns) == manifest.schema.names
    layout = target.column_objects

    def right_sized(partition: Partition) -> None:
        if target.column_objects is not None and (target.copies or not _in_layout(manifest, partition, layout)):
            groups.append(("stream", [partition]))  # written in the layout
            return
        if partition.column_objects and (target.copies or built is not None):  # no single object to copy or rewrite
            groups.append(("stream", [partition]))
            return
        if target.copies and all_columns and (built is None or built.built_by(partition.design)):
            if wholly_matching(manifest, partition.number, target.filter, read):
                whole.append(partition)
                return
        if target.copies:
            groups.append(("stream", [partition]))
        elif built is not None and not built.built_by(partition.design):
            groups.append(("local", [partition]))

    def close_small() -> None:
        nonlocal small, small_measure
        if len(small) == 1:
            right_sized(small[0])  # nothing to merge it with
        elif small:
            groups.append(("stream", small))
        small, small_measure = [], 0.0

    for partition in manifest.partitions:
        measure = _measure(partition, target, fraction)
        if measure > high:
            groups.append(("stream", [partition]))
        elif measure >= low:
            right_sized(partition)
        else:
            small.append(partition)
            small_measure += measure
            if small_measure >= target.size:
                close_small()
    close_small()
    return groups + ([("copy", whole)] if whole else [])


def _add_group(
    plan: Plan, kind: str, sources: list[Partition], target: ResolvedTarget, fraction: float, written_to: str
) -> None:
    generation = new_generation()
    group = len(plan.groups)
    plan.groups.append(generation)
    names = [p.object_name for p in sources]
    size = sum(p.stored_bytes for p in sources)
    if kind == "local":
        plan.steps.append(Step("local", group, names, [], None, 0, size, 0, size))
        return
    if kind == "copy":  # storage to storage: read and written there, nothing moves out
        for index, source in enumerate(sources):
            copied = object_name(written_to, generation, index)
            size = source.size_bytes
            plan.steps.append(Step("copy", group, [source.object_name], [copied], None, source.num_rows, size, 0, size))
        plan.steps.append(Step("commit", group, names, []))
        return
    measure = sum(_measure(p, target, fraction) for p in sources)
    pieces = max(1, math.ceil(measure / target.size) if target.measure == "rows" else round(measure / target.size))
    targets = _targets(written_to, generation, list(range(pieces)), target)
    moved = int(size * fraction)
    rows = sum(p.num_rows for p in sources)
    plan.steps.append(Step("stream", group, names, targets, None, rows, size, moved, moved))
    plan.steps.append(Step("commit", group, names, []))


def _measure(partition: Partition, target: ResolvedTarget, fraction: float) -> float:
    return partition.num_rows if target.measure == "rows" else partition.stored_bytes * fraction


def _column_fraction(manifest: Manifest, columns: tuple[str, ...] | None) -> float:
    """The share of the stored bytes a projection keeps (by the per-column byte statistics)."""
    if columns is None or len(manifest.statistics) == 0:
        return 1.0
    per_column = {name: int(sizes.sum()) for name, sizes in column_bytes(manifest).items()}
    total = sum(per_column.values())
    return 1.0 if total <= 0 else sum(per_column[name] for name in columns) / total


def _decoded_bytes(manifest: Manifest, columns: tuple[str, ...] | None) -> float:
    """The columns' bytes decoded (Arrow buffers), by the objects' per-column statistics;
    objects without them at the decoded-to-stored ratio of those with (1 if none has)."""
    sizes = np.array([p.stored_bytes for p in manifest.partitions], np.float64)
    if len(manifest.statistics) == 0:
        return float(sizes.sum())
    per_column = [
        manifest.statistics.field(name).field("bytes").to_numpy(zero_copy_only=False).astype(np.float64)
        for name in (manifest.schema.names if columns is None else columns)
    ]
    decoded = np.sum(per_column, axis=0)  # NaN where an object's statistics have no bytes
    known = ~np.isnan(decoded)
    ratio = decoded[known].sum() / sizes[known].sum() if known.any() and sizes[known].sum() > 0 else 1.0
    return float(decoded[known].sum() + ratio * sizes[~known].sum())


def _summary(target: ResolvedTarget) -> str:
    size = f"{target.size:,} {'rows' if target.measure == 'rows' else 'bytes'} per object"
    if target.zorder is not None:
        text = f"cluster by {', '.join(map(repr, target.zorder))} in Z-order, {size}"
    else:
        text = f"cluster by {target.cluster_by!r}, {size}" if target.cluster_by else f"repartition to {size}"
    layout = None if target.column_objects is None else " | ".join(",".join(c) for c in target.column_objects)
    if target.columns_only:
        text = f"column objects {layout}"
    elif layout is not None:
        text += f", column objects {layout}"
    if target.filter is not None:
        text += f", where {target.filter}"
    if target.columns is not None:
        text += f", columns {', '.join(target.columns)}"
    return text + (f", copied into {target.into!r}" if target.into else ", in place")
