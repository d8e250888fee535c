"""Wilcoxon rank-sum tests of stored matrices against SciPy (ranksums without
tie correction, mannwhitneyu's normal approximation with it) within 1e-9,
and against scanpy's own "wilcoxon", on both backends and both layouts:
pbmc68k_reduced's log-normalised .raw and a generated matrix of raw counts
(ties everywhere, zeros, unlabelled cells, an all-zero and a constant gene).
On the sparse layout only value counts cross, computed in storage."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import scanpy as sc
import scipy.sparse
import scipy.stats as st

import skyhook.expression as ex
from skyhook.errors import InvalidRequestError
from skyhook.expression import rank_sums
from support.expression import dense64, labels_of, pbmc

LAYOUTS = ["sparse", "dense"]
ABSOLUTE = 1e-9
# The counts matrix is raw counts on purpose (ties): its input warning is tested elsewhere.
pytestmark = pytest.mark.filterwarnings("ignore::skyhook.expression.ExpressionInputWarning")


@functools.lru_cache(maxsize=1)
def counts():
    """Raw counts: 600 cells x 30 genes, 4 groups, about 10 % unlabelled."""
    rng = np.random.default_rng(21)
    label = rng.choice(4, size=600, p=[0.4, 0.3, 0.2, 0.1])
    mean = np.exp(rng.normal(-0.5, 1.0, 30))[None, :] * (1.0 + label[:, None] * (np.arange(30) % 3 == 0))
    x = rng.poisson(mean).astype(np.float32)
    x[:, 0] = 0.0  # never expressed
    x[:, 1] = 3.0  # the same in every cell
    import anndata
    import pandas as pd

    names = np.array([f"g{k}" for k in range(4)], dtype=object)[label]
    names[rng.random(600) < 0.1] = np.nan
    obs = pd.DataFrame(
        {"group": pd.Categorical(names, categories=[f"g{k}" for k in range(4)]), "depth": rng.uniform(0, 1, 600)},
        index=[f"c{i}" for i in range(600)],
    )
    var = pd.DataFrame(index=[f"gene{j}" for j in range(30)])
    return anndata.AnnData(scipy.sparse.csr_matrix(x), obs=obs, var=var)


@pytest.fixture(scope="module")
def matrices(module_store):
    written = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ex.ExpressionInputWarning)
        for layout in LAYOUTS:
            ex.write_matrix(module_store, f"pbmc_{layout}", pbmc(), layout=layout)
            ex.write_matrix(module_store, f"counts_{layout}", counts(), layout=layout)
            written[layout] = (
                ex.open_matrix(module_store, f"pbmc_{layout}"),
                ex.open_matrix(module_store, f"counts_{layout}"),
            )
    return written


def scipy_p(a: np.ndarray, b: np.ndarray, tie_correct: bool) -> np.ndarray:
    """Two-sided p of each column: SciPy's normal approximation (1 where undefined, as scanpy)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if tie_correct:
            p = st.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=False).pvalue
        else:
            p = st.ranksums(a, b).pvalue
    return np.where(np.isnan(p), 1.0, p)


def assert_matches(result, x, labels, genes, reference, tie_correct, cells=None):
    frame = result.to_pandas()
    keep = np.ones(len(labels), dtype=bool) if cells is None else cells
    for group in dict.fromkeys(frame.group):
        rows = frame[frame.group == group].set_index("gene").loc[genes]
        mine = keep & (labels == group)
        other = keep & ((labels != group) if reference == "rest" else (labels == reference))
        expected = scipy_p(x[mine], x[other], tie_correct)
        np.testing.assert_allclose(rows.p.to_numpy(), expected, rtol=0, atol=ABSOLUTE, err_msg=str(group))
        assert (rows.n_group == mine.sum()).all() and (rows.n_reference == other.sum()).all()
        np.testing.assert_allclose(rows.mean_group, x[mine].mean(axis=0), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tie_correct", [False, True])
@pytest.mark.parametrize("reference", ["rest", "CD14+ Monocyte"])
def test_pbmc_equals_scipy(matrices, layout, tie_correct, reference):
    matrix = matrices[layout][0]
    adata = pbmc()
    names = list(adata.raw.var_names)
    result = matrix.ttest("bulk_labels", method="wilcoxon", reference=reference, tie_correct=tie_correct)
    assert result.column_names[:5] == ["group", "reference", "gene", "z", "p"] and "df" not in result.column_names
    assert_matches(result, dense64(adata), labels_of(adata, "bulk_labels"), names, reference, tie_correct)
    if layout == "sparse":  # value counts, computed in storage
        assert all(stats.aggregate_in_storage and stats.objects_at_client == 0 for stats in matrix.last_stats)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("tie_correct", [False, True])
def test_counts_with_ties_and_zeros_equal_scipy(matrices, layout, tie_correct):
    matrix = matrices[layout][1]
    adata = counts()
    x, labels = dense64(adata, use_raw=False), labels_of(adata, "group")
    genes = list(adata.var_names)
    for reference in ("rest", "g0"):
        result = matrix.ttest("group", method="wilcoxon", reference=reference, tie_correct=tie_correct)
        assert_matches(result, x, labels, genes, reference, tie_correct)
    depth = adata.obs.depth.to_numpy()
    chosen = matrix.ttest(
        "group", method="wilcoxon", tie_correct=tie_correct, cells="depth < 0.5", genes=genes[::3], groups=["g1"]
    )
    columns = list(range(0, 30, 3))
    assert_matches(chosen, x[:, columns], labels, genes[::3], "rest", tie_correct, cells=depth < 0.5)


def test_blocks_of_genes_give_the_same_answer(matrices, monkeypatch):
    for matrix in matrices["sparse"][1], matrices["dense"][1]:
        whole = matrix.ttest("group", method="wilcoxon", tie_correct=True)
        monkeypatch.setattr(rank_sums, "ENTRIES_PER_BLOCK", 700)  # about one gene per block
        assert matrix.ttest("group", method="wilcoxon", tie_correct=True).equals(whole)
        monkeypatch.undo()


def test_counts_move_far_less_than_the_values(matrices):
    """Raw counts have few distinct values per gene: their counts are what crosses."""
    matrix = matrices["sparse"][1]
    matrix.ttest("group", method="wilcoxon")
    counted = sum(stats.partial_rows for stats in matrix.last_stats[1:])  # after the group sizes
    assert counted < matrix.values.count_rows() / 4, counted


def test_scores_equal_scanpys_wilcoxon(matrices):
    adata = pbmc()
    result = matrices["sparse"][0].ttest("bulk_labels", method="wilcoxon", tie_correct=True)
    theirs = sc.AnnData(adata.raw.X, obs=adata.obs, var=adata.raw.var)
    sc.tl.rank_genes_groups(theirs, "bulk_labels", method="wilcoxon", tie_correct=True, n_genes=theirs.n_vars)
    expected = sc.get.rank_genes_groups_df(theirs, group=None)
    expected = expected.assign(group=expected.group.astype(str), gene=expected.names.astype(str))
    merged = expected.merge(result.to_pandas(), on=["group", "gene"])
    assert len(merged) == len(expected) == result.num_rows
    np.testing.assert_allclose(merged.z, merged.scores, rtol=1e-6, atol=1e-6)  # scanpy keeps float32 scores
    np.testing.assert_allclose(merged.p, merged.pvals, rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(merged.log2_fold_change, merged.logfoldchanges, rtol=1e-5, atol=1e-5)
    ours = theirs.copy()
    ours.uns["rank_genes_groups"] = ex.rank_genes_groups(result, "bulk_labels", "wilcoxon")
    assert ours.uns["rank_genes_groups"]["params"] == theirs.uns["rank_genes_groups"]["params"]
    sc.pl.rank_genes_groups(ours, n_genes=3, show=False)


def test_wrong_requests(matrices):
    matrix = matrices["sparse"][1]
    with pytest.raises(ex.GroupError, match="the rest has 0 selected cells: a rank-sum test needs at least 1"):
        matrix.ttest("group", method="wilcoxon", groups=["g1"], cells="group == 'g1'")
    with pytest.raises(InvalidRequestError, match="expected welch, student, overestim_var or wilcoxon"):
        matrix.ttest("group", method="mann-whitney")
    with pytest.raises(InvalidRequestError, match="wilcoxon ranks the groups of one matrix"):
        ex.ttest_between(matrix, matrices["dense"][1], method="wilcoxon")
    with pytest.raises(InvalidRequestError, match="not a wilcoxon result"):
        ex.rank_genes_groups(matrix.ttest("group"), "group", "wilcoxon")
    with pytest.raises(InvalidRequestError, match="not a welch result"):
        ex.rank_genes_groups(matrix.ttest("group", method="wilcoxon"), "group", "welch")
