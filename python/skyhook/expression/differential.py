"""Differential expression: each group of cells against the rest (scanpy's
convention: every other selected cell, unlabelled ones included), against a
reference group, or one cell set of a matrix against one of another matrix.
Results are Arrow tables, a row per (group, gene), ordered by group and then
by t (largest first, as scanpy ranks), carrying the matrix's metadata."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from skyhook.errors import InvalidRequestError
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression import rank_sums
from skyhook.expression.distributed_moments import CLIENT, MomentsKeywords
from skyhook.expression.errors import ExpressionInputWarning, GroupError, UnknownGeneError
from skyhook.expression.moments import Moments
from skyhook.expression.rank_sums import WILCOXON, Side
from skyhook.expression.selection import CellSelection, GeneSelection, cell_filter, gene_indices
from skyhook.expression.source import VALUE_KIND
from skyhook.expression.stored_matrix import StoredMatrix
from skyhook.expression.ttest import METHODS, benjamini_hochberg, check_method, log2_fold_change, t_test

if TYPE_CHECKING:
    from typing_extensions import Unpack

REST = "rest"
OTHER_METADATA_KEY = b"skyhook.expression.reference_metadata"


def rank_genes(
    matrix: StoredMatrix,
    groupby: str,
    *,
    method: str = "welch",
    reference: Any = REST,
    groups: Sequence[Any] | None = None,
    genes: GeneSelection = None,
    cells: CellSelection = None,
    tie_correct: bool = False,
    pts: bool = False,
    **options: Unpack[MomentsKeywords],
) -> pa.Table:
    """Tests of each group of groupby (or of groups) against reference: "rest"
    or a group's label. method: "welch" (scanpy's "t-test"), "student",
    "overestim_var" (scanpy's "t-test_overestim_var") or "wilcoxon" (rank
    sums, scanpy's "wilcoxon"; tie_correct as scanpy's). t-tests give a t and
    df per gene, Wilcoxon a z (score_column). pts: add the fraction of each
    side's cells that express the gene (pts_group, pts_reference; scanpy's
    pts). options go to the storage aggregates (pushdown=True, ...); t-tests
    take engine="dask" too (their moments merge on a Dask cluster)."""
    if method not in (*METHODS, WILCOXON):
        raise InvalidRequestError(f"unknown method {method!r}; expected welch, student, overestim_var or wilcoxon")
    warn_if_not_log_normalised(matrix)
    if method == WILCOXON:
        if options.get("engine", CLIENT) != CLIENT or "partition_bytes" in options:
            raise InvalidRequestError("wilcoxon ranks at the client; engine='dask' runs the t-test methods")
        return _wilcoxon(matrix, groupby, reference, groups, genes, cells, tie_correct, pts, options)
    moments = matrix.moments(groupby, genes, cells, count_nonzero=pts, **options)
    tested, reference = _tested_groups(moments.groups, groupby, reference, groups)
    parts = []
    for group in tested:
        row = moments.row(group)
        others = [moments.row(reference)] if reference != REST else [i for i in range(len(moments.groups)) if i != row]
        other = moments.merged(others)
        _check_size(moments.count[row], f"group {group!r}")
        _check_size(other.count[0], "the rest" if reference == REST else f"reference group {reference!r}")
        parts.append(_compared(moments, row, other, str(group), str(reference), method, matrix, pts))
    return matrix.with_metadata(pa.concat_tables(parts))


def score_column(result: pa.Table) -> str:
    """The column a rank_genes result ranks genes by: z (Wilcoxon) or t."""
    return "z" if "z" in result.column_names else "t"


def _tested_groups(labels: list[Any], groupby: str, reference: Any, groups: Sequence[Any] | None) -> tuple[list, Any]:
    """(the labels to test, the reference: REST or a label), checked against the selected cells' labels."""
    labelled = [label for label in labels if label is not None]
    if not labelled:
        raise GroupError(f"no selected cell has a label in {groupby!r}: no group to test")
    if reference != REST:
        reference = _label(reference, labelled, groupby, "reference group")
    if groups is not None and np.ndim(groups) == 0:  # one label (R passes a length-1 vector as a scalar)
        groups = [groups]
    tested = (
        [_label(group, labelled, groupby, "group") for group in groups]
        if groups is not None
        else [label for label in labelled if label != reference]
    )
    if not tested:
        raise GroupError(f"{groupby!r} has no selected group besides the reference group {reference!r}")
    for group in tested:
        if group == reference:
            raise GroupError(f"group {group!r} is the reference group: it cannot be tested against itself")
    return tested, reference


def _wilcoxon(
    matrix: StoredMatrix,
    groupby: str,
    reference: Any,
    groups: Sequence[Any] | None,
    genes: GeneSelection,
    cells: CellSelection,
    tie_correct: bool,
    pts: bool,
    options: AggregateKeywords,
) -> pa.Table:
    matrix.check_groupby(groupby)
    selected = cell_filter(cells, matrix.obs_dataset.schema)
    positions = gene_indices(genes, matrix.var_dataset, matrix.gene_names)
    matrix.last_stats = []
    found = rank_sums.groups_of(matrix, groupby, selected, options)
    tested, reference = _tested_groups(found.labels, groupby, reference, groups)
    rows = [found.labels.index(group) for group in tested]
    reference_row = None if reference == REST else found.labels.index(reference)
    for group, row in zip(tested, rows):
        other = found.sizes.sum() - found.sizes[row] if reference_row is None else found.sizes[reference_row]
        _check_size(found.sizes[row : row + 1], f"group {group!r}", WILCOXON)
        _check_size(np.array([other]), "the rest" if reference == REST else f"reference group {reference!r}", WILCOXON)
    tests = rank_sums.wilcoxon(matrix, groupby, found, rows, reference_row, positions, selected, tie_correct, options)
    parts = []
    for group, row in zip(tested, rows):
        test = tests[row]
        order = np.argsort(-test.z, kind="stable")
        scores = {"z": test.z[order], "p": test.p[order], "p_adj": benjamini_hochberg(test.p)[order]}
        mine, theirs = test.group, test.reference
        if not pts:
            mine.nonzero = theirs.nonzero = None
        parts.append(_table(matrix, positions, order, str(group), str(reference), scores, mine, theirs))
    return matrix.with_metadata(pa.concat_tables(parts))


def warn_if_not_log_normalised(matrix: StoredMatrix) -> None:
    """ExpressionInputWarning when the values were raw counts or held negative
    values at import (t-tests and fold changes expect log-normalised values)."""
    kind = (matrix.values.schema.metadata or {}).get(VALUE_KIND, b"").decode()
    looks = {
        "counts": "raw counts (every value a non-negative integer)",
        "negative": "scaled data (some values are negative)",
    }.get(kind)
    if looks is not None:
        warnings.warn(
            f"the values of {matrix.domain}/{matrix.name} look like {looks}: t-tests and fold changes expect "
            "log-normalised values (scanpy: sc.pp.normalize_total, then sc.pp.log1p)",
            ExpressionInputWarning,
            stacklevel=3,
        )


def _label(given: Any, labelled: list[Any], groupby: str, what: str) -> Any:
    """The label given names: itself, or the one label written as given's text
    (a command line's "1" for the integer label 1)."""
    if given in labelled:
        return labelled[labelled.index(given)]
    spelled = [label for label in labelled if isinstance(given, str) and str(label) == given]
    if len(spelled) == 1:
        return spelled[0]
    raise GroupError(f"{what} {given!r} has no selected cells in {groupby!r} (groups: {labelled[:20]})")


def ttest_between(
    first: StoredMatrix,
    second: StoredMatrix,
    *,
    cells: CellSelection = None,
    other_cells: CellSelection = None,
    genes: Sequence[str] | None = None,
    method: str = "welch",
    **options: Unpack[MomentsKeywords],
) -> pa.Table:
    """t-tests of the cells of first (selected by cells) against those of second
    (by other_cells), gene by gene, matched by name: genes (names), or every
    gene of first that second has. Both matrices must be in one domain."""
    if method == WILCOXON:
        raise InvalidRequestError("wilcoxon ranks the groups of one matrix; between matrices, use a t-test method")
    check_method(method)
    for matrix in (first, second):
        warn_if_not_log_normalised(matrix)
    if first.domain != second.domain:
        raise InvalidRequestError(
            f"matrix {first.name!r} is in domain {first.domain!r} and {second.name!r} in {second.domain!r}: "
            "only matrices of one domain are compared"
        )
    if genes is None:
        theirs = set(second.gene_names.to_pylist())
        genes = [name for name in first.gene_names.to_pylist() if name in theirs]
        if not genes:
            raise UnknownGeneError(f"matrices {first.name!r} and {second.name!r} have no gene in common")
    mine = first.moments(None, genes, cells, **options)
    stats = list(first.last_stats)
    theirs_moments = second.moments(None, genes, other_cells, **options)
    first.last_stats = stats + second.last_stats
    # Both are in each matrix's gene order: line the second up with the first by name.
    names = first.gene_names.take(pa.array(mine.genes)).to_pylist()
    position = {
        name: index for index, name in enumerate(second.gene_names.take(pa.array(theirs_moments.genes)).to_pylist())
    }
    order = [position[name] for name in names]
    other = Moments(
        [None], mine.genes, theirs_moments.count[:, order], theirs_moments.mean[:, order], theirs_moments.m2[:, order]
    )
    _check_size(mine.count[0], f"the cells of {first.name!r}")
    _check_size(other.count[0], f"the cells of {second.name!r}")
    result = _compared(mine, 0, other, first.name, second.name, method, first)
    result = first.with_metadata(result)
    return result.replace_schema_metadata(
        {**result.schema.metadata, OTHER_METADATA_KEY: json.dumps(second.metadata).encode()}
    )


def _compared(
    moments: Moments,
    row: int,
    other: Moments,
    group: str,
    reference: str,
    method: str,
    matrix: StoredMatrix,
    pts: bool = False,
) -> pa.Table:
    n1, mean1, var1 = moments.count[row], moments.mean[row], moments.variance(1)[row]
    n2, mean2, var2 = other.count[0], other.mean[0], other.variance(1)[0]
    test = t_test(n1, mean1, var1, n2, mean2, var2, method)
    order = np.argsort(-test.t, kind="stable")
    scores = {"t": test.t[order], "df": test.df[order], "p": test.p[order], "p_adj": benjamini_hochberg(test.p)[order]}
    mine = Side(n1, mean1, moments.nonzero[row] if pts else None)
    theirs = Side(n2, mean2, other.nonzero[0] if pts else None)
    return _table(matrix, moments.genes, order, group, reference, scores, mine, theirs)


def _table(
    matrix: StoredMatrix,
    genes: np.ndarray,
    order: np.ndarray,
    group: str,
    reference: str,
    scores: dict[str, np.ndarray],
    mine: Side,
    theirs: Side,
) -> pa.Table:
    """A result's rows for one group: its scores, then fold changes, means and sizes, genes in order."""
    columns = {
        "group": pa.array([group] * len(order), pa.string()),
        "reference": pa.array([reference] * len(order), pa.string()),
        "gene": matrix.gene_names.take(pa.array(genes[order])),
        **scores,
        "log2_fold_change": log2_fold_change(mine.mean, theirs.mean, matrix.entry.log1p_base)[order],
        "mean_group": mine.mean[order],
        "mean_reference": theirs.mean[order],
        "n_group": mine.n[order].astype(np.int64),
        "n_reference": theirs.n[order].astype(np.int64),
    }
    if mine.nonzero is not None and theirs.nonzero is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            columns["pts_group"] = (mine.nonzero / mine.n)[order]
            columns["pts_reference"] = (theirs.nonzero / theirs.n)[order]
    return pa.table(columns)


def _check_size(count: np.ndarray, what: str, method: str = "welch") -> None:
    cells = int(count[0]) if len(count) else 0
    least, test = (1, "a rank-sum test") if method == WILCOXON else (2, "a t-test")
    if cells < least:
        raise GroupError(f"{what} has {cells} selected cell{'s' if cells != 1 else ''}: {test} needs at least {least}")
