"""Per (group, gene) moments, the partial statistics a t-test needs: count,
mean and M2 (the sum of squared deviations from the mean), all float64.

Groups merge with Chan's formula around the merged mean (no sum-of-squares
cancellation), so "the rest" of a one-vs-rest test is the exact merge of every
other group, and zeros a sparse layout leaves out fold back in as a block of
(count, mean 0, M2 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class Moments:
    #: Group labels (None: cells without a label), one row each.
    groups: list[Any]
    #: Gene positions in the matrix, one column each.
    genes: np.ndarray
    count: np.ndarray  # (groups, genes)
    mean: np.ndarray
    m2: np.ndarray
    #: Cells with a non-zero value (None: not counted).
    nonzero: np.ndarray | None = None

    def row(self, group: Any) -> int:
        return self.groups.index(group)

    def variance(self, ddof: int = 1) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > ddof, self.m2 / (self.count - ddof), np.nan)

    def merged(self, rows: list[int]) -> Moments:
        """The moments of the union of the groups in rows (one group, no label)."""
        count, mean, m2 = _chan(self.count[rows], self.mean[rows], self.m2[rows])
        nonzero = None if self.nonzero is None else self.nonzero[rows].sum(axis=0)[None]
        return Moments([None], self.genes, count[None], mean[None], m2[None], nonzero)


def combined(parts: list[Moments]) -> Moments:
    """The moments of the same groups and genes over the cells of every part
    (parts of disjoint cells: a matrix's objects, or groups of them)."""
    first = parts[0]
    count, mean, m2 = _chan(*(np.stack([getattr(part, name) for part in parts]) for name in ("count", "mean", "m2")))
    nonzero = None if first.nonzero is None else np.sum([part.nonzero for part in parts], axis=0)
    return Moments(first.groups, first.genes, count, mean, m2, nonzero)


def _chan(count: np.ndarray, mean: np.ndarray, m2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chan's merge of the moments along the first axis: the count, the mean
    and M2 around the merged mean (no sum-of-squares cancellation)."""
    total = count.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        merged_mean = np.where(total > 0, (count * mean).sum(axis=0) / total, 0.0)
    spread = (count * (mean - merged_mean) ** 2).sum(axis=0)
    return total, merged_mean, m2.sum(axis=0) + spread


def measured(column: str, expm1_scale: float | None) -> pc.Expression:
    """What moments are taken of: the column's values, or expm1 of them in a
    log1p base (value x expm1_scale, the base's natural log): the counts
    scale scanpy's Seurat flavour works on. Storage runs exp; zeros stay zeros."""
    if expm1_scale is None:
        return pc.field(column)
    return pc.exp(pc.multiply(pc.field(column).cast(pa.float64(), safe=False), expm1_scale)) - 1.0


def with_zeros(groups: list[Any], genes: np.ndarray, sizes: np.ndarray, nonzero: Moments) -> Moments:
    """Moments over every cell from those over the non-zero values: each group
    of sizes[g] cells has sizes[g] - count zeros (Chan's merge with a block of
    mean 0 and M2 0)."""
    n = sizes.astype(np.float64)[:, None]
    k = nonzero.count
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, k * nonzero.mean / n, 0.0)
        m2 = nonzero.m2 + np.where(n > 0, k * (n - k) / n, 0.0) * nonzero.mean**2
    return Moments(groups, genes, np.broadcast_to(n, k.shape).copy(), mean, m2, k)
