"""The R wrapper (r/skyhook_expression.R, through reticulate) returns the
same t-test table as Python: Rscript runs it and writes every number with 17
significant digits, which read back exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import skyhook
import skyhook.expression as ex
from skyhook.expression.synthetic import generate_anndata

ROOT = Path(__file__).parent.parent
SCRIPT = """
source("{root}/r/skyhook_expression.R")
skyhook_python("{python}")
frame <- skyhook_ttest("{uri}", "nb", "group", domain = "lab", method = "student", groups = "group1",
                       cells = "batch == 'a'")
stopifnot(is.data.frame(frame), is.numeric(frame$t), is.character(frame$gene))
for (name in names(frame)) if (is.double(frame[[name]])) frame[[name]] <- sprintf("%.17g", frame[[name]])
write.csv(frame, "{out}", row.names = FALSE)
stopifnot(identical(skyhook_domains("{uri}"), "lab"), skyhook_matrices("{uri}", "lab")$cells == 200)
"""


def run_r(script: str, uri: str, out: Path) -> None:
    """script (with its {root}, {python}, {uri} and {out} filled in) run by Rscript, which must succeed."""
    script = script.format(root=ROOT, python=sys.executable, uri=uri, out=out)
    env = {**os.environ, "RETICULATE_PYTHON": sys.executable}
    run = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout + run.stderr


def test_r_wrapper_returns_the_python_table(tmp_path):
    if shutil.which("Rscript") is None:
        pytest.skip("no R: scripts/install-r.sh installs it (scripts/test.sh runs it)")
    uri = (tmp_path / "store").as_uri()
    with skyhook.connect(uri) as store:
        ex.write_matrix(store, "nb", generate_anndata(200, 15, groups=3, seed=11), domain="lab")
        expected = ex.open_matrix(store, "nb", "lab").ttest(
            "group", method="student", groups=["group1"], cells="batch == 'a'"
        )
    out = tmp_path / "r.csv"
    run_r(SCRIPT, uri, out)
    got = pacsv.read_csv(out, convert_options=pacsv.ConvertOptions(column_types=expected.schema))
    assert got.equals(expected.replace_schema_metadata(None)), (got.slice(0, 3), expected.slice(0, 3))


R_SCALARS = """
source("{root}/r/skyhook_expression.R")
skyhook_python("{python}")
stats <- skyhook_group_stats("{uri}", "nb", "group")
stopifnot(is.data.frame(stats), any(is.na(stats$group)))
by_number <- skyhook_ttest("{uri}", "nb", "cluster", groups = 2)
stopifnot(all(by_number$group == "2"), nrow(by_number) == 15)
write.csv(stats, "{out}", row.names = FALSE)
bulk <- skyhook_pseudobulk("{uri}", "nb", c("batch", "group"), genes = "gene3")
bulk$sum <- sprintf("%.17g", bulk$sum)
write.csv(bulk, "{out}.bulk.csv", row.names = FALSE)
variable <- skyhook_highly_variable_genes("{uri}", "nb", n_top_genes = 5, flavor = "seurat")
stopifnot(is.logical(variable$highly_variable), nrow(variable) == 15)
write.csv(variable[variable$highly_variable, "gene", drop = FALSE], "{out}.hvg.csv", row.names = FALSE)
ranked <- skyhook_ttest("{uri}", "nb", "group", method = "wilcoxon", tie_correct = TRUE, reference = "group0",
                        pts = TRUE)
stopifnot(is.numeric(ranked$z), is.null(ranked$df), all(ranked$pts_group >= 0 & ranked$pts_group <= 1))
ranked$p <- sprintf("%.17g", ranked$p)
write.csv(ranked[, c("group", "gene", "p")], "{out}.wilcoxon.csv", row.names = FALSE)
markers <- skyhook_ttest("{uri}", "nb", "group", markers = list(min_in_group_fraction = 0.1, min_fold_change = 0.5))
write.csv(markers[, c("group", "gene")], "{out}.markers.csv", row.names = FALSE)
cells <- skyhook_cells("{uri}", "nb", filter = "batch == 'a'", columns = c("cell_id", "group"))
stopifnot(identical(names(cells), c("cell_id", "group")), nrow(cells) == {cells_a})
genes <- skyhook_genes("{uri}", "nb", filter = "highly_variable")
stopifnot(nrow(genes) == {variable_genes})
"""


def test_r_wrapper_takes_unlabelled_cells_and_a_number_for_a_group(tmp_path):
    if shutil.which("Rscript") is None:
        pytest.skip("no R: scripts/install-r.sh installs it (scripts/test.sh runs it)")
    uri = (tmp_path / "store").as_uri()
    adata = generate_anndata(200, 15, groups=3, seed=11, unlabelled=0.1)
    adata.obs["cluster"] = (np.arange(adata.n_obs) % 3).astype(np.int64)
    with skyhook.connect(uri) as store:
        ex.write_matrix(store, "nb", adata)
        expected = ex.open_matrix(store, "nb").group_stats("group")
        bulk = ex.open_matrix(store, "nb").pseudobulk(["batch", "group"], genes=["gene3"])
        variable = ex.open_matrix(store, "nb").highly_variable_genes(n_top_genes=5, flavor="seurat")
        ranked = ex.open_matrix(store, "nb").ttest("group", method="wilcoxon", tie_correct=True, reference="group0")
        markers = ex.filter_rank_genes(
            ex.open_matrix(store, "nb").ttest("group", pts=True), min_in_group_fraction=0.1, min_fold_change=0.5
        )
    out = tmp_path / "stats.csv"
    counts = {"cells_a": int((adata.obs.batch == "a").sum()), "variable_genes": int(adata.var.highly_variable.sum())}
    run_r(
        R_SCALARS.replace("{cells_a}", str(counts["cells_a"])).replace(
            "{variable_genes}", str(counts["variable_genes"])
        ),
        uri,
        out,
    )
    assert pacsv.read_csv(out).num_rows == expected.num_rows
    nulls = pacsv.ConvertOptions(column_types=bulk.schema, strings_can_be_null=True)  # R writes NA
    got = pacsv.read_csv(f"{out}.bulk.csv", convert_options=nulls)
    assert got.equals(bulk.replace_schema_metadata(None)), (got, bulk)
    chosen = variable.filter(variable.column("highly_variable")).column("gene").to_pylist()
    assert pacsv.read_csv(f"{out}.hvg.csv").column("gene").to_pylist() == chosen
    got_markers = pacsv.read_csv(f"{out}.markers.csv")
    assert got_markers.equals(markers.select(["group", "gene"]).replace_schema_metadata(None))
    assert 0 < markers.num_rows
    got = pacsv.read_csv(f"{out}.wilcoxon.csv", convert_options=pacsv.ConvertOptions(column_types={"p": pa.float64()}))
    assert got.equals(ranked.select(["group", "gene", "p"]).replace_schema_metadata(None))
