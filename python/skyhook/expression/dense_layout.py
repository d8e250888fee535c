"""The dense layout: a row per cell, its metadata and then one column per
gene (g<position>), zeros included. Storage groups the cells by their label
and returns, per group, the count and each selected gene's mean and
variance; columns storage does not need are not read (Parquet reads columns
separately), and genes go in chunks so that one plan stays small."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.expression.moments import Moments, sorted_labels

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
    groupby: str | None,
    genes: np.ndarray,
    cells: pc.Expression | None,
    options: dict[str, Any],
    record: list,
) -> Moments:
    keys = [groupby] if groupby else []
    parts: list[pa.Table] = []
    for start in range(0, max(len(genes), 1), GENES_PER_PLAN):
        chunk = [gene_column(int(j)) for j in genes[start : start + GENES_PER_PLAN]]
        aggregates = [([], "count_all")] + [(name, "mean") for name in chunk]
        aggregates += [(name, "variance", _VARIANCE) for name in chunk]
        parts.append(values.group_by(keys).aggregate(aggregates, filter=cells, **options))
        record.append(values.last_aggregate.stats)
    labels = sorted_labels(parts[0].column(groupby).to_pylist()) if groupby else [None]
    shape = (len(labels), len(genes))
    count, mean, m2 = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for part_index, part in enumerate(parts):
        if groupby:
            order = {label: index for index, label in enumerate(part.column(groupby).to_pylist())}
            part = part.take(pa.array([order[label] for label in labels], pa.int64()))
        n = part.column("count_all").to_numpy().astype(np.float64)
        first = part_index * GENES_PER_PLAN
        for offset, j in enumerate(genes[first : first + GENES_PER_PLAN]):
            column = first + offset
            count[:, column] = n
            mean[:, column] = part.column(f"{gene_column(int(j))}_mean").to_numpy(zero_copy_only=False)
            m2[:, column] = part.column(f"{gene_column(int(j))}_variance").to_numpy(zero_copy_only=False) * n
    return Moments(labels, genes, count, mean, np.nan_to_num(m2))
