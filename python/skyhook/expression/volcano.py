"""A volcano plot of a rank_genes result (t-tests or Wilcoxon): log2 fold change against -log10 of the
adjusted p-value, one panel per group, the top genes named."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.expression.differential import score_column

#: Adjusted p-values are drawn no lower than this (a p of 0 would be infinitely high).
P_FLOOR = 1e-300


def volcano_plot(result: pa.Table, path: str | Path, top: int = 5, title: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(result.column("group").to_pylist()))
    columns = min(len(groups), 4) or 1
    rows = max(1, math.ceil(len(groups) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.5 * rows), squeeze=False)
    for axis, group in zip(axes.flat, groups):
        part = result.filter(pc.equal(result.column("group"), group))
        change = part.column("log2_fold_change").to_numpy()
        height = -np.log10(np.maximum(part.column("p_adj").to_numpy(), P_FLOOR))
        significant = part.column("p_adj").to_numpy() < 0.05
        axis.scatter(change[~significant], height[~significant], s=4, color="0.6")
        axis.scatter(change[significant], height[significant], s=4, color="tab:red")
        for index in np.argsort(-part.column(score_column(part)).to_numpy())[:top]:
            axis.annotate(str(part.column("gene")[index]), (change[index], height[index]), fontsize=7)
        axis.set_title(f"{group} vs {part.column('reference')[0]}", fontsize=9)
        axis.set_xlabel("log2 fold change")
        axis.set_ylabel("-log10 adjusted p")
    for axis in list(axes.flat)[len(groups) :]:
        axis.set_visible(False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
