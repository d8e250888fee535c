"""t-tests and group statistics of stored expression matrices against SciPy
on float64 NumPy copies of the same values (1e-9 relative), on both backends
and both layouts: pbmc68k_reduced (.raw by bulk_labels, shipped with scanpy)
and a generated negative-binomial matrix with unlabelled cells, an all-zero
and a constant gene. The statistics must be computed in storage."""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse
import scipy.stats as st

import skyhook.expression as ex
from skyhook.expression.synthetic import generate_anndata
from support.expression import assert_ttest_matches, dense64, labels_of, pbmc

LAYOUTS = ["sparse", "dense"]
METHODS = ["welch", "student", "overestim_var"]
# The dense layout plans three measures per gene: its pbmc tests take a gene subset.
DENSE_GENES = 120


@functools.lru_cache(maxsize=1)
def generated():
    adata = generate_anndata(400, 30, groups=5, seed=7, dtype=np.float64, unlabelled=0.1)
    x = adata.X.toarray()
    x[:, 0] = 0.0  # a gene never expressed
    x[:, 1] = 1.5  # a gene the same in every cell
    adata.X = scipy.sparse.csr_matrix(x)
    return adata


@pytest.fixture(scope="module")
def matrices(module_store):
    written = {}
    for layout in LAYOUTS:
        ex.write_matrix(module_store, f"pbmc_{layout}", pbmc(), layout=layout, metadata={"study": "pbmc68k"})
        ex.write_matrix(module_store, f"nb_{layout}", generated(), layout=layout, domain="synthetic")
        written[layout] = (
            ex.open_matrix(module_store, f"pbmc_{layout}"),
            ex.open_matrix(module_store, f"nb_{layout}", "synthetic"),
        )
    return written


def _in_storage(matrix: ex.Matrix) -> None:
    assert matrix.last_stats and all(stats.aggregate_in_storage for stats in matrix.last_stats)
    assert all(stats.objects_at_client == 0 for stats in matrix.last_stats)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("method", METHODS)
def test_pbmc_one_vs_rest_equals_scipy(matrices, layout, method):
    matrix = matrices[layout][0]
    adata = pbmc()
    names = list(adata.raw.var_names)
    genes = None if layout == "sparse" else names[:DENSE_GENES]
    result = matrix.ttest("bulk_labels", method=method, genes=genes, pushdown=True)
    _in_storage(matrix)
    x, labels = dense64(adata), labels_of(adata, "bulk_labels")
    chosen = names if genes is None else genes
    columns = [names.index(name) for name in chosen]
    for group in sorted(set(labels)):
        assert_ttest_matches(
            result, group, chosen, x[labels == group][:, columns], x[labels != group][:, columns], method
        )
    assert result.schema.metadata[b"skyhook.expression.metadata"] == b'{"study": "pbmc68k"}'
    assert result.num_rows == len(set(labels)) * len(chosen)


def test_pbmc_agrees_with_scanpy(matrices, backend):
    import scanpy as sc

    if backend != "embedded":
        pytest.skip("scanpy is compared once; the SciPy oracle runs on every backend")

    adata = pbmc().copy()
    sc.tl.rank_genes_groups(adata, "bulk_labels", method="t-test", use_raw=True)
    ranked = adata.uns["rank_genes_groups"]
    result = matrices["sparse"][0].ttest("bulk_labels").to_pandas()
    for group in ranked["names"].dtype.names:
        mine = result[result.group == group].set_index("gene")
        names = list(ranked["names"][group])
        # scanpy squares float32 values in float32 and stores scores as float32.
        np.testing.assert_allclose(mine.loc[names, "t"], ranked["scores"][group], rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(
            mine.loc[names, "log2_fold_change"], ranked["logfoldchanges"][group], rtol=1e-3, atol=1e-3
        )
        np.testing.assert_allclose(mine.loc[names, "p_adj"], ranked["pvals_adj"][group], rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("method", METHODS)
def test_generated_one_vs_rest_includes_unlabelled_cells(matrices, layout, method):
    matrix = matrices[layout][1]
    adata = generated()
    result = matrix.ttest("group", method=method, pushdown=True)
    _in_storage(matrix)
    x, labels = dense64(adata, use_raw=False), labels_of(adata, "group")
    assert (labels == None).any()  # noqa: E711 (an object array)
    names = list(adata.var_names)
    for group in sorted(label for label in set(labels) if label is not None):
        assert_ttest_matches(result, group, names, x[labels == group], x[labels != group], method)
    constant = result.filter(pa.compute.is_in(result["gene"], pa.array(["gene0", "gene1"]))).to_pandas()
    assert (constant.t == 0).all() and (constant.p == 1).all()  # scanpy's convention for 0 / 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reference_group_groups_cells_and_genes(matrices, layout):
    matrix = matrices[layout][1]
    adata = generated()
    x, labels = dense64(adata, use_raw=False), labels_of(adata, "group")
    genes = ["gene3", "gene4", "gene9", "gene20", "gene21", "gene22"]
    columns = [int(name[4:]) for name in genes]
    cells = "percent_mito < 0.05 and batch == 'a'"
    selected = (adata.obs.percent_mito.to_numpy() < 0.05) & (adata.obs.batch.to_numpy() == "a")
    result = matrix.ttest(
        "group",
        method="student",
        reference="group0",
        groups=["group2", "group3"],
        genes=genes,
        cells=cells,
        pushdown=True,
    )
    _in_storage(matrix)
    assert set(result["group"].to_pylist()) == {"group2", "group3"}
    reference = x[selected & (labels == "group0")][:, columns]
    for group in ["group2", "group3"]:
        assert_ttest_matches(result, group, genes, x[selected & (labels == group)][:, columns], reference, "student")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_var_filter_selects_genes_and_bh_and_fold_change(matrices, layout):
    matrix = matrices[layout][1]
    adata = generated()
    x, labels = dense64(adata, use_raw=False), labels_of(adata, "group")
    result = matrix.ttest("group", genes="highly_variable", groups=["group1"], pushdown=True).to_pandas()
    chosen = list(adata.var_names[adata.var.highly_variable.to_numpy()])
    assert sorted(result.gene) == sorted(chosen)
    frame = result.set_index("gene").loc[chosen]
    np.testing.assert_allclose(frame.p_adj, st.false_discovery_control(frame.p.to_numpy(), method="bh"), rtol=1e-12)
    columns = [int(name[4:]) for name in chosen]
    a, b = x[labels == "group1"][:, columns], x[labels != "group1"][:, columns]
    expected = np.log2((np.expm1(a.mean(0)) + 1e-9) / (np.expm1(b.mean(0)) + 1e-9))
    np.testing.assert_allclose(frame.log2_fold_change, expected, rtol=1e-9, atol=1e-12)


def test_layouts_give_identical_group_stats(matrices):
    adata = generated()
    x, labels = dense64(adata, use_raw=False), labels_of(adata, "group")
    tables = [matrices[layout][1].group_stats("group", cells="batch == 'b'", pushdown=True) for layout in LAYOUTS]
    sparse, dense = (table.to_pandas() for table in tables)
    np.testing.assert_allclose(
        sparse[["n", "mean", "variance"]], dense[["n", "mean", "variance"]], rtol=1e-12, atol=1e-15
    )
    in_b = adata.obs.batch.to_numpy() == "b"
    row = sparse[(sparse.group == "group2") & (sparse.gene == "gene5")].iloc[0]
    values = x[in_b & (labels == "group2"), 5]
    assert row.n == len(values)
    assert abs(row["mean"] - values.mean()) <= 1e-12 * abs(values.mean())
    assert abs(row.variance - values.var(ddof=1)) <= 1e-10 * values.var(ddof=1)
    assert sparse.group.isna().any()  # the unlabelled cells are a group of their own


@pytest.mark.parametrize("layout", LAYOUTS)
def test_two_matrices_one_domain(module_store, matrices, layout):
    adata = generated()
    x = dense64(adata, use_raw=False)
    first, second = adata[:150].copy(), adata[150:].copy()
    ex.write_matrix(module_store, f"first_{layout}", first, domain="synthetic", layout=layout, mode="overwrite")
    ex.write_matrix(module_store, f"second_{layout}", second, domain="synthetic", layout=layout, mode="overwrite")
    a = ex.open_matrix(module_store, f"first_{layout}", "synthetic")
    b = ex.open_matrix(module_store, f"second_{layout}", "synthetic")
    result = ex.ttest_between(
        a, b, cells="batch == 'a'", other_cells="group == 'group1'", method="welch", pushdown=True
    )
    chosen_a = x[:150][first.obs.batch.to_numpy() == "a"]
    chosen_b = x[150:][second.obs.group.astype(object).to_numpy() == "group1"]
    assert_ttest_matches(result, a.name, list(adata.var_names[2:]), chosen_a[:, 2:], chosen_b[:, 2:], "welch")
    other = ex.open_matrix(module_store, f"pbmc_{layout}")
    with pytest.raises(skyhook_errors().InvalidRequestError, match="only matrices of one domain"):
        ex.ttest_between(a, other)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_to_anndata_slice(matrices, layout):
    matrix = matrices[layout][0]
    adata = pbmc()
    genes = ["HES4", "CD3D", "LYZ"]
    sliced = matrix.to_anndata(genes=genes, cells="bulk_labels == 'CD14+ Monocyte'")
    chosen = (adata.obs.bulk_labels == "CD14+ Monocyte").to_numpy()
    expected = adata.raw[chosen, genes].X
    got = sliced.X.toarray() if hasattr(sliced.X, "toarray") else sliced.X
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected.toarray())
    assert list(sliced.obs_names) == list(adata.obs_names[chosen])
    assert list(sliced.var_names) == genes
    assert sliced.uns["skyhook"]["metadata"] == {"study": "pbmc68k"}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bad_requests(matrices, layout):
    matrix = matrices[layout][1]
    with pytest.raises(skyhook_errors().UnknownColumnError, match="no cell metadata column 'cluster'"):
        matrix.ttest("cluster")
    adata = generated()
    lowest = adata.obs.percent_mito[adata.obs.group == "group4"].min()  # the one cell of group4 left
    with pytest.raises(ex.GroupError, match="group 'group4' has 1 selected cell: a t-test needs at least 2"):
        matrix.ttest("group", groups=["group4"], cells=f"percent_mito <= {float(lowest)!r}")
    with pytest.raises(ex.GroupError, match="no selected cells"):
        matrix.ttest("group", groups=["nonesuch"])
    with pytest.raises(ex.UnknownGeneError, match="'GAPDHX' is not in the matrix"):
        matrix.ttest("group", genes=["gene2", "GAPDHX"])
    with pytest.raises(skyhook_errors().InvalidRequestError, match="unknown method"):
        matrix.ttest("group", method="mann-whitney")
    with pytest.raises(ex.MatrixNotFoundError, match="in domain 'synthetic'"):
        ex.open_matrix(matrix.store, "nb_sparse", domain="default")


def skyhook_errors():
    import skyhook.errors

    return skyhook.errors
