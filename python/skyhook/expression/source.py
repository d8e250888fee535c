"""What every input becomes before it is written: the values (cells x genes,
sparse or dense, float32 or float64 as given), the cell table (obs) and the
gene table (var), checked to fit each other."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.errors import InvalidInputError

CELL_ID = "cell_id"
GENE_NAME = "gene_name"
#: Field metadata of a text column that was categorical: its categories, in order (JSON).
CATEGORIES = b"skyhook.categories"
#: Columns the layouts add next to the obs columns (layouts.py); obs may not use them.
#: The values dataset's schema metadata key saying what the values look like
#: (value_kind); older clients ignore it.
VALUE_KIND = b"skyhook.expression.value_kind"
RESERVED = re.compile(r"cell|cell_id|gene|value|gene_block|g[0-9]+|v[0-9]+|.*__code")


@dataclass
class ExpressionData:
    #: cells x genes: a scipy.sparse matrix or a 2-d NumPy array of float32 / float64.
    values: Any
    #: One row per cell: CELL_ID (string) first, then the cell metadata.
    obs: pa.Table
    #: One row per gene: GENE_NAME (string) first, then the gene metadata.
    var: pa.Table
    #: "X", "raw", "layer:<name>", "mtx" or "table".
    source: str
    log1p_base: float | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def density(self) -> float:
        cells, genes = self.shape
        stored = self.values.nnz if hasattr(self.values, "nnz") else np.count_nonzero(self.values)
        return stored / max(1, cells * genes)


def checked(data: ExpressionData) -> ExpressionData:
    """data with integer or boolean values widened to float64, if everything
    fits: InvalidInputError (one line) otherwise."""
    cells, genes = data.values.shape
    if not cells or not genes:
        raise InvalidInputError(f"the matrix has {cells} cells and {genes} genes: nothing to store")
    if data.obs.num_rows != cells:
        raise InvalidInputError(f"the cell table has {data.obs.num_rows} rows for {cells} cells of the matrix")
    if data.var.num_rows != genes:
        raise InvalidInputError(f"the gene table has {data.var.num_rows} rows for {genes} genes of the matrix")
    _check_unique(data.obs, CELL_ID, "cell")
    _check_unique(data.var, GENE_NAME, "gene")
    for name in data.obs.column_names[1:]:
        if RESERVED.fullmatch(name):
            raise InvalidInputError(
                f"cell metadata column {name!r} has a reserved name (cell, cell_id, gene, value, gene_block, g<N>, v<N>, *__code)"
            )
    kind = data.values.dtype.kind
    if kind in "iub":
        data.values = data.values.astype(np.float64)
    elif data.values.dtype not in (np.float32, np.float64):
        raise InvalidInputError(f"expression values must be numeric, not {data.values.dtype}")
    stored = data.values.data if hasattr(data.values, "nnz") else data.values
    if not np.isfinite(stored).all():
        raise InvalidInputError("expression values must be finite (the matrix holds NaN or infinity)")
    return data


def _check_unique(table: pa.Table, column: str, what: str) -> None:
    ids = table.column(column)
    if ids.null_count:
        raise InvalidInputError(f"a {what} has no name ({column} is null)")
    unique = pc.unique(ids)
    if len(unique) != len(ids):
        counts = pc.value_counts(ids)
        duplicate = counts.filter(pc.greater(counts.field("counts"), 1))[0]["values"].as_py()
        raise InvalidInputError(f"duplicate {what} {duplicate!r}: {what} names must be unique")


def frame_table(frame: Any, id_column: str, ids: Any) -> pa.Table:
    """A pandas frame of cell or gene metadata as an Arrow table, ids first:
    categories become their labels (plain strings filter and group in storage,
    dictionaries do not), their order kept in the field's metadata
    (CATEGORIES); anything not numeric or boolean becomes text."""
    fields = [pa.field(id_column, pa.string())]
    columns: list[pa.Array] = [pa.array([str(value) for value in ids], pa.string())]
    for name in frame.columns:
        if str(name) == id_column:
            raise InvalidInputError(f"a metadata column is named {id_column!r}, the name skyhook gives the ids")
        series = frame[name]
        categorical = str(series.dtype) == "category"
        array = pa.array(series.astype(object) if categorical else series, from_pandas=True)
        if pa.types.is_dictionary(array.type):
            array = array.cast(array.type.value_type)
        metadata = None
        if not (pa.types.is_integer(array.type) or pa.types.is_floating(array.type) or pa.types.is_boolean(array.type)):
            array = pa.array([None if value is None else str(value) for value in array.to_pylist()], pa.string())
            if categorical:
                metadata = {CATEGORIES: json.dumps([str(label) for label in series.cat.categories])}
        fields.append(pa.field(str(name), array.type, metadata=metadata))
        columns.append(array)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def value_kind(data: ExpressionData) -> str:
    """ "counts" when every value is a non-negative integer (raw counts),
    "negative" when some value is below zero (scaled data), else "" (what
    log-normalised data looks like). Read in blocks: a rounded copy of a
    whole atlas-sized matrix would double the import's memory."""
    stored = (data.values.data if hasattr(data.values, "nnz") else np.asarray(data.values)).ravel(order="K")  # no copy
    if stored.size and stored.min() < 0:
        return "negative"
    block = 1 << 22
    integral = all(
        np.array_equal(part, np.round(part)) for part in (stored[i : i + block] for i in range(0, stored.size, block))
    )
    return "counts" if integral else ""
