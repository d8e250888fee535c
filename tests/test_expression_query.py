"""Queries like a cell atlas: cells by metadata and genes by name or filter,
as AnnData equal to slicing the original, with only the selection crossing;
the cell and gene tables alone; and one query across a domain's matrices."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import skyhook.expression as ex
from skyhook.errors import UnknownColumnError
from skyhook.expression.synthetic import generate_anndata

LAYOUTS = ["sparse", "dense"]


def dense(x) -> np.ndarray:
    return x.toarray() if scipy.sparse.issparse(x) else np.asarray(x)


@pytest.fixture(scope="module")
def source():
    return generate_anndata(500, 40, groups=4, seed=12, unlabelled=0.1)


@pytest.fixture(scope="module")
def matrices(module_store, source):
    for layout in LAYOUTS:
        ex.write_matrix(module_store, f"m_{layout}", source, layout=layout, domain="q")
    return {layout: ex.open_matrix(module_store, f"m_{layout}", "q") for layout in LAYOUTS}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_query_equals_slicing_the_original(matrices, source, layout):
    matrix = matrices[layout]
    genes = ["gene3", "gene17", "gene30"]
    got = matrix.query(obs="group == 'group1' and batch == 'a'", var=genes, obs_columns=["group"], var_columns=[])
    keep = ((source.obs.group == "group1") & (source.obs.batch == "a")).to_numpy()
    expected = source[keep, genes]
    assert list(got.obs_names) == list(expected.obs_names) and list(got.var_names) == genes
    np.testing.assert_array_equal(dense(got.X), dense(expected.X))
    assert list(got.obs.columns) == ["group"] and list(got.var.columns) == []
    assert list(got.obs.group.cat.categories) == list(source.obs.group.cat.categories)
    scan = matrix.values.last_scan.stats
    if layout == "sparse":  # the values of the selection, no more
        assert scan.rows_returned == expected.X.nnz and scan.filter_in_storage
    else:
        assert scan.rows_returned == keep.sum()
    by_filter = matrix.query(obs="percent_mito < 0.02", var="highly_variable")
    chosen = source[(source.obs.percent_mito < 0.02).to_numpy(), source.var.highly_variable.to_numpy()]
    np.testing.assert_array_equal(dense(by_filter.X), dense(chosen.X))
    assert list(by_filter.var.columns) == ["highly_variable"] and "batch" in by_filter.obs


def test_cell_and_gene_tables_alone(matrices, source):
    matrix = matrices["sparse"]
    cells = matrix.obs_table("batch == 'b'", columns=["cell_id", "group"])
    assert cells.column_names == ["cell_id", "group"]
    assert cells.column("cell_id").to_pylist() == list(source.obs_names[source.obs.batch == "b"])
    genes = matrix.var_table("highly_variable", columns=["gene_name"])
    assert genes.column("gene_name").to_pylist() == list(source.var_names[source.var.highly_variable])
    with pytest.raises(UnknownColumnError, match="no metadata column 'tissue'"):
        matrix.query(obs_columns=["tissue"])


def test_one_query_across_a_domains_matrices(module_store):
    first = generate_anndata(200, 10, groups=3, seed=1)
    second = generate_anndata(150, 12, groups=3, seed=2)
    second.var_names = [f"gene{j + 4}" for j in range(12)]  # genes 4..15: 6 shared with the first
    second.obs_names = [f"other{i}" for i in range(150)]
    ex.write_matrix(module_store, "first", first, domain="atlas", metadata={"study": "one"})
    ex.write_matrix(module_store, "second", second, domain="atlas", layout="dense")
    genes = ["gene2", "gene5", "gene14"]
    got = ex.query(module_store, obs="group == 'group0'", var=genes, domain="atlas")
    parts = []
    for name, adata in (("first", first), ("second", second)):
        chosen = adata[(adata.obs.group == "group0").to_numpy()]
        frame = pd.DataFrame(0.0, index=chosen.obs_names, columns=genes)
        for gene in genes:
            if gene in adata.var_names:
                frame[gene] = dense(chosen[:, gene].X).ravel()
        parts.append(frame.assign(matrix=name))
    expected = pd.concat(parts)
    assert list(got.obs_names) == list(expected.index)
    np.testing.assert_array_equal(dense(got[:, genes].X), expected[genes].to_numpy())
    assert list(got.obs.matrix) == list(expected.matrix)
    assert got.uns["skyhook"]["matrices"]["first"] == {"study": "one"}
    with pytest.raises(ex.UnknownGeneError, match="'gene99' is in no matrix"):
        ex.query(module_store, var=["gene2", "gene99"], domain="atlas")
    nothing = ex.query(module_store, obs="percent_mito < 0", var=genes, domain="atlas")
    assert nothing.n_obs == 0
