"""A skyhook t-test stored as scanpy stores its own: scanpy's plot and its
rank_genes_groups_df read it, and agree with scanpy's own t-test."""

from __future__ import annotations

import matplotlib
import numpy as np
import pyarrow as pa
import pytest
import scanpy as sc

import skyhook.expression as ex
from skyhook.errors import InvalidRequestError
from skyhook.expression.synthetic import generate_anndata

matplotlib.use("Agg")


@pytest.mark.parametrize(("method", "scanpy_method"), [("welch", "t-test"), ("overestim_var", "t-test_overestim_var")])
def test_scanpy_reads_and_draws_the_result_as_its_own(store, method, scanpy_method):
    adata = generate_anndata(300, 40, groups=3, seed=8)
    ex.write_matrix(store, "m", adata)
    result = ex.open_matrix(store, "m").ttest("group", method=method)
    ours = adata.copy()
    ours.uns["rank_genes_groups"] = ex.rank_genes_groups(result, "group", method)
    theirs = adata.copy()
    sc.tl.rank_genes_groups(theirs, "group", method=scanpy_method, use_raw=False)
    assert ours.uns["rank_genes_groups"]["params"] == theirs.uns["rank_genes_groups"]["params"]
    for name in ("names", "scores", "logfoldchanges", "pvals", "pvals_adj"):
        assert ours.uns["rank_genes_groups"][name].dtype == theirs.uns["rank_genes_groups"][name].dtype, name
    frame = sc.get.rank_genes_groups_df(ours, group=None)
    expected = sc.get.rank_genes_groups_df(theirs, group=None)
    merged = frame.merge(expected, on=["group", "names"], suffixes=("", "_scanpy"))
    assert len(merged) == len(frame) == len(expected) == 3 * 40
    np.testing.assert_allclose(merged["scores"], merged["scores_scanpy"], rtol=2e-4, atol=1e-4)
    np.testing.assert_allclose(merged["pvals"], merged["pvals_scanpy"], rtol=1e-3, atol=1e-12)
    for _, rows in frame.groupby("group", observed=True):
        assert (np.diff(rows["scores"].to_numpy()) <= 0).all()  # each group in its order of score
    sc.pl.rank_genes_groups(ours, n_genes=5, show=False)
    matplotlib.pyplot.close("all")


def test_a_result_of_one_reference_and_wrong_input(store):
    adata = generate_anndata(300, 20, groups=3, seed=9)
    ex.write_matrix(store, "m", adata)
    matrix = ex.open_matrix(store, "m")
    against = ex.rank_genes_groups(matrix.ttest("group", reference="group0"), "group")
    assert against["params"]["reference"] == "group0"
    assert against["names"].dtype.names == ("group1", "group2")
    with pytest.raises(InvalidRequestError, match="unknown method"):
        ex.rank_genes_groups(matrix.ttest("group"), "group", "mann-whitney")
    uneven = matrix.ttest("group", groups=["group1"]).slice(0, 5)
    both = matrix.ttest("group", groups=["group2"])
    with pytest.raises(InvalidRequestError, match="same genes"):
        ex.rank_genes_groups(pa.concat_tables([uneven, both]), "group")
