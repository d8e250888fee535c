"""Pseudobulk: each selected gene's values summed over the cells of each
combination of cell labels (sample x cell type, say), the input of DESeq2 and
edgeR workflows. Storage groups by the labels' codes (label_codes.py) and
sums; only the sums cross (a row per combination and gene that has a
non-zero value, in the sparse layout), and the cells of each combination
are counted on the cell table. Sums are float64 in storage, exact for counts
up to 2^53."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.errors import InvalidRequestError
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression import dense_layout, sparse_layout
from skyhook.expression.errors import GroupError
from skyhook.expression.label_codes import group_key
from skyhook.expression.selection import CellSelection, GeneSelection, cell_filter, gene_filter, gene_indices
from skyhook.expression.stored_matrix import StoredMatrix
from skyhook.plan.expressions import conjunction

if TYPE_CHECKING:
    from typing_extensions import Unpack


def pseudobulk(
    matrix: StoredMatrix,
    by: str | list[str],
    genes: GeneSelection = None,
    cells: CellSelection = None,
    **options: Unpack[AggregateKeywords],
) -> pa.Table:
    """A row per (combination of the by columns' labels, gene): the labels,
    gene, n_cells (the combination's selected cells) and sum (of the gene's
    values over them). Combinations come in the order of their labels'
    categories (unlabelled last); every selected gene of every combination
    has a row, zeros included."""
    keys = [by] if isinstance(by, str) else list(by)
    if not keys or len(set(keys)) != len(keys):
        raise InvalidRequestError(f"pseudobulk needs one or more distinct cell metadata columns, not {by!r}")
    for key in keys:
        matrix.check_groupby(key)
    selected = cell_filter(cells, matrix.obs_dataset.schema)
    positions = gene_indices(genes, matrix.var_dataset, matrix.gene_names)
    matrix.last_stats = []
    labels, row_of, n_cells = _combinations(matrix, keys, selected, options)
    if not len(n_cells):
        raise GroupError(f"no cell is selected{'' if cells is None else f' by {cells}'}: nothing to sum")
    codes = [group_key(matrix.values.schema, key) for key in keys]
    sums = np.zeros((len(n_cells), len(positions)))
    if matrix.layout == sparse_layout.NAME:
        values_filter = conjunction(selected, gene_filter(positions, matrix.shape[1]))
        part = matrix.values.group_by([*codes, "gene"]).aggregate([("value", "sum")], filter=values_filter, **options)
        matrix.last_stats.append(matrix.values.last_aggregate.stats)
        column_of = np.full(matrix.shape[1], -1)
        column_of[positions] = np.arange(len(positions))
        sums[_rows(part, codes, row_of), column_of[part.column("gene").to_numpy()]] = _numbers(part, "value_sum")
    else:
        layout = dense_layout.GeneBlocks.of(matrix.values, matrix.shape[1])
        for read in layout.reads(positions):
            part = matrix.values.group_by([*codes, *layout.keys()]).aggregate(
                [(name, "sum") for name in read.columns], filter=conjunction(selected, read.filter), **options
            )
            matrix.last_stats.append(matrix.values.last_aggregate.stats)
            rows = _rows(part, codes, row_of)
            for name, (wanted, at) in zip(read.columns, layout.targets(part, read.columns, positions)):
                sums[rows[wanted], at[wanted]] = _numbers(part, f"{name}_sum")[wanted]
    gene_names = matrix.gene_names.take(pa.array(positions)).to_numpy(zero_copy_only=False)
    combinations, count = len(n_cells), len(positions)
    columns = {key: pa.array(np.repeat(np.array(values, dtype=object), count)) for key, values in labels.items()}
    table = pa.table(
        {
            **{key: column.cast(matrix.obs_dataset.schema.field(key).type) for key, column in columns.items()},
            "gene": pa.array(np.tile(gene_names, combinations), pa.string()),
            "n_cells": pa.array(np.repeat(n_cells, count), pa.int64()),
            "sum": pa.array(sums.ravel()),
        }
    )
    return matrix.with_metadata(table)


def _combinations(
    matrix: StoredMatrix, keys: list[str], selected: pc.Expression | None, options: AggregateKeywords
) -> tuple[dict[str, list], dict[tuple, int], np.ndarray]:
    """({key: its label per combination}, {codes of a combination: its row},
    cells per combination) of the selected cells, counted on the cell table,
    in the order of the codes (the categories' order), unlabelled last."""
    obs = matrix.obs_dataset
    codes = [group_key(obs.schema, key) for key in keys]
    counted = obs.group_by(list(dict.fromkeys([*codes, *keys]))).aggregate(
        [([], "count_all")], filter=selected, **options
    )
    matrix.last_stats.append(obs.last_aggregate.stats)
    code_values = list(zip(*(counted.column(code).to_pylist() for code in codes)))
    order = sorted(
        range(counted.num_rows),
        key=lambda i: tuple((value is None, "" if value is None else value) for value in code_values[i]),
    )
    labels = {key: [counted.column(key)[i].as_py() for i in order] for key in keys}
    rows = {code_values[i]: row for row, i in enumerate(order)}
    return labels, rows, counted.column("count_all").to_numpy()[order].astype(np.int64)


def _rows(part: pa.Table, codes: list[str], row_of: dict[tuple, int]) -> np.ndarray:
    """Each row of part's combination row, by its codes."""
    keys = zip(*(part.column(code).to_pylist() for code in codes))
    return np.array([row_of[key] for key in keys], dtype=np.int64)


def _numbers(part: pa.Table, name: str) -> np.ndarray:
    return part.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
