"""The dense layout: a row per cell, its metadata and then one column per
gene (g<position>), zeros included. Storage groups the cells by their label
(its code, label_codes.py) and returns, per group, each selected gene's
mean and variance; columns storage does not need are not read (Parquet reads columns
separately), and genes go in chunks so that one plan stays small."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression.label_codes import group_key, group_sizes
from skyhook.expression.moments import Moments

NAME = "dense"
#: Cells of one batch handed to the writer.
BATCH_CELLS = 4096
#: Genes per storage plan (three measures each).
GENES_PER_PLAN = 200
_VARIANCE = pc.VarianceOptions(ddof=0)


def gene_column(position: int) -> str:
    return f"g{position}"


def batches(values: Any, cell_metadata: pa.Table) -> Iterator[pa.Table]:
    import scipy.sparse

    matrix = scipy.sparse.csr_matrix(values) if scipy.sparse.issparse(values) else np.asarray(values)
    cells, genes = matrix.shape
    for start in range(0, max(cells, 1), BATCH_CELLS):
        stop = min(start + BATCH_CELLS, cells)
        block = matrix[start:stop]
        block = np.asfortranarray(block.toarray() if scipy.sparse.issparse(block) else block)
        columns = {"cell": pa.array(np.arange(start, stop, dtype=np.int32))}
        metadata = cell_metadata.slice(start, stop - start)
        columns.update({name: metadata.column(name) for name in metadata.column_names})
        columns.update({gene_column(j): pa.array(block[:, j]) for j in range(genes)})
        yield pa.table(columns)


def moments(
    values: Dataset,
    obs: Dataset,
    groupby: str | None,
    genes: np.ndarray,
    cells: pc.Expression | None,
    options: AggregateKeywords,
    record: list,
    count_nonzero: bool = False,
) -> Moments:
    """count_nonzero: also count each group's cells with a non-zero value (in storage)."""
    labels, row_of, sizes = group_sizes(obs, groupby, cells, options, record)
    key = [group_key(values.schema, groupby)] if groupby else []
    shape = (len(labels), len(genes))
    mean, m2, nonzero = np.zeros(shape), np.zeros(shape), np.zeros(shape) if count_nonzero else None
    for start in range(0, len(genes), GENES_PER_PLAN):
        chunk = [gene_column(int(j)) for j in genes[start : start + GENES_PER_PLAN]]
        aggregates = [([], "count_all")] + [(name, "mean") for name in chunk]
        aggregates += [(name, "variance", _VARIANCE) for name in chunk]
        if nonzero is not None:
            aggregates += [(pc.field(name) != 0, "sum", f"{name}_nonzero") for name in chunk]
        part = values.group_by(key).aggregate(aggregates, filter=cells, **options)
        record.append(values.last_aggregate.stats)
        keys = part.column(key[0]).to_pylist() if key else [None] * part.num_rows
        rows = np.array([row_of[value] for value in keys], dtype=np.int64)
        n = part.column("count_all").to_numpy().astype(np.float64)
        for offset, name in enumerate(chunk):
            mean[rows, start + offset] = part.column(f"{name}_mean").to_numpy(zero_copy_only=False)
            m2[rows, start + offset] = part.column(f"{name}_variance").to_numpy(zero_copy_only=False) * n
            if nonzero is not None:
                nonzero[rows, start + offset] = part.column(f"{name}_nonzero").to_numpy(zero_copy_only=False)
    count = np.repeat(sizes[:, None], len(genes), axis=1)
    return Moments(labels, genes, count, mean, np.nan_to_num(m2), nonzero)
