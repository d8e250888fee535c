"""Highly variable genes as scanpy's ``highly_variable_genes`` finds them,
in its two dispersion flavours. Each gene's mean and variance over the
selected cells come from storage (the moments every statistic here uses:
only they cross); its dispersion is variance over mean, normalised within
bins of genes of similar mean; then the genes of highest normalised
dispersion (n_top_genes), or those within the cutoffs, are chosen.

- "cell_ranger" (Zheng et al. 2017): moments of the values; bins between the
  means' 10th, 15th, ..., 100th percentiles; each bin's median and
  normal-scaled median absolute deviation.
- "seurat" (Satija et al. 2015, scanpy's default): moments of expm1 of the
  values (in the data's log1p base; storage computes the exponentials); the
  log of the dispersion and log1p of the mean; 20 equal-width bins of the
  means (pandas' cut); each bin's mean and standard deviation, a gene alone
  in its bin normalised to 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from scipy.stats import norm

from skyhook.errors import InvalidRequestError
from skyhook.expression.distributed_moments import MomentsKeywords
from skyhook.expression.selection import CellSelection, GeneSelection
from skyhook.expression.stored_matrix import StoredMatrix

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: statsmodels' (and scanpy's) MAD scale: the MAD of a standard normal.
_NORMAL_MAD = norm.ppf(0.75)


FLAVORS = ("cell_ranger", "seurat")


def highly_variable_genes(
    matrix: StoredMatrix,
    *,
    flavor: str = "cell_ranger",
    n_top_genes: int | None = None,
    n_bins: int = 20,
    min_mean: float = 0.0125,
    max_mean: float = 3.0,
    min_disp: float = 0.5,
    max_disp: float = np.inf,
    genes: GeneSelection = None,
    cells: CellSelection = None,
    **options: Unpack[MomentsKeywords],
) -> pa.Table:
    """A row per selected gene: gene, means, dispersions, dispersions_norm and
    highly_variable, as scanpy's var columns. n_top_genes: that many genes of
    highest normalised dispersion; else those with min_mean < mean < max_mean
    and min_disp < normalised dispersion < max_disp (scanpy's defaults).
    n_bins: the Seurat flavour's bins of means."""
    if flavor not in FLAVORS:
        raise InvalidRequestError(f"unknown flavor {flavor!r}; expected cell_ranger or seurat")
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise InvalidRequestError(f"n_bins must be a number of bins >= 1, not {n_bins!r}")
    if n_top_genes is not None and (
        isinstance(n_top_genes, bool) or not isinstance(n_top_genes, (int, np.integer)) or n_top_genes < 1
    ):
        raise InvalidRequestError(f"n_top_genes must be a number of genes >= 1, not {n_top_genes!r}")
    base = matrix.entry.log1p_base
    scale = (1.0 if base is None else float(np.log(base))) if flavor == "seurat" else None
    moments = matrix.moments(None, genes, cells, expm1_scale=scale, **options)
    if moments.count[0, 0] < 2:
        raise InvalidRequestError("highly variable genes need at least 2 selected cells")
    mean = moments.mean[0].copy()
    variance = moments.variance(1)[0]
    mean[mean == 0] = 1e-12  # as scanpy
    with np.errstate(divide="ignore", invalid="ignore"):
        dispersion = variance / mean
        if flavor == "seurat":
            dispersion[dispersion == 0] = np.nan
            dispersion, mean = np.log(dispersion), np.log1p(mean)
    normalised = (
        _normalised(mean, dispersion) if flavor == "cell_ranger" else _seurat_normalised(mean, dispersion, n_bins)
    )
    if n_top_genes is not None:
        chosen = _top(normalised, n_top_genes)
    else:
        bounded = np.nan_to_num(normalised)
        chosen = (mean > min_mean) & (mean < max_mean) & (bounded > min_disp) & (bounded < max_disp)
    table = pa.table(
        {
            "gene": matrix.gene_names.take(pa.array(moments.genes)),
            "means": pa.array(mean),
            "dispersions": pa.array(dispersion),
            "dispersions_norm": pa.array(normalised),
            "highly_variable": pa.array(chosen),
        }
    )
    return matrix.with_metadata(table)


def _normalised(mean: np.ndarray, dispersion: np.ndarray) -> np.ndarray:
    """Each gene's dispersion less its mean bin's median, over the bin's MAD.
    Bins are right-closed intervals between the means' percentiles (pandas'
    cut, which scanpy uses)."""
    edges = np.r_[-np.inf, np.percentile(mean, np.arange(10, 105, 5)), np.inf]
    bins = np.searchsorted(edges, mean, side="left") - 1
    normalised = np.empty_like(dispersion)
    with np.errstate(invalid="ignore", divide="ignore"):
        for index in np.unique(bins):
            members = bins == index
            values = dispersion[members]
            center = np.median(values)
            spread = np.median(np.abs(values - center)) / _NORMAL_MAD
            normalised[members] = (values - center) / spread
    return normalised


def _seurat_normalised(mean: np.ndarray, dispersion: np.ndarray, bins: int) -> np.ndarray:
    """Each gene's dispersion less its bin's mean, over the bin's standard
    deviation; bins of equal width over the means (pandas' cut, as scanpy);
    a gene alone in its bin gets 1."""
    import pandas as pd

    frame = pd.DataFrame({"mean": mean, "dispersion": dispersion})
    frame["bin"] = pd.cut(frame["mean"], bins=bins)
    stats = frame.groupby("bin", observed=True)["dispersion"].agg(avg="mean", dev="std")
    alone = stats["dev"].isnull()
    stats.loc[alone, "dev"] = stats.loc[alone, "avg"]
    stats.loc[alone, "avg"] = 0.0
    per_gene = stats.loc[frame["bin"]].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        return (dispersion - per_gene[:, 0]) / per_gene[:, 1]


def _top(normalised: np.ndarray, count: int) -> np.ndarray:
    """The genes whose normalised dispersion is at least the count-th highest (NaN: never)."""
    known = np.sort(normalised[~np.isnan(normalised)])[::-1]
    if not len(known):
        return np.zeros(len(normalised), bool)
    cutoff = known[min(count, len(known)) - 1]
    return np.nan_to_num(normalised, nan=-np.inf) >= cutoff
