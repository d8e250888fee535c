"""A slice of a matrix (selected cells and genes) as an AnnData for scanpy:
the values as stored, read with the selection pushed into storage."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from skyhook.expression import sparse_layout
from skyhook.expression.dense_layout import gene_column
from skyhook.expression.label_codes import SUFFIX
from skyhook.expression.selection import (
    CellSelection,
    GeneSelection,
    cell_filter,
    cell_metadata_columns,
    gene_filter,
    gene_indices,
)
from skyhook.expression.source import CELL_ID, GENE_NAME
from skyhook.expression.stored_matrix import StoredMatrix
from skyhook.plan.expressions import conjunction


def matrix_slice(matrix: StoredMatrix, genes: GeneSelection, cells: CellSelection) -> Any:
    import anndata
    import scipy.sparse

    selected = cell_filter(cells, matrix.obs_dataset.schema)
    positions = gene_indices(genes, matrix.var_dataset, matrix.gene_names)
    obs = matrix.obs_dataset.to_table(filter=selected).sort_by("cell")
    var = matrix.var_dataset.to_table().take(pa.array(positions))
    row_of = np.full(matrix.shape[0], -1)
    row_of[obs.column("cell").to_numpy()] = np.arange(obs.num_rows)
    if matrix.layout == sparse_layout.NAME:
        filter = conjunction(selected, gene_filter(positions, matrix.shape[1]))
        values = matrix.values.to_table(columns=["gene", "cell", "value"], filter=filter)
        column_of = np.full(matrix.shape[1], -1)
        column_of[positions] = np.arange(len(positions))
        x = scipy.sparse.csr_matrix(
            (
                values.column("value").to_numpy(),
                (row_of[values.column("cell").to_numpy()], column_of[values.column("gene").to_numpy()]),
            ),
            shape=(obs.num_rows, len(positions)),
        )
    else:
        names = [gene_column(int(j)) for j in positions]
        values = matrix.values.to_table(columns=["cell", *names], filter=selected)
        x = np.empty((obs.num_rows, len(positions)), dtype=matrix.entry.dtype)
        rows = row_of[values.column("cell").to_numpy()]
        for index, name in enumerate(names):
            x[rows, index] = values.column(name).to_numpy()
    obs_frame = obs.select([CELL_ID, *cell_metadata_columns(obs.schema)]).to_pandas().set_index(CELL_ID)
    for name in obs_frame.columns:
        if obs.schema.get_field_index(name + SUFFIX) >= 0:  # text labels: categories in their codes' order
            obs_frame[name] = obs_frame[name].astype(_categories(obs.column(name), obs.column(name + SUFFIX)))
    var_frame = var.drop_columns(["gene"]).to_pandas().set_index(GENE_NAME)
    obs_frame.index.name = var_frame.index.name = None
    return anndata.AnnData(
        x,
        obs=obs_frame,
        var=var_frame,
        uns={"skyhook": {"matrix": f"{matrix.domain}/{matrix.name}", "metadata": matrix.metadata}},
    )


def _categories(labels: pa.ChunkedArray, codes: pa.ChunkedArray) -> Any:
    """The pandas categorical type of labels, its categories ordered by their codes."""
    import pandas as pd

    pairs = pa.table({"label": labels, "code": codes}).drop_null().group_by(["code", "label"]).aggregate([])
    return pd.CategoricalDtype(pairs.sort_by("code").column("label").to_pylist())
