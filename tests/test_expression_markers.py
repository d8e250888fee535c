"""Fractions of expressing cells (scanpy's pts) and marker-gene filters
(scanpy's filter_rank_genes_groups) against scanpy itself on pbmc68k_reduced,
both layouts, t-tests and Wilcoxon: the same fractions and the same genes kept.
The dense layout counts non-zero values in storage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scanpy as sc

import skyhook.expression as ex
from skyhook.errors import InvalidRequestError
from support.expression import dense64, labels_of, pbmc

LAYOUTS = ["sparse", "dense"]
METHODS = [("welch", "t-test"), ("wilcoxon", "wilcoxon")]


@pytest.fixture(scope="module")
def matrices(module_store):
    for layout in LAYOUTS:
        ex.write_matrix(module_store, f"pbmc_{layout}", pbmc(), layout=layout)
    return {layout: ex.open_matrix(module_store, f"pbmc_{layout}") for layout in LAYOUTS}


@pytest.fixture(scope="module")
def scanpy_results():
    adata = pbmc()
    results = {}
    for method, scanpy_method in METHODS:
        theirs = sc.AnnData(adata.raw.X, obs=adata.obs, var=adata.raw.var)
        sc.tl.rank_genes_groups(theirs, "bulk_labels", method=scanpy_method, pts=True, n_genes=theirs.n_vars)
        sc.tl.filter_rank_genes_groups(theirs, min_in_group_fraction=0.3, max_out_group_fraction=0.4)
        results[method] = theirs.uns
    return results


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("method", [method for method, _ in METHODS])
def test_fractions_and_filters_equal_scanpys(matrices, scanpy_results, layout, method):
    matrix, uns = matrices[layout], scanpy_results[method]
    result = matrix.ttest("bulk_labels", method=method, pts=True, pushdown=True)
    if layout == "dense" and method == "welch":  # non-zero values counted in storage
        assert all(stats.aggregate_in_storage for stats in matrix.last_stats)
    frame = result.to_pandas()
    pts, rest = uns["rank_genes_groups"]["pts"], uns["rank_genes_groups"]["pts_rest"]
    for column, expected in (("pts_group", pts), ("pts_reference", rest)):
        theirs = [expected.loc[gene, group] for gene, group in zip(frame.gene, frame.group)]
        np.testing.assert_allclose(frame[column], theirs, rtol=1e-12, err_msg=column)
    kept = ex.filter_rank_genes(result, min_in_group_fraction=0.3, max_out_group_fraction=0.4)
    names = pd.DataFrame(uns["rank_genes_groups_filtered"]["names"])
    expected = {(group, name) for group in names.columns for name in names[group] if isinstance(name, str)}
    assert set(zip(kept.column("group").to_pylist(), kept.column("gene").to_pylist())) == expected
    assert 0 < len(expected) < result.num_rows
    shaped = ex.rank_genes_groups(result, "bulk_labels", method)
    pd.testing.assert_frame_equal(shaped["pts"].loc[pts.index, pts.columns], pts, check_names=False)
    pd.testing.assert_frame_equal(shaped["pts_rest"].loc[rest.index, rest.columns], rest, check_names=False)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_against_a_reference_the_other_fraction_is_the_references(matrices, layout):
    adata = pbmc()
    x, labels = dense64(adata), labels_of(adata, "bulk_labels")
    result = matrices[layout].ttest("bulk_labels", reference="CD14+ Monocyte", groups=["CD19+ B"], pts=True)
    frame = result.to_pandas().set_index("gene").loc[list(adata.raw.var_names)]
    np.testing.assert_allclose(frame.pts_group, (x[labels == "CD19+ B"] != 0).mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(frame.pts_reference, (x[labels == "CD14+ Monocyte"] != 0).mean(axis=0), rtol=1e-12)
    assert "pts_rest" not in ex.rank_genes_groups(result, "bulk_labels")


def test_filters_need_the_fractions(matrices):
    plain = matrices["sparse"].ttest("bulk_labels", groups=["CD19+ B"])
    assert "pts_group" not in plain.column_names
    with pytest.raises(InvalidRequestError, match="pts=True"):
        ex.filter_rank_genes(plain)
