"""Which cells and genes a computation covers: cells by a filter on their
metadata, genes by name or by a filter on theirs. Both become filters on the
values that storage applies (cell metadata is a column of every layout; genes
are the sparse layout's gene column, or the dense layout's columns)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.expression.errors import UnknownGeneError
from skyhook.expression.label_codes import SUFFIX
from skyhook.expression.source import CELL_ID
from skyhook.plan.expressions import projected_schema
from skyhook.plan.where import parse_where

CellSelection = Union[str, pc.Expression, None]
GeneSelection = Union[str, pc.Expression, Sequence[str], None]


def cell_filter(cells: CellSelection, obs_schema: pa.Schema) -> pc.Expression | None:
    """cells as a filter on the cell metadata columns (what every layout stores
    with the values; a cell's id is not among them)."""
    schema = pa.schema([obs_schema.field(name) for name in cell_metadata_columns(obs_schema)])
    if isinstance(cells, str):
        cells = parse_where(cells, schema)
    if cells is not None:
        projected_schema(schema, [], cells)  # an unknown column or a non-boolean filter is refused here
    return cells


def cell_metadata_columns(obs_schema: pa.Schema) -> list[str]:
    """The cell metadata as the user gave it: not the position, id or label codes."""
    return [name for name in obs_schema.names if name not in ("cell", CELL_ID) and not name.endswith(SUFFIX)]


def gene_indices(genes: GeneSelection, var: Dataset, names: pa.Array) -> np.ndarray:
    """The genes' positions (ascending): all for None, a var filter (text or
    expression, run in storage), or a list of names (each must exist)."""
    if genes is None:
        return np.arange(len(names))
    if isinstance(genes, (str, pc.Expression)):
        chosen = var.to_table(columns=["gene"], filter=genes).column("gene").to_numpy()
        if len(chosen) == 0:
            raise UnknownGeneError(f"no gene matches {genes}")
        return np.sort(chosen).astype(np.int64)
    if not isinstance(genes, Sequence) or not all(isinstance(name, str) for name in genes):
        raise TypeError("genes must be a var filter (text or expression) or a list of gene names")
    wanted = pa.array(list(genes), pa.string())
    found = pc.index_in(wanted, value_set=names)
    if found.null_count:
        missing = [name for name, index in zip(genes, found.to_pylist()) if index is None]
        raise UnknownGeneError(
            f"gene {missing[0]!r} is not in the matrix" + (f" ({len(missing)} unknown)" if len(missing) > 1 else "")
        )
    return np.unique(found.to_numpy().astype(np.int64))


def gene_filter(indices: np.ndarray, n_genes: int, column: str = "gene") -> pc.Expression | None:
    """A filter on the gene column keeping indices (sorted): None for every
    gene, else one range test per run of consecutive genes, OR-ed as a
    balanced tree (storage bounds the depth of an expression)."""
    if len(indices) == n_genes:
        return None
    if len(indices) == 0:
        return pc.field(column) < 0
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    starts, ends = indices[np.r_[0, breaks]], indices[np.r_[breaks - 1, len(indices) - 1]]
    field = pc.field(column)
    tests = [
        field == int(start) if start == end else (field >= int(start)) & (field <= int(end))
        for start, end in zip(starts, ends)
    ]
    return _balanced(tests, operator.or_)


def _balanced(items: list[pc.Expression], combine) -> pc.Expression:
    if len(items) == 1:
        return items[0]
    middle = len(items) // 2
    return combine(_balanced(items[:middle], combine), _balanced(items[middle:], combine))
