"""The dense layout: zeros included, genes in blocks. A row holds one cell's
values of one block of GENES_PER_BLOCK genes (or of all, if fewer; columns
v0, v1, ...: gene block * block size + offset), with the cell's metadata and the block
number (gene_block); the rows go block by block, so an object holds few
blocks, its statistics prune the others, and its footer stays small however
wide the matrix (a row per cell of 50,000 gene columns made every call parse
a footer of 50,000 columns, and Ceph refused the import). Storage groups by
(label, gene_block) and returns, per group and block, each selected gene's
moments; one call per object covers every block it holds.

Matrices stored before blocks (a row per cell, a column g<j> per gene, no
gene_block) read as one block of every gene (GeneBlocks.of)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression.label_codes import Groups, group_key
from skyhook.expression.moments import Moments, measured
from skyhook.plan.expressions import conjunction

NAME = "dense"
BLOCK = "gene_block"
#: Genes per block: one storage plan of three or four measures per gene covers a block.
GENES_PER_BLOCK = 200
#: Values (cells x genes) of one batch handed to the writer.
BATCH_VALUES = 1 << 22
_VARIANCE = pc.VarianceOptions(ddof=0)


def value_column(offset: int) -> str:
    return f"v{offset}"


@dataclass(frozen=True)
class GeneBlocks:
    """Where a gene's values are: block position // size, column offset there."""

    size: int
    #: The values have a gene_block column (False: a matrix stored before blocks, one block).
    blocked: bool = True

    @classmethod
    def of(cls, values: Dataset, genes: int) -> GeneBlocks:
        if values.schema.get_field_index(BLOCK) >= 0:
            return cls(sum(1 for name in values.schema.names if name[0] == "v" and name[1:].isdigit()))
        return cls(genes, blocked=False)

    def column(self, offset: int) -> str:
        return value_column(offset) if self.blocked else f"g{offset}"

    def keys(self) -> list[str]:
        return [BLOCK] if self.blocked else []

    def reads(self, positions: np.ndarray) -> list[Read]:
        """How to read the genes at positions: the union of their columns over
        every block holding one, when that reads at most twice their values,
        else each block for its own columns (a scattered selection would read
        most of the matrix); at most GENES_PER_BLOCK columns a read."""
        blocks = np.unique(positions // self.size)
        offsets = np.unique(positions % self.size)
        if len(blocks) * len(offsets) <= 2 * len(positions):
            groups = [(blocks, offsets)]
        else:
            groups = [
                (np.array([block]), np.unique(positions[positions // self.size == block] % self.size))
                for block in blocks
            ]
        reads = []
        for chosen, columns in groups:
            kept = pc.field(BLOCK).isin(pa.array(chosen, pa.int32())) if self.blocked else None
            names = [self.column(int(offset)) for offset in columns]
            reads += [Read(names[at : at + GENES_PER_BLOCK], kept) for at in range(0, len(names), GENES_PER_BLOCK)]
        return reads

    def place(self, blocks: np.ndarray, column: str) -> np.ndarray:
        """The gene positions of column in each row's block."""
        return blocks.astype(np.int64) * self.size + int(column[1:])

    def targets(self, part: pa.Table, columns: list[str], positions: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """For rows of blocks (a grouped result or the values themselves): per
        column, which rows hold a selected gene, and its index in positions."""
        blocks = part.column(BLOCK).to_numpy() if self.blocked else np.zeros(part.num_rows, np.int64)
        index = np.full(int(positions.max(initial=-1)) + 2, -1, dtype=np.int64)  # the last: past every position
        index[positions] = np.arange(len(positions))
        targets = []
        for name in columns:
            at = index[np.minimum(self.place(blocks, name), len(index) - 1)]
            targets.append((at >= 0, at))  # a block's column of a gene not selected (or past the last gene)
        return targets


@dataclass(frozen=True)
class Read:
    """One read of a gene selection: these value columns of the rows of some blocks."""

    columns: list[str]
    filter: pc.Expression | None


def batches(values: Any, cell_metadata: pa.Table) -> Iterator[pa.Table]:
    import scipy.sparse

    matrix = scipy.sparse.csc_matrix(values) if scipy.sparse.issparse(values) else np.asarray(values)
    cells, genes = matrix.shape
    size = min(GENES_PER_BLOCK, genes)  # a narrow matrix: one block of its genes
    per_batch = max(1, BATCH_VALUES // size)
    for block, first in enumerate(range(0, genes, size)):
        columns = matrix[:, first : first + size]
        columns = columns.tocsr() if scipy.sparse.issparse(columns) else columns
        for start in range(0, cells, per_batch):
            stop = min(start + per_batch, cells)
            part = columns[start:stop]
            part = np.asfortranarray(part.toarray() if scipy.sparse.issparse(part) else part)
            table = {"cell": pa.array(np.arange(start, stop, dtype=np.int32))}
            table[BLOCK] = pa.array(np.full(stop - start, block, dtype=np.int32))
            metadata = cell_metadata.slice(start, stop - start)
            table.update({name: metadata.column(name) for name in metadata.column_names})
            for offset in range(size):  # the last block's missing genes are zeros nobody reads
                present = offset < part.shape[1]
                table[value_column(offset)] = pa.array(
                    part[:, offset] if present else np.zeros(stop - start, part.dtype)
                )
            yield pa.table(table)


def data_moments(
    values: Dataset,
    record: list,
    *,
    groupby: str | None,
    groups: Groups,
    genes: np.ndarray,
    cells: pc.Expression | None,
    options: AggregateKeywords,
    count_nonzero: bool = False,
    expm1_scale: float | None = None,
) -> Moments:
    """Per (group, gene) count, mean and M2 of the selected cells in values (a
    matrix's values, or some of its objects); count_nonzero: also count each
    group's cells with a non-zero value (in storage); expm1_scale: moments of
    expm1 of the values (moments.measured)."""
    layout = GeneBlocks.of(values, int(genes.max(initial=0)) + 1)
    key = [group_key(values.schema, groupby)] if groupby else []
    shape = (len(groups.labels), len(genes))
    count, mean, m2 = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    nonzero = np.zeros(shape) if count_nonzero else None
    for read in layout.reads(genes):
        columns = read.columns
        aggregates = [([], "count_all")]
        aggregates += [(measured(name, expm1_scale), "mean", f"{name}_mean") for name in columns]
        aggregates += [(measured(name, expm1_scale), "variance", f"{name}_variance", _VARIANCE) for name in columns]
        if count_nonzero:
            aggregates += [(pc.field(name) != 0, "sum", f"{name}_nonzero") for name in columns]
        by = [*key, *layout.keys()]
        part = values.group_by(by).aggregate(aggregates, filter=conjunction(cells, read.filter), **options)
        record.append(values.last_aggregate.stats)
        rows = groups.rows(part.column(key[0])) if key else np.zeros(part.num_rows, np.int64)
        n = part.column("count_all").to_numpy().astype(np.float64)
        for name, (wanted, at) in zip(columns, layout.targets(part, columns, genes)):
            count[rows[wanted], at[wanted]] = n[wanted]
            mean[rows[wanted], at[wanted]] = _numbers(part, f"{name}_mean")[wanted]
            m2[rows[wanted], at[wanted]] = (_numbers(part, f"{name}_variance") * n)[wanted]
            if nonzero is not None:
                nonzero[rows[wanted], at[wanted]] = _numbers(part, f"{name}_nonzero")[wanted]
    return Moments(groups.labels, genes, count, mean, np.nan_to_num(m2), nonzero)


def _numbers(part: pa.Table, name: str) -> np.ndarray:
    return part.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
