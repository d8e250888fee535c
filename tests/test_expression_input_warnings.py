"""t-tests warn (not fail) when the values were raw counts or scaled data at
import, as scanpy warns: their fold changes assume log-normalised values."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import skyhook
import skyhook.expression as ex
from skyhook.expression.synthetic import generate_anndata


def with_values(adata, values):
    adata = adata.copy()
    adata.X = values
    return adata


@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_raw_counts_and_negative_values_warn(store, layout):
    adata = generate_anndata(90, 10, groups=3, seed=4)
    counts = with_values(adata, np.round(np.expm1(adata.X.toarray())))
    scaled = with_values(adata, adata.X.toarray() - 1.0)
    for name, data, says in (("counts", counts, "raw counts"), ("scaled", scaled, "scaled data")):
        ex.write_matrix(store, name, data, layout=layout)
        with pytest.warns(ex.ExpressionInputWarning, match=f"default/{name} look like {says}"):
            ex.open_matrix(store, name).ttest("group")
    ex.write_matrix(store, "logged", adata, layout=layout)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex.open_matrix(store, "logged").ttest("group")
    with pytest.warns(ex.ExpressionInputWarning, match="counts look like raw counts"):
        ex.ttest_between(ex.open_matrix(store, "logged"), ex.open_matrix(store, "counts"))


def test_the_command_line_warns_on_one_line_and_succeeds(tmp_path):
    adata = generate_anndata(90, 10, groups=3, seed=4)
    store = tmp_path / "store"
    ex.write_matrix(skyhook.connect(str(store)), "m", with_values(adata, np.round(np.expm1(adata.X.toarray()))))
    run = subprocess.run(
        [sys.executable, "-m", "skyhook.cli", "expression", "ttest", "m", "group", "--store", str(store)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("warning: the values of default/m look like raw counts"), run.stderr
    assert len(run.stderr.splitlines()) == 1 and "group0 vs rest" in run.stdout
