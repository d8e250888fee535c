"""Pseudobulk sums computed in storage equal pandas' group sums of the same
counts, exactly, on both layouts and backends."""

from __future__ import annotations

import anndata
import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import skyhook.expression as ex
from skyhook.errors import InvalidRequestError, UnknownColumnError
from skyhook.expression.errors import GroupError, UnknownGeneError


def counts(cells: int = 240, genes: int = 30, seed: int = 3) -> anndata.AnnData:
    """Raw counts (float32, mostly zeros, some large) with a categorical cell
    type (some unlabelled), a text sample and an integer donor."""
    rng = np.random.default_rng(seed)
    x = rng.negative_binomial(0.5, 0.2, (cells, genes)).astype(np.float32)
    x[rng.random((cells, genes)) < 0.6] = 0
    x[:40, 0] = 2**23 + 1  # their sums pass float32's exact integers (2^24)
    types = np.array(["T", "B", "NK"], dtype=object)[rng.integers(0, 3, cells)]
    types[rng.random(cells) < 0.1] = np.nan
    obs = pd.DataFrame(
        {
            "cell_type": pd.Categorical(types, categories=["T", "B", "NK"]),
            "sample": rng.choice(["s2", "s10", "s1"], cells),
            "donor": rng.integers(1, 4, cells).astype(np.int64),
        },
        index=[f"c{i}" for i in range(cells)],
    )
    var = pd.DataFrame({"marker": rng.random(genes) < 0.3}, index=[f"g{j}" for j in range(genes)])
    return anndata.AnnData(scipy.sparse.csr_matrix(x), obs=obs, var=var)


def expected(adata: anndata.AnnData, by: list[str], cells: np.ndarray | None = None) -> pd.DataFrame:
    """pandas' sums per combination and gene, float64, as a long table keyed by (labels..., gene)."""
    keep = np.ones(adata.n_obs, bool) if cells is None else cells
    values = pd.DataFrame(adata.X.toarray()[keep].astype(np.float64), columns=adata.var_names)
    keys = adata.obs.loc[keep, by].reset_index(drop=True)
    keys = keys.astype({key: object for key in by if isinstance(keys[key].dtype, pd.CategoricalDtype)})
    sums = pd.concat([keys, values], axis=1).groupby(by, dropna=False).sum()
    long = sums.stack().rename("sum").reset_index().rename(columns={f"level_{len(by)}": "gene"})
    sizes = keys.groupby(by, dropna=False).size().rename("n_cells").reset_index()
    return long.merge(sizes, on=by)


def as_frame(table) -> pd.DataFrame:
    return table.to_pandas()


@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_sums_per_combination_equal_pandas_exactly(store, layout):
    adata = counts()
    ex.write_matrix(store, "m", adata, layout=layout)
    matrix = ex.open_matrix(store, "m")
    result = matrix.pseudobulk(["sample", "cell_type", "donor"])
    assert result.num_rows == len(expected(adata, ["sample", "cell_type", "donor"]))
    oracle = expected(adata, ["sample", "cell_type", "donor"])
    merged = as_frame(result).merge(oracle, on=["sample", "cell_type", "donor", "gene"], suffixes=("", "_pandas"))
    assert len(merged) == len(oracle)  # every combination and gene, nulls matched as labels
    assert (merged["sum"] == merged["sum_pandas"]).all()
    assert (merged["n_cells"] == merged["n_cells_pandas"]).all()
    assert result.column("sum").to_numpy().max() > 2**24  # past float32's exact integers
    assert len(matrix.last_stats) >= 2  # the cell count and the sums


def test_combinations_come_in_category_order_unlabelled_last(store):
    adata = counts()
    ex.write_matrix(store, "m", adata)
    result = ex.open_matrix(store, "m").pseudobulk("cell_type", genes=["g3"])
    assert result.column("cell_type").to_pylist() == ["T", "B", "NK", None]
    assert result.column("gene").to_pylist() == ["g3"] * 4


@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_cells_and_genes_select_what_is_summed(store, layout):
    adata = counts()
    ex.write_matrix(store, "m", adata, layout=layout)
    matrix = ex.open_matrix(store, "m")
    result = matrix.pseudobulk("sample", genes="marker", cells="donor >= 2")
    chosen = adata.obs["donor"].to_numpy() >= 2
    markers = set(adata.var_names[adata.var["marker"].to_numpy()])
    oracle = expected(adata, ["sample"], chosen)
    oracle = oracle[oracle["gene"].isin(markers)]
    merged = as_frame(result).merge(oracle, on=["sample", "gene"], suffixes=("", "_pandas"))
    assert len(merged) == len(oracle) == result.num_rows
    assert (merged["sum"] == merged["sum_pandas"]).all()
    assert (merged["n_cells"] == merged["n_cells_pandas"]).all()


def test_mistakes_are_clear_errors(store):
    ex.write_matrix(store, "m", counts())
    matrix = ex.open_matrix(store, "m")
    with pytest.raises(UnknownColumnError, match="no cell metadata column 'tissue'"):
        matrix.pseudobulk(["sample", "tissue"])
    with pytest.raises(GroupError, match="no cell is selected"):
        matrix.pseudobulk("sample", cells="donor > 100")
    with pytest.raises(UnknownGeneError):
        matrix.pseudobulk("sample", genes=["nope"])
    with pytest.raises(InvalidRequestError, match="distinct cell metadata columns"):
        matrix.pseudobulk(["sample", "sample"])
