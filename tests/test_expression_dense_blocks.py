"""The dense layout in gene blocks: a wide matrix (a last block part empty)
answers as the sparse layout does, a gene selection reads only its blocks'
objects, the moments cross as partials per block (not per plan of genes),
and a matrix stored before blocks (a column per gene) still reads, equal."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import skyhook.expression as ex
from skyhook.expression import dense_layout
from skyhook.expression.synthetic import generate_anndata

GENES = 1050  # five full blocks of 200 and one of 50


@pytest.fixture(scope="module")
def source():
    return generate_anndata(300, GENES, groups=3, seed=31, unlabelled=0.05)


@pytest.fixture(scope="module")
def matrices(module_store, source):
    write = module_store.write_dataset
    # An object per block, as a matrix of many cells has (objects are sized in bytes).
    module_store.write_dataset = lambda name, data, **options: write(name, data, rows_per_object=300, **options)
    try:
        ex.write_matrix(module_store, "wide_dense", source, layout="dense")
    finally:
        del module_store.write_dataset
    ex.write_matrix(module_store, "wide_sparse", source, layout="sparse")
    return ex.open_matrix(module_store, "wide_dense"), ex.open_matrix(module_store, "wide_sparse")


def test_blocks_answer_as_the_sparse_layout(matrices):
    dense, sparse = matrices
    assert dense.values.schema.get_field_index(dense_layout.BLOCK) >= 0
    for method in ("welch", "wilcoxon"):
        order = [("group", "ascending"), ("gene", "ascending")]  # ranks may swap genes whose scores round apart
        got = dense.ttest("group", method=method, pts=True).sort_by(order)
        expected = sparse.ttest("group", method=method, pts=True).sort_by(order)
        assert got.column("gene").equals(expected.column("gene"))
        for name in ("p", "log2_fold_change", "pts_group", "mean_reference"):
            np.testing.assert_allclose(got.column(name).to_numpy(), expected.column(name).to_numpy(), rtol=1e-9)
    bulk = dense.pseudobulk("batch", genes=["gene0", "gene199", "gene200", "gene1049"])
    expected = sparse.pseudobulk("batch", genes=["gene0", "gene199", "gene200", "gene1049"])
    np.testing.assert_allclose(bulk.column("sum").to_numpy(), expected.column("sum").to_numpy(), rtol=1e-9)


def test_a_selection_reads_its_blocks_only(matrices, source):
    dense, _ = matrices
    genes = ["gene5", "gene1040"]  # blocks 0 and 5
    stats = dense.group_stats("group", genes=genes)
    aggregate = dense.last_stats[-1]
    assert aggregate.aggregate_in_storage and aggregate.objects_pruned == 4 and aggregate.objects_scanned == 2
    x = source[:, genes].X.toarray().astype(np.float64)
    labels = source.obs.group.astype(object).to_numpy()
    frame = stats.to_pandas()
    for group in ("group0", "group2"):
        rows = frame[frame.group == group].set_index("gene").loc[genes]
        np.testing.assert_allclose(rows["mean"], x[labels == group].mean(axis=0), rtol=1e-9)
    sliced = dense.to_anndata(genes=genes, cells="batch == 'a'")
    keep = (source.obs.batch == "a").to_numpy()
    np.testing.assert_array_equal(np.asarray(sliced.X), source[keep, genes].X.toarray())


def test_moments_cross_as_block_partials(matrices):
    """One aggregate, one call per object, a partial row per (group, block):
    before blocks, a plan per 200 genes called every object again."""
    dense, _ = matrices
    dense.moments("group")
    sizes, aggregate = dense.last_stats
    assert aggregate.objects_scanned == 6 and aggregate.partial_rows == 4 * 6  # 3 groups and the unlabelled


def test_a_matrix_stored_before_blocks_still_reads(module_store, source):
    ex.write_matrix(module_store, "legacy", source[:, :30].copy(), layout="dense")
    legacy = ex.open_matrix(module_store, "legacy")
    blocked = legacy.ttest("group", pts=True)
    bulk, ranked = legacy.pseudobulk("batch"), legacy.ttest("group", method="wilcoxon")
    name = legacy.entry.datasets["values"]
    rows = legacy.values.to_table()
    first = rows.filter(pa.compute.equal(rows.column(dense_layout.BLOCK), 0)).sort_by("cell")
    assert [name for name in first.column_names if name.startswith("v")] == [f"v{k}" for k in range(30)]
    old = first.drop_columns([dense_layout.BLOCK] + [f"v{k}" for k in range(30)])
    for offset in range(30):  # the layout before blocks: a column g<j> per gene
        old = old.append_column(f"g{offset}", first.column(f"v{offset}"))
    old = old.replace_schema_metadata(rows.schema.metadata)
    module_store.delete_dataset(name)
    module_store.write_dataset(name, old)
    before = ex.open_matrix(module_store, "legacy")
    assert before.values.schema.get_field_index(dense_layout.BLOCK) < 0
    assert before.ttest("group", pts=True).equals(blocked)
    assert before.pseudobulk("batch").equals(bulk)
    np.testing.assert_array_equal(np.asarray(before.to_anndata(genes=["gene3"]).X), source[:, ["gene3"]].X.toarray())
    assert before.ttest("group", method="wilcoxon").equals(ranked)


def test_a_scattered_selection_reads_each_block_for_its_own_genes(matrices, source):
    """Found by review: the union of offsets over every chosen block read most of
    a wide matrix for a few markers spread over it."""
    scattered = np.array([5, 210, 415, 620, 825, 1030])
    reads = dense_layout.GeneBlocks(200).reads(scattered)
    assert [read.columns for read in reads] == [["v5"], ["v10"], ["v15"], ["v20"], ["v25"], ["v30"]]
    together = dense_layout.GeneBlocks(200).reads(np.arange(190, 230))  # two blocks, mostly their own columns
    assert len(together) == 1 and len(together[0].columns) == 40
    dense, _ = matrices
    genes = [f"gene{j}" for j in scattered]
    sliced = dense.to_anndata(genes=genes)
    np.testing.assert_array_equal(np.asarray(sliced.X), source[:, genes].X.toarray())
    stats = dense.group_stats("group", genes=genes).to_pandas()
    labels = source.obs.group.astype(object).to_numpy()
    rows = stats[stats.group == "group1"].set_index("gene").loc[genes]
    x = source[:, genes].X.toarray().astype(np.float64)
    np.testing.assert_allclose(rows["mean"], x[labels == "group1"].mean(axis=0), rtol=1e-9)
