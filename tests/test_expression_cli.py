"""``skyhook expression ...`` as a user runs it: through the real entry point
(import, ls, describe, ttest with a volcano plot) and, for the wrong inputs,
typer's CliRunner; every mistake is one line and writes nothing."""

from __future__ import annotations

import subprocess
import sys

import anndata
import h5py
import numpy as np
import pandas as pd
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import skyhook
import skyhook.expression as ex
from skyhook.cli import app
from skyhook.expression.synthetic import generate_anndata


def skyhook_cli(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "skyhook.cli", *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("expression-cli")
    generate_anndata(300, 25, groups=4, seed=5).write_h5ad(directory / "m.h5ad")
    with h5py.File(directory / "plain.h5ad", "w") as plain:  # HDF5, but not AnnData
        plain.create_dataset("values", data=np.arange(10))
    anndata.AnnData(np.zeros((0, 5), np.float32)).write_h5ad(directory / "no-cells.h5ad")
    anndata.AnnData(np.zeros((5, 0), np.float32)).write_h5ad(directory / "no-genes.h5ad")
    return directory


def test_import_ls_describe_ttest(files, tmp_path):
    store = str(tmp_path / "store")
    out = skyhook_cli(
        "expression", "import", "nb", str(files / "m.h5ad"), "--store", store, "--domain", "lab",
        "--metadata", "study=test", "--metadata", "units=log1p",
    )  # fmt: skip
    assert "lab/nb: 300 cells x 25 genes, sparse layout, float32 from X" in out.stdout
    assert "lab" in skyhook_cli("expression", "ls", "--store", store).stdout
    assert "nb" in skyhook_cli("expression", "ls", "--store", store, "--domain", "lab").stdout
    described = skyhook_cli("expression", "describe", "nb", "--store", store, "-d", "lab").stdout
    assert '{"study": "test", "units": "log1p"}' in described and "percent_mito" in described
    result = CliRunner().invoke(app, [
        "expression", "ttest", "nb", "group", "--store", store, "-d", "lab", "--top", "3",
        "--output", str(tmp_path / "r.parquet"), "--plot", str(tmp_path / "volcano.png"),
    ])  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "group0 vs rest" in result.stdout and "group3 vs rest" in result.stdout
    table = pq.read_table(tmp_path / "r.parquet")
    expected = ex.open_matrix(skyhook.connect(store), "nb", "lab").ttest("group")
    assert table.select(["group", "gene", "t", "p"]).equals(expected.select(["group", "gene", "t", "p"]))
    assert (tmp_path / "volcano.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.isclose(table.column("t")[0].as_py(), expected.column("t")[0].as_py())
    ranked = CliRunner().invoke(app, [
        "expression", "ttest", "nb", "group", "--store", store, "-d", "lab", "--method", "wilcoxon",
        "--tie-correct", "--pts", "--group", "group1", "--output", str(tmp_path / "w.csv"), "--plot", str(tmp_path / "w.png"),
    ])  # fmt: skip
    assert ranked.exit_code == 0, ranked.stdout + ranked.stderr
    assert "group1 vs rest" in ranked.stdout and " z " in ranked.stdout
    expected = ex.open_matrix(skyhook.connect(store), "nb", "lab").ttest(
        "group", method="wilcoxon", tie_correct=True, groups=["group1"], pts=True
    )
    written = pacsv.read_csv(tmp_path / "w.csv")
    assert written.column("z").to_pylist() == expected.column("z").to_pylist()
    assert written.column("pts_group").to_pylist() == expected.column("pts_group").to_pylist()


WRONG = [
    (["import", "m", "{dir}/nothing.h5ad"], "no such .h5ad file"),
    (["import", "m", "{dir}/nothing.txt"], "no such file or directory"),
    (["import", "m", "{dir}/m.h5ad", "--layer", "counts"], "no layer 'counts'"),
    (["import", "m", "{dir}/m.h5ad", "--metadata", "novalue"], "expected KEY=VALUE"),
    (["import", "bad-name", "{dir}/m.h5ad"], "invalid matrix name"),
    (["import", "m", "{dir}/m.h5ad", "--layout", "wide"], "unknown layout 'wide'"),
    (["import", "nb", "{dir}/m.h5ad"], "exists in domain 'default'"),
    (["ls", "--domain", "nowhere"], "no domain 'nowhere'"),
    (["describe", "nb", "--domain", "other"], "no matrix 'nb' in domain 'other' (it is in domain 'default')"),
    (["ttest", "nb", "cluster"], "no cell metadata column 'cluster'"),
    (["ttest", "nb", "group", "--genes", "gene1,FOO"], "gene 'FOO' is not in the matrix"),
    (["ttest", "nb", "group", "--reference", "group9"], "reference group 'group9' has no selected cells"),
    (["ttest", "nb", "group", "--method", "mann-whitney"], "unknown method 'mann-whitney'"),
    (["ttest", "nb", "group", "--cells", "percent_mito <"], "percent_mito"),
    (["ttest", "nb", "group", "--plot", "{dir}/plot.pdf"], "use a .png file name"),
    (["ttest", "nb", "group", "--cells", "percent_mito < -1"], "no selected cell has a label in 'group'"),
    (["ttest", "nb", "group", "--group", "group0", "--group", "rest"], "group 'rest' has no selected cells"),
    (["import", "m", "{dir}/plain.h5ad"], "plain.h5ad: not a readable .h5ad file"),
    (["import", "m", "{dir}/no-cells.h5ad"], "the matrix has 0 cells and 5 genes: nothing to store"),
    (["import", "m", "{dir}/no-genes.h5ad"], "the matrix has 5 cells and 0 genes: nothing to store"),
    (["pseudobulk", "nb", "--by", "tissue"], "no cell metadata column 'tissue'"),
    (["pseudobulk", "nb", "--by", "group", "--cells", "percent_mito < -1"], "no cell is selected"),
    (["pseudobulk", "nb", "--by", "group", "-o", "{dir}/sums.txt"], "use a .parquet or .csv file name"),
    (["variable-genes", "nb", "--n-top-genes", "0"], "n_top_genes must be a number of genes >= 1"),
    (["variable-genes", "nb", "--genes", "gene1", "--gene-filter", "x"], "exclude each other"),
]


@pytest.mark.parametrize(("args", "expected"), WRONG, ids=[" ".join(args)[:50] for args, _ in WRONG])
def test_wrong_input_is_one_line(files, args, expected):
    store = files / "store"
    if not store.exists():
        ex.write_matrix(skyhook.connect(str(store)), "nb", files / "m.h5ad")
        ex.create_domain(skyhook.connect(str(store)), "other")
    before = skyhook.connect(str(store)).list_datasets()
    result = CliRunner().invoke(app, ["expression", *[arg.format(dir=files) for arg in args], "--store", str(store)])
    assert "Traceback" not in result.stdout + result.stderr
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: "), result.stderr
    assert expected in result.stderr
    assert skyhook.connect(str(store)).list_datasets() == before


def test_integer_labels_are_named_by_their_text(tmp_path):
    """A command line gives every label as text: "1" names the integer cluster 1."""
    adata = generate_anndata(300, 25, groups=3, seed=7)
    adata.obs["cluster"] = pd.Series(adata.obs["group"].cat.codes.to_numpy(), index=adata.obs.index)
    store = tmp_path / "store"
    ex.write_matrix(skyhook.connect(str(store)), "nb", adata)
    result = CliRunner().invoke(
        app, ["expression", "ttest", "nb", "cluster", "--group", "1", "--reference", "0", "--store", str(store)]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "1 vs 0" in result.stdout
    expected = ex.open_matrix(skyhook.connect(str(store)), "nb").ttest("cluster", groups=[1], reference=0)
    assert expected.column("group").unique().to_pylist() == ["1"]


def test_pseudobulk_writes_the_sums_python_computes(files, tmp_path):
    store = str(tmp_path / "store")
    ex.write_matrix(skyhook.connect(store), "nb", files / "m.h5ad")
    args = ["expression", "pseudobulk", "nb", "--by", "batch", "--by", "group", "--store", store]
    printed = CliRunner().invoke(app, [*args, "--genes", "gene1,gene2"])
    assert printed.exit_code == 0, printed.stdout + printed.stderr
    assert "gene2" in printed.stdout and "n_cells" in printed.stdout
    written = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "sums.parquet")])
    assert written.exit_code == 0, written.stdout + written.stderr
    expected = ex.open_matrix(skyhook.connect(store), "nb").pseudobulk(["batch", "group"])
    assert pq.read_table(tmp_path / "sums.parquet").equals(expected)


def test_variable_genes_prints_the_chosen_and_writes_all(files, tmp_path):
    store = str(tmp_path / "store")
    ex.write_matrix(skyhook.connect(store), "nb", files / "m.h5ad")
    expected = ex.open_matrix(skyhook.connect(store), "nb").highly_variable_genes(n_top_genes=4)
    chosen = expected.filter(expected.column("highly_variable")).column("gene").to_pylist()
    printed = CliRunner().invoke(app, ["expression", "variable-genes", "nb", "--n-top-genes", "4", "--store", store])
    assert printed.exit_code == 0, printed.stdout + printed.stderr
    assert f"{len(chosen)} rows" in printed.stdout and all(gene in printed.stdout for gene in chosen)  # ties count
    args = [
        "expression",
        "variable-genes",
        "nb",
        "--n-top-genes",
        "4",
        "--store",
        store,
        "-o",
        str(tmp_path / "v.parquet"),
    ]
    written = CliRunner().invoke(app, args)
    assert written.exit_code == 0, written.stdout + written.stderr
    assert pq.read_table(tmp_path / "v.parquet").to_pandas().equals(expected.to_pandas())  # NaN as NaN
