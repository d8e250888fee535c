"""Deleting rows in storage. Each object the filter can touch (its statistics
allow a match and storage counts one) is copied by the store itself (RADOS
copy_from, OSD to OSD; a file copy in the embedded store), and the copy is
rewritten in storage by the transform method with the rows the filter does
not match (a scan request's filter: what is not true, nulls kept as SQL's
DELETE keeps them); no row crosses to the client. An object every row of
which goes leaves the dataset. One commit then swaps the copies in as the next
version (operation "delete"): the originals are retired, so earlier versions
and the readers that opened them keep them. A racing writer that replaced a
touched object makes the delete fail with nothing changed; a crash leaves the
copies to fsck (their write was registered) and the dataset as it was."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import pyarrow.compute as pc

from skyhook.backends.base import Backend
from skyhook.backends.parallel import ordered_map
from skyhook.catalog.design import ColumnGroup
from skyhook.catalog.manifest import Manifest, Partition
from skyhook.catalog.pruning import matching_partitions
from skyhook.design.object_transform import rewrite_in_storage
from skyhook.distributed.commit import commit_in_place
from skyhook.errors import InvalidRequestError, ObjectNotFoundError
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.scan_execution import ScanExecution
from skyhook.execution.scan_options import ScanOptions
from skyhook.names import new_generation, object_name
from skyhook.plan.expressions import place_filter, projected_schema
from skyhook.plan.predicate_ranges import with_list_bounds
from skyhook.rpc.requests import ScanRequest, TransformRequest

#: Objects counted and rewritten at once.
PARALLELISM = 8


@dataclass(frozen=True)
class RowChange:
    """What a delete did: rows removed, objects rewritten (in storage) and
    dropped (every row gone), the bytes storage's replies brought to the
    client, and the version it published (None: nothing matched)."""

    rows_deleted: int
    objects_rewritten: int
    objects_dropped: int
    bytes_returned: int
    manifest: Manifest | None


def delete_rows(backend: Backend, manifest: Manifest, filter: pc.Expression) -> RowChange:
    """Delete the rows of manifest's dataset (as it is now) where filter is true."""
    if manifest.has_column_objects:
        raise InvalidRequestError(
            f"dataset {manifest.dataset!r} keeps columns in column objects: merge them first "
            "(TransformTarget(column_objects=[])) to delete rows"
        )
    projected_schema(manifest.schema, [], filter)  # a filter of the dataset's columns
    kept = ~filter | filter.is_null()
    placement = place_filter(kept, manifest.schema)
    if placement is None or placement.client is not None or placement.storage is None:
        raise InvalidRequestError(f"the filter {filter} cannot run in storage, so no row is deleted")
    candidates = matching_partitions(manifest, with_list_bounds(filter, manifest.schema), placement.reads)
    with ThreadPoolExecutor(PARALLELISM, thread_name_prefix="skyhook-delete") as pool:
        counted = list(ordered_map(pool, lambda p: _matching(backend, manifest, p, filter), candidates, PARALLELISM))
        touched = [(partition, count) for partition, (count, _) in zip(candidates, counted) if count]
        returned = sum(replied for _, replied in counted)
        if not touched:
            return RowChange(0, 0, 0, returned, None)
        generation = new_generation()
        pending = backend.begin_write(manifest.dataset, generation)
        rewritten = [
            (p, object_name(manifest.dataset, generation, i)) for i, (p, n) in enumerate(touched) if n < p.num_rows
        ]
        rows = ScanRequest(filter=placement.storage).encode()
        try:
            # A pool of its own: leaving it waits for every rewrite, so none stores a copy after the cleanup.
            with ThreadPoolExecutor(PARALLELISM, thread_name_prefix="skyhook-delete") as rewriting:
                designs = dict(
                    ordered_map(
                        rewriting, lambda item: _rewritten(backend, *item, rows, pending), rewritten, PARALLELISM
                    )
                )
            published, _ = commit_in_place(
                backend,
                manifest.dataset,
                generation,
                [p.object_name for p, _ in touched],
                designs,
                held=pending.heartbeat,
                operation="delete",
            )
        except BaseException:
            for _, target in rewritten:
                try:
                    backend.delete_object(target)
                except ObjectNotFoundError:
                    pass
            raise
        finally:
            pending.finish()
    dropped = len(touched) - len(rewritten)
    returned += sum(len(design) for design in designs.values())
    return RowChange(sum(count for _, count in touched), len(rewritten), dropped, returned, published)


def _matching(backend: Backend, manifest: Manifest, partition: Partition, filter: pc.Expression) -> tuple[int, int]:
    """The rows of partition's object where filter is true, counted in storage,
    and the bytes of storage's replies."""
    objects = DatasetObjects(manifest.subset([partition.number]), backend)
    counter = ScanExecution(objects, [], filter, options=ScanOptions(pushdown=True), logged=False)
    return sum(batch.num_rows for batch in counter.to_batches()), counter.stats.bytes_returned


def _rewritten(backend: Backend, partition: Partition, target: str, rows: bytes, pending) -> tuple[str, bytes]:
    """partition's object copied to target by the store, the copy rewritten in storage to rows."""
    backend.copy_object(partition.object_name, target)
    pending.heartbeat()
    design = partition.design
    wanted = replace(
        design, column_groups=tuple(ColumnGroup(g.columns, 0, 0) for g in design.column_groups), num_rows=0
    )
    done = rewrite_in_storage(backend, target, TransformRequest(wanted.to_bytes(), design.generation, rows=rows))
    return target, done.design.to_bytes()
