"""A t-test table as scanpy keeps its own: ``adata.uns["rank_genes_groups"]``
(params, and per statistic a record array with a field per group, genes in
each group's order of score), so that scanpy's plots and
``sc.get.rank_genes_groups_df`` take skyhook's result as they take theirs."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from skyhook.errors import InvalidRequestError
from skyhook.expression.differential import score_column

#: scanpy's names of the methods (student has none there: its own name).
SCANPY_METHODS = {
    "welch": "t-test",
    "overestim_var": "t-test_overestim_var",
    "student": "t-test_student",
    "wilcoxon": "wilcoxon",
}
#: Our column (the score: t or z, differential.score_column), scanpy's statistic and the dtype scanpy stores it with.
_STATISTICS = [
    ("gene", "names", "O"),
    ("score", "scores", "float32"),
    ("log2_fold_change", "logfoldchanges", "float32"),
    ("p", "pvals", "float64"),
    ("p_adj", "pvals_adj", "float64"),
]


def rank_genes_groups(result: pa.Table, groupby: str, method: str = "welch") -> dict[str, Any]:
    """What scanpy's ``sc.tl.rank_genes_groups(adata, groupby, method=...)``
    stores in ``adata.uns["rank_genes_groups"]``, from a ttest result (every
    group tested on the same genes, as Matrix.ttest gives them)."""
    if method not in SCANPY_METHODS:
        raise InvalidRequestError(f"unknown method {method!r}; expected one of {', '.join(SCANPY_METHODS)}")
    score = score_column(result)
    if (score == "z") != (method == "wilcoxon"):
        raise InvalidRequestError(f"the result holds {score} scores: it is not a {method} result")
    chosen = [score if column == "score" else column for column, _, _ in _STATISTICS]
    frame = result.select(chosen + ["group", "reference"]).to_pandas().rename(columns={score: "score"})
    groups = list(dict.fromkeys(frame["group"]))
    per_group = {group: frame[frame["group"] == group] for group in groups}
    if len({len(rows) for rows in per_group.values()}) > 1:
        raise InvalidRequestError("every group of the result must have the same genes (one ttest's result)")
    references = set(frame["reference"])
    uns: dict[str, Any] = {
        "params": {
            "groupby": groupby,
            "reference": references.pop() if len(references) == 1 else "rest",
            "method": SCANPY_METHODS[method],
            "use_raw": False,
            "layer": None,
            "corr_method": "benjamini-hochberg",
        }
    }
    if "pts_group" in result.column_names:
        # Genes by name, a column per group (scanpy's pts; pts_rest when the other side is the rest).
        fractions = result.select(["group", "gene", "pts_group", "pts_reference"]).to_pandas()
        uns["pts"] = fractions.pivot(index="gene", columns="group", values="pts_group")[groups]
        if uns["params"]["reference"] == "rest":
            uns["pts_rest"] = fractions.pivot(index="gene", columns="group", values="pts_reference")[groups]
    for column, name, dtype in _STATISTICS:
        table = pd.DataFrame({group: rows[column].to_numpy() for group, rows in per_group.items()})
        uns[name] = table.to_records(index=False, column_dtypes=dtype)
    return uns
