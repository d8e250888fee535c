"""CSV / Parquet (or Arrow) tables of values: the seed's orientation (a row per
gene, a column per cell) or pivoted (a row per cell, a column per gene), with
optional cell and gene tables whose first column names the cells / genes."""

from __future__ import annotations

from pathlib import Path
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from skyhook.errors import InvalidInputError
from skyhook.expression.source import CELL_ID, GENE_NAME, ExpressionData

TableInput = Union[str, Path, pa.Table]
ORIENTATIONS = ("genes", "cells")  # what a row of the values table is


def read_tables(
    values: TableInput, cells: TableInput | None = None, genes: TableInput | None = None, rows: str = "genes"
) -> ExpressionData:
    """values: its first column names the rows (genes, or cells with rows="cells"),
    every other column is one cell (or gene) of numbers."""
    if rows not in ORIENTATIONS:
        raise InvalidInputError(f"rows={rows!r}: expected 'genes' (the seed's orientation) or 'cells'")
    table = _table(values)
    if table.num_columns < 2:
        raise InvalidInputError("the values table needs a column of names and at least one column of values")
    row_ids = [str(value) for value in table.column(0).to_pylist()]
    column_ids = table.column_names[1:]
    matrix = np.column_stack([_numbers(table, name) for name in column_ids]) if table.num_rows else None
    if matrix is None:
        matrix = np.zeros((0, len(column_ids)))
    if rows == "genes":
        matrix, gene_ids, cell_ids = matrix.T, row_ids, column_ids
    else:
        gene_ids, cell_ids = column_ids, row_ids
    obs = _metadata(cells, CELL_ID, cell_ids, "cell")
    var = _metadata(genes, GENE_NAME, gene_ids, "gene")
    return ExpressionData(np.ascontiguousarray(matrix), obs, var, "table")


def _table(source: TableInput) -> pa.Table:
    if isinstance(source, pa.Table):
        return source
    path = Path(source)
    try:
        if path.suffix == ".parquet":
            return pq.read_table(path)
        return pacsv.read_csv(path)
    except (OSError, pa.ArrowInvalid) as error:
        raise InvalidInputError(f"{path}: {str(error).splitlines()[0]}") from None


def _numbers(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise InvalidInputError(f"column {name!r} of the values table is {column.type}, not numbers")
    if column.null_count:
        raise InvalidInputError(f"column {name!r} of the values table has empty values")
    array = column.to_numpy()
    return array.astype(np.float64) if array.dtype.kind in "iu" else array


def _metadata(source: TableInput | None, id_column: str, ids: list[str], what: str) -> pa.Table:
    """The metadata table in the order of ids, its first column renamed to id_column."""
    if source is None:
        return pa.table({id_column: pa.array(ids, pa.string())})
    table = _table(source)
    table = table.rename_columns([id_column, *table.column_names[1:]])
    named = [str(value) for value in table.column(0).to_pylist()]
    missing, extra = sorted(set(ids) - set(named)), sorted(set(named) - set(ids))
    if missing or extra or len(named) != len(ids):
        problem = (
            f"{what}s {missing[:3]} are in the values but not in the {what} table"
            if missing
            else f"{what}s {extra[:3]} are in the {what} table but not in the values"
            if extra
            else f"the {what} table names a {what} twice"
        )
        raise InvalidInputError(f"the {what} table does not match the values: {problem}")
    position = {name: index for index, name in enumerate(named)}
    table = table.take(pa.array([position[name] for name in ids]))
    return table.set_column(0, id_column, pc.cast(table.column(0), pa.string()))
