"""The filters biologists put on marker genes, as scanpy's
``filter_rank_genes_groups``: expressed in enough of the group's cells, in few
of the other side's, with a large enough fold change."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from skyhook.errors import InvalidRequestError


def filter_rank_genes(
    result: pa.Table,
    *,
    min_in_group_fraction: float = 0.25,
    max_out_group_fraction: float = 0.5,
    min_fold_change: float = 1.0,
    compare_abs: bool = False,
) -> pa.Table:
    """The rows of a rank_genes result (computed with pts=True) whose gene is
    expressed in more than min_in_group_fraction of the group's cells, in less
    than max_out_group_fraction of the other side's (the rest, or the
    reference group), and whose log2 fold change (its absolute value with
    compare_abs) is above min_fold_change. scanpy's defaults and comparisons
    (like scanpy, min_fold_change is compared with the log2 fold change); the
    same genes as scanpy's filter_rank_genes_groups for tests against the
    rest. Against a reference group the other side is that group, where
    scanpy compares with every other cell instead."""
    if "pts_group" not in result.column_names:
        raise InvalidRequestError("filtering needs the fractions of expressing cells: compute the result with pts=True")
    change = result.column("log2_fold_change")
    if compare_abs:
        change = pc.abs(change)
    keep = pc.and_(
        pc.and_(
            pc.greater(result.column("pts_group"), min_in_group_fraction),
            pc.less(result.column("pts_reference"), max_out_group_fraction),
        ),
        pc.greater(change, min_fold_change),
    )
    return result.filter(pc.fill_null(keep, False))
