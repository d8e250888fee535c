"""Wilcoxon rank-sum tests (scanpy's "wilcoxon") from value counts.

Ranks cannot come from means and variances: they need each gene's values
ordered across groups. What they need is less than the values themselves:
how many selected cells of each group hold each value of each gene. From
those counts the average ranks of tied values, each group's rank sum and the
tie correction are exact (rank sums are half-integers, exact in float64).

Where the counts come from depends on the layout:
- sparse: storage groups the non-zero values by (group, gene, value) and
  counts them; only one row per distinct value of a gene in a group crosses,
  and each group's zeros are one tied block counted on the cell table. Raw
  counts and quantised data have few distinct values per gene and move very
  little; continuous values (log-normalised counts) move about one row per
  selected non-zero value.
- dense: the selected values are read in blocks of genes (only their columns)
  and counted at the client.
Genes are done in blocks of about ENTRIES_PER_BLOCK counts, so the client's
memory is bounded whatever the matrix's size.

The statistic is scanpy's: z = (R - n1 (N + 1) / 2) / sqrt(T n1 n2 (N + 1) / 12)
over the n1 cells of the group and the n2 of the other side (N = n1 + n2),
with T = 1 - sum(t^3 - t) / (N^3 - N) over tied blocks of size t when
tie_correct (scanpy's default leaves T = 1); a NaN z is reported as 0; p is
two-sided from the normal distribution."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression import dense_layout, sparse_layout
from skyhook.expression.label_codes import Groups, group_key, group_sizes
from skyhook.expression.selection import gene_filter
from skyhook.expression.stored_matrix import StoredMatrix
from skyhook.plan.expressions import conjunction

WILCOXON = "wilcoxon"
#: Counts per block of genes the client holds at once (about 100 bytes each, ranking included).
ENTRIES_PER_BLOCK = 1 << 21


@dataclass
class ValueCounts:
    """Entry i: count[i] selected cells of group row[i] hold value[i] in gene
    column[i] (a column of the block); entries may repeat a (row, column, value)."""

    row: np.ndarray
    column: np.ndarray
    value: np.ndarray
    count: np.ndarray

    def only(self, rows: list[int]) -> ValueCounts:
        keep = np.isin(self.row, rows)
        return ValueCounts(self.row[keep], self.column[keep], self.value[keep], self.count[keep])


@dataclass
class Side:
    """One side of a test, per gene: its cells, their mean, and those with a non-zero value (None: not counted)."""

    n: np.ndarray
    mean: np.ndarray
    nonzero: np.ndarray | None = None


@dataclass
class RankTest:
    z: np.ndarray
    p: np.ndarray
    group: Side
    reference: Side


def groups_of(matrix: StoredMatrix, groupby: str, cells: pc.Expression | None, options: AggregateKeywords) -> Groups:
    return group_sizes(matrix.obs_dataset, groupby, cells, options, matrix.last_stats)


def wilcoxon(
    matrix: StoredMatrix,
    groupby: str,
    groups: Groups,
    tested: list[int],
    reference: int | None,
    genes: np.ndarray,
    cells: pc.Expression | None,
    tie_correct: bool,
    options: AggregateKeywords,
) -> dict[int, RankTest]:
    """Each tested group row against reference (a row, or None: every other
    selected cell), on genes (positions)."""
    results = {row: _unfilled(len(genes)) for row in tested}
    for block, counts in _blocks(matrix, groupby, groups, genes, cells, options):
        width = block.stop - block.start
        sums = _sums(counts, len(groups.labels), width)
        nonzero = _sums(counts, len(groups.labels), width, expressing=True)
        everyone = _ranked(counts, len(groups.labels), width) if reference is None else None
        for row in tested:
            sides = [row] if reference is None else [row, reference]
            rank_sum, ties = (
                everyone if everyone is not None else _ranked(counts.only(sides), len(groups.labels), width)
            )
            n1 = groups.sizes[row]
            n2 = groups.sizes.sum() - n1 if reference is None else groups.sizes[reference]
            other_sum, other_nonzero = (
                (sums.sum(axis=0) - sums[row], nonzero.sum(axis=0) - nonzero[row])
                if reference is None
                else (sums[reference], nonzero[reference])
            )
            test = results[row]
            test.z[block], test.p[block] = _z(rank_sum[row], ties, n1, n2, tie_correct)
            test.group.n[block], test.group.mean[block], test.group.nonzero[block] = n1, sums[row] / n1, nonzero[row]
            test.reference.n[block], test.reference.mean[block] = n2, other_sum / n2
            test.reference.nonzero[block] = other_nonzero
    return results


def _unfilled(genes: int) -> RankTest:
    return RankTest(
        np.zeros(genes), np.ones(genes), *(Side(np.zeros(genes), np.zeros(genes), np.zeros(genes)) for _ in range(2))
    )


def _z(
    rank_sum: np.ndarray, ties: np.ndarray, n1: float, n2: float, tie_correct: bool
) -> tuple[np.ndarray, np.ndarray]:
    from scipy.special import ndtr

    n = n1 + n2
    correction = 1.0 - ties / (n**3 - n) if tie_correct and n > 1 else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (rank_sum - n1 * (n + 1) / 2.0) / np.sqrt(correction * n1 * n2 * (n + 1) / 12.0)
    z = np.where(np.isnan(z), 0.0, z)
    return z, 2 * ndtr(-np.abs(z))


def _ranked(counts: ValueCounts, groups: int, genes: int) -> tuple[np.ndarray, np.ndarray]:
    """(rank sums per group row and gene, sum of t^3 - t over each gene's tied
    blocks), the values of each gene ranked together, ties at their average rank."""
    order = np.lexsort((counts.value, counts.column))
    column, value, count, row = (part[order] for part in (counts.column, counts.value, counts.count, counts.row))
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (column[1:] != column[:-1]) | (value[1:] != value[:-1])
    segment = np.cumsum(starts) - 1
    tied = np.bincount(segment, weights=count)
    segment_gene = column[starts]
    below = np.cumsum(tied) - tied
    first_of_gene = np.ones(len(tied), dtype=bool)
    first_of_gene[1:] = segment_gene[1:] != segment_gene[:-1]
    below -= np.maximum.accumulate(np.where(first_of_gene, below, 0.0))
    average_rank = below + (tied + 1.0) / 2.0
    rank_sum = np.bincount(row * genes + column, weights=count * average_rank[segment], minlength=groups * genes)
    ties = np.bincount(segment_gene, weights=tied**3 - tied, minlength=genes)
    return rank_sum.reshape(groups, genes), ties


def _sums(counts: ValueCounts, groups: int, genes: int, expressing: bool = False) -> np.ndarray:
    """Per group row and gene: the sum of the values (for the means), or with
    expressing the cells whose value is not zero."""
    weights = counts.count * (counts.value != 0) if expressing else counts.count * counts.value
    return np.bincount(counts.row * genes + counts.column, weights=weights, minlength=groups * genes).reshape(
        groups, genes
    )


def _blocks(
    matrix: StoredMatrix,
    groupby: str,
    groups: Groups,
    genes: np.ndarray,
    cells: pc.Expression | None,
    options: AggregateKeywords,
) -> Iterator[tuple[slice, ValueCounts]]:
    """(the block's positions in genes, its value counts), block by block."""
    reader = _Reader(matrix, group_key(matrix.values.schema, groupby), groups, cells, options)
    cells_total = max(float(groups.sizes.sum()), 1.0)
    if matrix.layout == sparse_layout.NAME:
        # Entries per gene: its non-zero values (the stored share of the cells, on average) and a zero per group;
        # then the most a block's genes had so far (selected genes may be far denser than the average).
        stored_share = matrix.values.count_rows() / max(matrix.shape[0] * matrix.shape[1], 1)
        per_gene, read, most = cells_total * stored_share + len(groups.labels), reader.sparse, len(genes)
    else:
        per_gene, read, most = cells_total, reader.dense, dense_layout.GENES_PER_BLOCK
    start = 0
    while start < len(genes):
        block = slice(start, min(start + max(1, min(int(ENTRIES_PER_BLOCK // per_gene), most)), len(genes)))
        counts = read(genes[block])
        per_gene = max(per_gene, len(counts.row) / (block.stop - block.start))
        yield block, counts
        start = block.stop


@dataclass
class _Reader:
    """Value counts of blocks of genes, by the group key's column (key)."""

    matrix: StoredMatrix
    key: str
    groups: Groups
    cells: pc.Expression | None
    options: AggregateKeywords

    def sparse(self, genes: np.ndarray) -> ValueCounts:
        values, groups = self.matrix.values, self.groups
        counted = values.group_by([self.key, "gene", "value"]).aggregate(
            [([], "count_all")],
            filter=conjunction(self.cells, gene_filter(genes, self.matrix.shape[1])),
            **self.options,
        )
        self.matrix.last_stats.append(values.last_aggregate.stats)
        column_of = np.full(self.matrix.shape[1], -1, dtype=np.int64)
        column_of[genes] = np.arange(len(genes))
        row = groups.rows(counted.column(self.key))
        column = column_of[counted.column("gene").to_numpy()]
        count = counted.column("count_all").to_numpy().astype(np.float64)
        # Each group's zeros: its cells less its non-zero values, one tied block per gene.
        nonzero = np.bincount(row * len(genes) + column, weights=count, minlength=len(groups.labels) * len(genes))
        zeros = np.repeat(groups.sizes, len(genes)) - nonzero
        where = np.flatnonzero(zeros > 0)
        return ValueCounts(
            np.concatenate([row, where // len(genes)]),
            np.concatenate([column, where % len(genes)]),
            np.concatenate([counted.column("value").to_numpy().astype(np.float64), np.zeros(len(where))]),
            np.concatenate([count, zeros[where]]),
        )

    def dense(self, genes: np.ndarray) -> ValueCounts:
        values = self.matrix.values
        layout = dense_layout.GeneBlocks.of(values, self.matrix.shape[1])
        parts = []
        for read in layout.reads(genes):
            columns = [self.key, *layout.keys(), *read.columns]
            table = values.to_table(columns=columns, filter=conjunction(self.cells, read.filter), **self.options)
            self.matrix.last_stats.append(values.last_scan.stats)
            row = self.groups.rows(table.column(self.key))
            parts += [
                (row[wanted], at[wanted], table.column(name).to_numpy()[wanted].astype(np.float64))
                for name, (wanted, at) in zip(read.columns, layout.targets(table, read.columns, genes))
            ]
        rows, at, value = (np.concatenate(part) for part in zip(*parts)) if parts else (np.zeros(0),) * 3
        return ValueCounts(rows.astype(np.int64), at.astype(np.int64), value, np.ones(len(value)))
