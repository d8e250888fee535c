"""The sparse long layout: a row per non-zero value, (gene, cell, value) and
the cell's metadata beside it, sorted by gene so that a gene filter prunes
objects by their statistics. Storage groups the rows by (group label, gene)
and returns count, mean and variance of the non-zeros; the zeros are folded
back in at the client from the group sizes (moments.with_zeros), which
storage counts on the cell table. Text labels are grouped by their codes
(label_codes.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression.label_codes import Groups, group_key
from skyhook.expression.moments import Moments, measured, with_zeros
from skyhook.plan.expressions import conjunction

NAME = "sparse"
#: Rows of one batch handed to the writer (it splits them into objects).
BATCH_ROWS = 1 << 20
_VARIANCE = pc.VarianceOptions(ddof=0)


def batches(values: Any, cell_metadata: pa.Table) -> Iterator[pa.Table]:
    """values: cells x genes (scipy.sparse or NumPy); cell_metadata: a row per cell."""
    import scipy.sparse

    matrix = scipy.sparse.csc_matrix(values)
    matrix.sort_indices()
    matrix.eliminate_zeros()
    pointers = matrix.indptr
    start = 0
    while start < matrix.shape[1]:
        # Whole genes per batch, about BATCH_ROWS values.
        stop = int(np.searchsorted(pointers, pointers[start] + BATCH_ROWS, side="right")) - 1
        stop = min(max(stop, start + 1), matrix.shape[1])
        first, last = pointers[start], pointers[stop]
        cells = matrix.indices[first:last].astype(np.int32)
        gene = np.repeat(np.arange(start, stop, dtype=np.int32), np.diff(pointers[start : stop + 1]))
        columns = {"gene": pa.array(gene), "cell": pa.array(cells), "value": pa.array(matrix.data[first:last])}
        taken = cell_metadata.take(pa.array(cells))
        yield pa.table({**columns, **{name: taken.column(name) for name in taken.column_names}})
        start = stop


def data_moments(
    values: Dataset,
    record: list,
    *,
    groupby: str | None,
    groups: Groups,
    genes: np.ndarray,
    cells: pc.Expression | None,
    gene_filter: pc.Expression | None,
    options: AggregateKeywords,
    expm1_scale: float | None = None,
) -> Moments:
    """Per (group, gene) count, mean and M2 of the stored (non-zero) values of
    the selected cells in values (a matrix's values, or some of its objects);
    expm1_scale: of expm1 of the values (moments.measured)."""
    key = [group_key(values.schema, groupby)] if groupby else []
    value = measured("value", expm1_scale)
    aggregates = [(value, "count", "value_count"), (value, "mean", "value_mean")]
    aggregates.append((value, "variance", "value_variance", _VARIANCE))
    partials = values.group_by([*key, "gene"]).aggregate(aggregates, filter=conjunction(cells, gene_filter), **options)
    record.append(values.last_aggregate.stats)
    rows = groups.rows(partials.column(key[0])) if key else np.zeros(partials.num_rows, np.int64)
    column_of = np.full(int(genes.max(initial=-1)) + 1, -1)
    column_of[genes] = np.arange(len(genes))
    columns = column_of[partials.column("gene").to_numpy()]
    shape = (len(groups.labels), len(genes))
    count, mean, m2 = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    nonzero_count = partials.column("value_count").to_numpy().astype(np.float64)
    count[rows, columns] = nonzero_count
    mean[rows, columns] = partials.column("value_mean").to_numpy(zero_copy_only=False)
    m2[rows, columns] = partials.column("value_variance").to_numpy(zero_copy_only=False) * nonzero_count
    return Moments(groups.labels, genes, count, mean, m2)


def completed(groups: Groups, stored: Moments) -> Moments:
    """The moments over every selected cell: the zeros not stored folded in."""
    return with_zeros(groups.labels, stored.genes, groups.sizes, stored)
