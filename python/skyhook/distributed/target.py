"""What a distributed transform builds: object sizes, a cluster key, a filter
and projection applied at the source, the target objects' design, and
whether the result replaces the dataset's objects or is a new dataset."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.catalog.design import Design, ObjectDesign, SortKey
from skyhook.catalog.manifest import Manifest
from skyhook.errors import InvalidRequestError
from skyhook.ingest.partitioning import DEFAULT_TARGET_OBJECT_SIZE
from skyhook.names import check_dataset_name
from skyhook.plan.where import parse_where


@dataclass(frozen=True)
class TransformTarget:
    """rows_per_object or object_size (stored bytes; default 32 MiB): the size
    target objects aim at (small objects are merged, large ones split, the
    right-sized kept in place). cluster_by: a column to range-partition the
    dataset by (each object a key range, sorted inside), or with zorder
    several columns, the dataset range-partitioned by their Z-order (each
    object a box of the keys' space, so statistics prune on any of them); a
    cluster reads the sources once per pass, each pass serving as many key
    ranges as fit pass_memory (bytes of target data the worker holds, decoded,
    as the objects' statistics estimate it; default 512 MiB). filter / columns:
    only these rows and columns are copied, into the new dataset ``into``.
    design: the target objects' design (default: the dataset's write design).
    column_objects: groups of columns each gathered into objects of their own,
    a partition's other columns staying in its object (alone: partitions and
    rows unchanged; ``[]`` merges column objects back); with a size, a
    cluster or a copy, the partitions that builds are each written so."""

    rows_per_object: int | None = None
    object_size: int | None = None
    cluster_by: str | Sequence[str] | None = None
    filter: pc.Expression | str | None = None
    columns: Sequence[str] | None = None
    into: str | None = None
    design: Design | None = None
    zorder: bool = False
    pass_memory: int | None = None
    column_objects: Sequence[Sequence[str]] | None = None


#: Target data a cluster's worker holds in one pass over the sources.
DEFAULT_PASS_MEMORY = 512 << 20


@dataclass(frozen=True)
class ResolvedTarget:
    """A target checked against a dataset: every field a plan needs."""

    measure: str  # "rows" or "bytes": what the size target counts
    size: int
    cluster_by: str | None
    #: The keys of a Z-order cluster (two or more; cluster_by is then None).
    zorder: tuple[str, ...] | None
    filter: pc.Expression | None
    columns: tuple[str, ...] | None
    into: str | None
    #: What target objects are built as (an ObjectDesign request).
    design: ObjectDesign
    #: The design asked for, if any: objects of another design are rewritten even when right-sized.
    asked: Design | None
    schema: pa.Schema  # the target objects' columns
    pass_memory: int = DEFAULT_PASS_MEMORY
    #: Column objects: the columns of each object of a partition, its object first.
    column_objects: tuple[tuple[str, ...], ...] | None = None
    #: Whether a size was asked for (column objects alone keep the partitions as they are).
    sized: bool = False

    @property
    def copies(self) -> bool:
        return self.into is not None

    @property
    def columns_only(self) -> bool:
        """Column objects alone: each partition rewritten into its objects, the partitions as they are."""
        return self.column_objects is not None and not (self.sized or self.copies or self.cluster_by or self.zorder)


def resolve(target: TransformTarget, manifest: Manifest) -> ResolvedTarget:
    """target checked against the dataset; any mistake is an InvalidRequestError naming it."""
    if not isinstance(target, TransformTarget):
        raise InvalidRequestError(f"plan_transform takes a skyhook.TransformTarget, not {type(target).__name__}")
    schema = manifest.schema
    if target.rows_per_object is not None and target.object_size is not None:
        raise InvalidRequestError("give rows_per_object or object_size, not both")
    measure, size = (
        ("rows", target.rows_per_object) if target.rows_per_object is not None else ("bytes", target.object_size)
    )
    size = DEFAULT_TARGET_OBJECT_SIZE if size is None else size
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise InvalidRequestError(
            f"an impossible target: {measure} per object must be a positive integer, not {size!r}"
        )
    pass_memory = DEFAULT_PASS_MEMORY if target.pass_memory is None else target.pass_memory
    if isinstance(pass_memory, bool) or not isinstance(pass_memory, int) or pass_memory <= 0:
        raise InvalidRequestError(f"pass_memory must be a positive number of bytes, not {pass_memory!r}")
    filter = target.filter
    if isinstance(filter, str):
        filter = parse_where(filter, schema)
    elif filter is not None and not isinstance(filter, pc.Expression):
        raise InvalidRequestError(f"filter must be a string or a pyarrow expression, not {type(filter).__name__}")
    columns = None if target.columns is None else tuple(target.columns)
    keys = _cluster_keys(target)
    for column in [*(columns or ()), *keys]:
        if column not in schema.names:
            raise InvalidRequestError(f"dataset {manifest.dataset!r} has no column {column!r}")
    if columns is not None and (not columns or len(set(columns)) != len(columns)):
        raise InvalidRequestError("columns must name each column once, and at least one")
    for key in keys:
        if pa.types.is_nested(schema.field(key).type):
            raise InvalidRequestError(f"cannot cluster by {key!r}: its values have no order")
        if len(keys) > 1 and pa.types.is_dictionary(schema.field(key).type):
            raise InvalidRequestError(f"cannot cluster by {key!r} in Z-order: cast its dictionary to values first")
        if columns is not None and key not in columns:
            raise InvalidRequestError(f"the cluster key {key!r} must be one of the columns copied")
    if target.into is None and (filter is not None or columns is not None):
        raise InvalidRequestError("a filter or projection copies into a new dataset: give into=NAME")
    if target.into is not None:
        check_dataset_name(target.into)
        if target.into == manifest.dataset:
            raise InvalidRequestError(
                f"an impossible target: dataset {manifest.dataset!r} cannot be copied into itself"
            )
    if target.design is not None and not isinstance(target.design, Design):
        raise InvalidRequestError(f"design must be a skyhook.Design, not {type(target.design).__name__}")
    out = schema if columns is None else pa.schema([schema.field(name) for name in columns])
    if target.design is not None:
        design = ObjectDesign.request(target.design, out.names, 0)  # unknown columns refused here
    elif columns is None:
        design = manifest.write_design
    else:  # the write design's format and codec, every column together
        design = replace(
            manifest.write_design, column_groups=ObjectDesign.request(Design(), out.names, 0).column_groups
        )
        design = replace(design, sort_by=tuple(key for key in design.sort_by if key.column in out.names))
    layout = _column_layout(target, out)
    if layout is not None:
        design = replace(design, sort_by=())  # the rows of a partition's objects must line up
    cluster_by = keys[0] if len(keys) == 1 else None
    if cluster_by is not None and not design.sort_by and layout is None:  # column objects: sorted by the stream
        design = replace(design, sort_by=(SortKey(cluster_by),))
    zorder = keys if len(keys) > 1 else None
    return ResolvedTarget(
        measure,
        size,
        cluster_by,
        zorder,
        filter,
        columns,
        target.into,
        design,
        target.design,
        out,
        pass_memory,
        layout,
        target.rows_per_object is not None or target.object_size is not None,
    )


def _column_layout(target: TransformTarget, schema: pa.Schema) -> tuple[tuple[str, ...], ...] | None:
    """The columns of each object of a partition the target asks for (None: not column objects)."""
    if target.column_objects is None:
        return None
    given = target.column_objects
    if isinstance(given, str) or not all(
        not isinstance(group, str) and all(isinstance(name, str) for name in group) for group in given
    ):
        raise InvalidRequestError("column_objects takes a list of lists of column names")
    groups = [tuple(group) for group in given]
    named = [name for group in groups for name in group]
    for name in named:
        if name not in schema.names:
            copied = " copied" if target.columns is not None else ""
            raise InvalidRequestError(f"the dataset has no{copied} column {name!r}")
    if len(set(named)) != len(named) or not all(groups):
        raise InvalidRequestError("column_objects must name each column once, in non-empty groups")
    if target.design is not None and target.design.column_groups is not None:
        raise InvalidRequestError("column_objects gives each object its columns: the design cannot group them")
    if target.design is not None and target.design.sort_by:
        raise InvalidRequestError(
            "column_objects keeps the rows of a partition's objects in line: the design cannot sort one "
            "object; sort with cluster_by"
        )
    rest = tuple(name for name in schema.names if name not in named)
    return ((rest,) if rest else ()) + tuple(groups) if groups else (tuple(schema.names),)


def _cluster_keys(target: TransformTarget) -> tuple[str, ...]:
    """The cluster keys asked for: none, one (a range cluster) or several (in Z-order)."""
    given = target.cluster_by
    keys = () if given is None else (given,) if isinstance(given, str) else tuple(given)
    if not all(isinstance(key, str) for key in keys):
        raise InvalidRequestError("cluster_by takes a column name or a list of column names")
    if not isinstance(target.zorder, bool):
        raise InvalidRequestError(f"zorder must be True or False, not {target.zorder!r}")
    if len(set(keys)) != len(keys):
        raise InvalidRequestError("cluster_by must name each key once")
    if target.zorder and len(keys) < 2:
        raise InvalidRequestError("an impossible target: Z-order interleaves two or more cluster keys")
    if len(keys) > 1 and not target.zorder:
        raise InvalidRequestError("clustering by several keys is in Z-order: add zorder=True (--zorder)")
    return keys
