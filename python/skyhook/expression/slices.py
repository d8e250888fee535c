"""A slice of a matrix (selected cells and genes) as an AnnData for scanpy:
the values as stored, read with the selection pushed into storage, and the
cell and gene tables with only the columns asked for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from skyhook.errors import InvalidRequestError, UnknownColumnError
from skyhook.expression import sparse_layout
from skyhook.expression.dense_layout import GeneBlocks
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


def matrix_slice(
    matrix: StoredMatrix,
    genes: GeneSelection,
    cells: CellSelection,
    obs_columns: Sequence[str] | None = None,
    var_columns: Sequence[str] | None = None,
) -> Any:
    """obs_columns / var_columns: the cell and gene metadata to carry (None: all)."""
    import anndata
    import scipy.sparse

    selected = cell_filter(cells, matrix.obs_dataset.schema)
    positions = gene_indices(genes, matrix.var_dataset, matrix.gene_names)
    obs = matrix.obs_dataset.to_table(columns=_obs_read(matrix, obs_columns), filter=selected).sort_by("cell")
    var = matrix.var_dataset.to_table(columns=_columns(matrix.var_dataset.schema, ["gene", GENE_NAME], var_columns))
    var = var.take(pa.array(positions))
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
        layout = GeneBlocks.of(matrix.values, matrix.shape[1])
        x = np.zeros((obs.num_rows, len(positions)), dtype=matrix.entry.dtype)
        for read in layout.reads(positions):
            columns = ["cell", *layout.keys(), *read.columns]
            values = matrix.values.to_table(columns=columns, filter=conjunction(selected, read.filter))
            rows = row_of[values.column("cell").to_numpy()]
            for name, (wanted, at) in zip(read.columns, layout.targets(values, read.columns, positions)):
                x[rows[wanted], at[wanted]] = values.column(name).to_numpy()[wanted]
    obs_frame = obs.select([CELL_ID, *cell_metadata_columns(obs.schema)]).to_pandas().set_index(CELL_ID)
    for name in obs_frame.columns:
        if obs.schema.get_field_index(name + SUFFIX) >= 0:  # text labels: categories in their codes' order
            obs_frame[name] = obs_frame[name].astype(_categories(matrix, name))
    var_frame = var.drop_columns(["gene"]).to_pandas().set_index(GENE_NAME)
    obs_frame.index.name = var_frame.index.name = None
    return anndata.AnnData(
        x,
        obs=obs_frame,
        var=var_frame,
        uns={"skyhook": {"matrix": f"{matrix.domain}/{matrix.name}", "metadata": matrix.metadata}},
    )


def _obs_read(matrix: StoredMatrix, wanted: Sequence[str] | None) -> list[str] | None:
    """The cell table's columns to read: its position and id, the metadata
    wanted and their label codes."""
    schema = matrix.obs_dataset.schema
    columns = _columns(schema, ["cell", CELL_ID], wanted)
    if columns is None:
        return None
    return columns + [name + SUFFIX for name in columns[2:] if schema.get_field_index(name + SUFFIX) >= 0]


def _columns(schema: pa.Schema, always: list[str], wanted: Sequence[str] | None) -> list[str] | None:
    if wanted is None:
        return None
    if isinstance(wanted, str) or not all(isinstance(name, str) for name in wanted):
        raise InvalidRequestError(f"columns are a list of names, not {wanted!r}")
    metadata = [name for name in schema.names if name not in always and not name.endswith(SUFFIX)]
    unknown = [name for name in wanted if name not in metadata]
    if unknown:
        raise UnknownColumnError(f"no metadata column {unknown[0]!r}; there are {', '.join(metadata) or 'none'}")
    return always + list(dict.fromkeys(wanted))


def _categories(matrix: StoredMatrix, name: str) -> Any:
    """The pandas categorical type of a label column: every label of the
    matrix (not only the selection's), ordered by their codes; counted in
    storage."""
    import pandas as pd

    pairs = matrix.obs_dataset.group_by([name + SUFFIX, name]).aggregate([([], "count_all")])
    pairs = pairs.drop_null().sort_by(name + SUFFIX)
    return pd.CategoricalDtype(pairs.column(name).to_pylist())
