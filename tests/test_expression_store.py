"""Expression matrices in the store: domains, the catalog's atomic
publication (create, overwrite, delete), every input format, precision kept,
and bad input refused with one line and nothing written; on both backends."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import scipy.io
import scipy.sparse

import skyhook.expression as ex
from skyhook.errors import InvalidInputError, InvalidRequestError
from skyhook.expression.synthetic import generate_anndata


def small(dtype=np.float32, cells=60, genes=12, seed=1):
    return generate_anndata(cells, genes, groups=3, seed=seed, dtype=dtype)


def dense(x):
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


def test_domains_lifecycle(store):
    assert ex.list_domains(store) == []
    ex.create_domain(store, "blood")
    with pytest.raises(ex.DomainExistsError, match="domain 'blood' exists"):
        ex.create_domain(store, "blood")
    ex.write_matrix(store, "m1", small(), domain="blood", metadata={"units": "log1p"})
    ex.write_matrix(store, "m2", small(seed=2), domain="liver")  # a write creates its domain
    assert ex.list_domains(store) == ["blood", "liver"]
    assert [entry.name for entry in ex.list_matrices(store, "blood")] == ["m1"]
    assert ex.list_matrices(store, "blood")[0].metadata == {"units": "log1p"}
    assert len(store.list_datasets()) == 8  # two catalogs, three datasets per matrix
    assert store.dataset("expr-blood").count_rows() == 0  # a catalog is an empty dataset to the store
    assert store.fsck().clean
    ex.delete_domain(store, "blood")
    assert ex.list_domains(store) == ["liver"]
    assert all(not name.startswith("expr-blood") for name in store.list_datasets())
    with pytest.raises(ex.DomainNotFoundError, match="no domain 'blood'"):
        ex.list_matrices(store, "blood")
    with pytest.raises(InvalidRequestError, match="invalid domain name"):
        ex.create_domain(store, "a-b")


def test_create_overwrite_delete(store):
    first, second = small(seed=1), small(seed=2, cells=80)
    ex.write_matrix(store, "m", first)
    before = sorted(store.list_datasets())
    with pytest.raises(ex.MatrixExistsError, match="pass mode='overwrite'"):
        ex.write_matrix(store, "m", second)
    assert sorted(store.list_datasets()) == before
    ex.write_matrix(store, "m", second, mode="overwrite")
    matrix = ex.open_matrix(store, "m")
    assert matrix.shape == (80, 12)
    np.testing.assert_array_equal(dense(matrix.to_anndata().X), dense(second.X))
    assert len(store.list_datasets()) == 4 and not set(before[1:]) & set(store.list_datasets())
    ex.delete_matrix(store, "m")
    assert store.list_datasets() == ["expr-default"]
    with pytest.raises(ex.MatrixNotFoundError, match="no matrix 'm' in domain 'default'"):
        ex.open_matrix(store, "m")


@pytest.mark.parametrize("layout", ["sparse", "dense"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_keep_their_precision(store, layout, dtype):
    adata = small(dtype=dtype)
    adata.X = adata.X * np.pi  # values a float32 copy would round
    ex.write_matrix(store, "m", adata, layout=layout)
    matrix = ex.open_matrix(store, "m")
    assert matrix.entry.dtype == np.dtype(dtype).name and matrix.layout == layout
    sliced = matrix.to_anndata()
    assert sliced.X.dtype == dtype
    np.testing.assert_array_equal(dense(sliced.X), dense(adata.X))
    assert list(sliced.obs["group"].astype(str)) == list(adata.obs["group"].astype(str))


def test_h5ad_raw_layer_and_x(store, tmp_path):
    adata = small()
    adata.layers["counts"] = adata.X * 2
    adata.raw = adata.copy()
    adata.X = adata.X * 3
    path = tmp_path / "m.h5ad"
    adata.write_h5ad(path)
    for name, kwargs, factor, source in [
        ("raw", {}, 1, "raw"),  # scanpy's default: .raw when it is set
        ("x", {"use_raw": False}, 3, "X"),
        ("layer", {"layer": "counts"}, 2, "layer:counts"),
    ]:
        ex.write_matrix(store, name, path, **kwargs)
        matrix = ex.open_matrix(store, name)
        assert matrix.entry.source == source
        np.testing.assert_allclose(dense(matrix.to_anndata().X), dense(adata.raw.X) * factor, rtol=1e-6)
    with pytest.raises(InvalidInputError, match="no layer 'spliced'"):
        ex.write_matrix(store, "bad", path, layer="spliced")


def test_10x_directory(store, tmp_path):
    rng = np.random.default_rng(3)
    counts = scipy.sparse.random(20, 50, density=0.2, random_state=3, format="coo", dtype=np.float64)
    counts.data = np.round(counts.data * 10) + 1
    with gzip.open(tmp_path / "matrix.mtx.gz", "wb") as stream:
        scipy.io.mmwrite(stream, counts)  # genes x cells
    features = "".join(f"ENSG{j}\tGENE{j}\tGene Expression\n" for j in range(20))
    (tmp_path / "features.tsv").write_text(features)
    (tmp_path / "barcodes.tsv").write_text("".join(f"BC{i}-1\n" for i in range(50)))
    ex.write_matrix(store, "tenx", tmp_path)
    matrix = ex.open_matrix(store, "tenx")
    sliced = matrix.to_anndata(genes=["GENE3", "GENE7"])
    np.testing.assert_array_equal(dense(sliced.X), counts.toarray().T[:, [3, 7]])
    assert matrix.var.column("gene_id").to_pylist()[:2] == ["ENSG0", "ENSG1"]
    assert matrix.entry.source == "mtx"
    (tmp_path / "barcodes.tsv").write_text("".join(f"BC{i}-1\n" for i in range(49)))
    with pytest.raises(InvalidInputError, match="49 barcodes"):
        ex.write_matrix(store, "bad", tmp_path)
    del rng


def test_tables_in_both_orientations(store, tmp_path):
    rng = np.random.default_rng(4)
    values = rng.poisson(1.0, (6, 30)).astype(np.float64)  # genes x cells
    cells = [f"c{i}" for i in range(30)]
    genes = [f"g_{j}" for j in range(6)]
    seed = pa.table({"gene": genes, **{cell: values[:, i] for i, cell in enumerate(cells)}})
    pacsv.write_csv(seed, tmp_path / "values.csv")
    cell_table = pa.table({"id": cells[::-1], "cluster": ["x" if i % 3 else "y" for i in range(30)][::-1]})
    pq.write_table(cell_table, tmp_path / "cells.parquet")
    data = ex.read_tables(tmp_path / "values.csv", cells=tmp_path / "cells.parquet")
    ex.write_matrix(store, "seed", data)
    pivoted = pa.table({"cell": cells, **{gene: values[j] for j, gene in enumerate(genes)}})
    pq.write_table(pivoted, tmp_path / "pivoted.parquet")
    ex.write_matrix(store, "pivoted", ex.read_tables(tmp_path / "pivoted.parquet", cells=cell_table, rows="cells"))
    first, second = (ex.open_matrix(store, name).group_stats("cluster").to_pandas() for name in ("seed", "pivoted"))
    pd.testing.assert_frame_equal(first, second)
    cluster = np.array(["x" if i % 3 else "y" for i in range(30)])
    row = first[(first.group == "y") & (first.gene == "g_2")].iloc[0]
    assert row["mean"] == pytest.approx(values[2, cluster == "y"].mean(), rel=1e-12)
    with pytest.raises(InvalidInputError, match=r"cells \['c0'\] are in the values but not in the cell table"):
        ex.read_tables(tmp_path / "values.csv", cells=cell_table.slice(0, 29))
    text = seed.set_column(1, "c0", pa.array(["a"] * 6))
    with pytest.raises(InvalidInputError, match="column 'c0' of the values table is string, not numbers"):
        ex.read_tables(text)


def test_bad_input_writes_nothing(store):
    duplicated = small()
    duplicated.var_names = ["same"] * 12
    nan = small()
    nan.X = nan.X.toarray()
    nan.X[0, 0] = np.nan
    reserved = small()
    reserved.obs["value"] = 1
    for data, message in [
        (duplicated, "duplicate gene 'same'"),
        (nan, "must be finite"),
        (reserved, "reserved name"),
        (
            ex.ExpressionData(
                np.zeros((3, 2)), pa.table({"cell_id": ["a", "b"]}), pa.table({"gene_name": ["x", "y"]}), "table"
            ),
            "2 rows for 3 cells",
        ),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            ex.write_matrix(store, "m", data)
    assert store.list_datasets() == []

    def interrupted(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ex.write_matrix(store, "m", small(), progress=interrupted)
    assert store.list_datasets() == [] and store.fsck().clean


def test_groups_come_in_category_order_both_ways(store):
    """scanpy orders groups by their categories: "2" before "10" where the
    categories say so, unlabelled cells last; to_anndata gives the categories back."""
    adata = small(cells=120)
    order = ["2", "10", "1"]
    labels = np.array(order)[np.arange(adata.n_obs) % 3]
    adata.obs["cluster"] = pd.Categorical(labels, categories=order)
    adata.obs.loc[adata.obs.index[:5], "cluster"] = np.nan
    ex.write_matrix(store, "m", adata)
    matrix = ex.open_matrix(store, "m")
    stats = matrix.group_stats("cluster")
    assert list(dict.fromkeys(stats.column("group").to_pylist())) == [*order, None]
    tested = matrix.ttest("cluster")
    assert list(dict.fromkeys(tested.column("group").to_pylist())) == order
    obs = matrix.to_anndata().obs
    assert isinstance(obs["cluster"].dtype, pd.CategoricalDtype)
    assert list(obs["cluster"].cat.categories) == order
    assert obs["cluster"].isna().sum() == 5


def test_a_raw_matrix_keeps_the_gene_flags_of_var(store):
    """scanpy keeps highly_variable in .var, not in .raw.var: a matrix taken
    from .raw still selects its genes by it (genes .var lacks: not selected)."""
    adata = small(genes=12)
    full = adata.copy()
    full.var = full.var.drop(columns=["highly_variable"])  # as scanpy leaves .raw
    adata = adata[:, :8].copy()
    adata.raw = full
    flags = np.zeros(8, bool)
    flags[[1, 4, 6]] = True
    adata.var["highly_variable"] = flags
    ex.write_matrix(store, "m", adata)
    matrix = ex.open_matrix(store, "m")
    assert matrix.entry.source == "raw" and matrix.shape == (60, 12)
    result = matrix.ttest("group", genes="highly_variable")
    assert sorted(set(result.column("gene").to_pylist())) == sorted(adata.var_names[flags])


def test_one_label_given_alone_or_as_a_number(store):
    """R passes a vector of one as a scalar, and numbers as doubles."""
    adata = small(cells=90)
    adata.obs["cluster"] = (np.arange(adata.n_obs) % 3).astype(np.int64)
    ex.write_matrix(store, "m", adata)
    matrix = ex.open_matrix(store, "m")
    expected = matrix.ttest("cluster", groups=[2])
    for given in (2, 2.0, np.int64(2), "2"):
        assert matrix.ttest("cluster", groups=given).equals(expected)
    assert matrix.ttest("cluster", groups=[1], reference=0.0).column("reference").unique().to_pylist() == ["0"]
