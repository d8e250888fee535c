"""Highly variable genes from storage's moments select what scanpy's
highly_variable_genes(flavor="cell_ranger") selects on the same matrix, and
their means, dispersions and normalised dispersions equal the same algorithm
run on float64 NumPy (scanpy's own numbers differ by up to ~1e-5 in the
normalised dispersions: its variance is E[x^2] - E[x]^2, which cancels)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scanpy as sc
from statsmodels.robust import mad

import skyhook.expression as ex
from skyhook.errors import InvalidRequestError
from skyhook.expression.synthetic import generate_anndata


def scanpy_genes(adata, **cutoff):
    return sc.pp.highly_variable_genes(adata, flavor="cell_ranger", inplace=False, **cutoff)


def exact(adata) -> pd.DataFrame:
    """Cell Ranger's dispersions as scanpy computes them, from float64 two-pass moments."""
    values = adata.X.toarray().astype(np.float64)
    mean, variance = values.mean(axis=0), values.var(axis=0, ddof=1)
    mean[mean == 0] = 1e-12
    frame = pd.DataFrame({"means": mean, "dispersions": variance / mean})
    edges = np.r_[-np.inf, np.percentile(mean, np.arange(10, 105, 5)), np.inf]
    frame["bin"] = pd.cut(frame["means"], edges)
    stats = frame.groupby("bin", observed=True)["dispersions"].agg(avg="median", dev=mad).loc[frame["bin"]]
    frame["dispersions_norm"] = (frame["dispersions"].to_numpy() - stats["avg"].to_numpy()) / stats["dev"].to_numpy()
    return frame


def assert_selects(result, expected: pd.DataFrame, oracle: pd.DataFrame, genes: int) -> None:
    """scanpy's selection (expected), some genes but not all; the oracle's numbers to 1e-9, scanpy's to 1e-4."""
    assert result.column("highly_variable").to_pylist() == expected["highly_variable"].tolist()
    assert 0 < sum(result.column("highly_variable").to_pylist()) < genes
    for name in ("means", "dispersions", "dispersions_norm"):
        np.testing.assert_allclose(result.column(name).to_numpy(), oracle[name].to_numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(result.column(name).to_numpy(), expected[name].to_numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", ["sparse", "dense"])
@pytest.mark.parametrize("cutoff", [{"n_top_genes": 25}, {}, {"min_mean": 0.05, "max_mean": 2.0, "min_disp": 0.2}])
def test_selection_equals_scanpy(store, layout, cutoff):
    adata = generate_anndata(400, 120, groups=4, seed=21)
    ex.write_matrix(store, "m", adata, layout=layout)
    matrix = ex.open_matrix(store, "m")
    result = matrix.highly_variable_genes(**cutoff)
    expected = scanpy_genes(adata, **cutoff)
    assert result.column("gene").to_pylist() == list(adata.var_names)
    assert_selects(result, expected, exact(adata), adata.n_vars)


def test_cells_and_genes_narrow_the_input(store):
    adata = generate_anndata(400, 160, groups=4, seed=22)
    ex.write_matrix(store, "m", adata)
    matrix = ex.open_matrix(store, "m")
    chosen = adata.obs["batch"].to_numpy() == "a"
    genes = list(adata.var_names[20:140])  # 6 a bin: fewer make ties of +-1 MAD that rounding orders
    result = matrix.highly_variable_genes(n_top_genes=20, genes=genes, cells="batch == 'a'")
    expected = scanpy_genes(adata[chosen, genes].copy(), n_top_genes=20)
    assert result.column("gene").to_pylist() == genes
    assert result.column("highly_variable").to_pylist() == expected["highly_variable"].tolist()


def test_mistakes_are_clear_errors(store):
    ex.write_matrix(store, "m", generate_anndata(50, 12, groups=2, seed=1))
    matrix = ex.open_matrix(store, "m")
    for wrong in (0, -3, 2.5, True):
        with pytest.raises(InvalidRequestError, match="n_top_genes"):
            matrix.highly_variable_genes(n_top_genes=wrong)
    with pytest.raises(InvalidRequestError, match="at least 2 selected cells"):
        matrix.highly_variable_genes(cells="percent_mito < -1")


def seurat_exact(adata) -> pd.DataFrame:
    """scanpy's Seurat dispersions from float64 two-pass moments of expm1(X)."""
    values = np.expm1(adata.X.toarray().astype(np.float64))
    mean, variance = values.mean(axis=0), values.var(axis=0, ddof=1)
    mean[mean == 0] = 1e-12
    with np.errstate(divide="ignore"):
        dispersion = variance / mean
        dispersion[dispersion == 0] = np.nan
        frame = pd.DataFrame({"means": np.log1p(mean), "dispersions": np.log(dispersion)})
    frame["bin"] = pd.cut(frame["means"], bins=20)
    stats = frame.groupby("bin", observed=True)["dispersions"].agg(avg="mean", dev="std")
    alone = stats["dev"].isnull()
    stats.loc[alone, "dev"], stats.loc[alone, "avg"] = stats.loc[alone, "avg"], 0.0
    stats = stats.loc[frame["bin"]]
    frame["dispersions_norm"] = (frame["dispersions"].to_numpy() - stats["avg"].to_numpy()) / stats["dev"].to_numpy()
    return frame


@pytest.mark.parametrize("layout", ["sparse", "dense"])
@pytest.mark.parametrize("cutoff", [{"n_top_genes": 25}, {}])
def test_the_seurat_flavour_equals_scanpy(store, layout, cutoff):
    adata = generate_anndata(400, 120, groups=4, seed=23)
    adata.X[:, 7] = 0.0  # a gene never expressed: its dispersion is NaN
    ex.write_matrix(store, "m", adata, layout=layout)
    matrix = ex.open_matrix(store, "m")
    result = matrix.highly_variable_genes(flavor="seurat", pushdown=True, **cutoff)
    assert all(stats.aggregate_in_storage for stats in matrix.last_stats)  # the exponentials too
    expected = sc.pp.highly_variable_genes(adata, flavor="seurat", inplace=False, **cutoff)
    assert_selects(result, expected, seurat_exact(adata), adata.n_vars)
    with pytest.raises(InvalidRequestError, match="unknown flavor 'seurat_v3'"):
        matrix.highly_variable_genes(flavor="seurat_v3")
