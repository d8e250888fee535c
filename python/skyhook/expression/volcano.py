"""A volcano plot of a rank_genes result (t-tests or Wilcoxon): log2 fold
change against -log10 of the adjusted p-value, one panel per group; the
thresholds drawn, significant genes up and down coloured with a legend, the
top genes of each direction named with labels moved apart so that they do
not overlap, and fold changes past a robust range (genes one side does not express) clipped to the panel's
edge (drawn as triangles, and the axis says so)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.expression.differential import score_column

#: Adjusted p-values are drawn no lower than this (a p of 0 would be infinitely high).
P_FLOOR = 1e-300


@dataclass(frozen=True)
class Thresholds:
    p_adj: float = 0.05
    log2_fold_change: float = 1.0


def volcano_plot(
    result: pa.Table, path: str | Path, top: int = 5, title: str = "", thresholds: Thresholds = Thresholds()
) -> None:
    import matplotlib.pyplot as plt

    figure = volcano_figure(result, top, title, thresholds)
    figure.savefig(path, dpi=100)
    plt.close(figure)


def volcano_figure(result: pa.Table, top: int = 5, title: str = "", thresholds: Thresholds = Thresholds()) -> Any:
    """The plot as a matplotlib figure (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(result.column("group").to_pylist()))
    columns = min(len(groups), 4) or 1
    rows = max(1, math.ceil(len(groups) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(4.5 * columns, 4 * rows), squeeze=False)
    for axis, group in zip(axes.flat, groups):
        _panel(axis, result.filter(pc.equal(result.column("group"), group)), top, thresholds)
    for axis in list(axes.flat)[len(groups) :]:
        axis.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    if title:
        figure.suptitle(title)
    figure.tight_layout(rect=(0, 0.05, 1, 1))
    renderer = figure.canvas.get_renderer()
    for axis in axes.flat:
        _separate(axis, renderer)
    return figure


def clip_limit(change: np.ndarray, expressed: np.ndarray, thresholds: Thresholds) -> float:
    """The largest |log2 fold change| drawn where it is: 1.5x the 99th
    percentile over genes both sides express (a gene one side does not
    express has a change near ±30, from scanpy's 1e-9 floor, which would
    squeeze the useful range)."""
    finite = np.abs(change[np.isfinite(change) & expressed])
    robust = float(np.percentile(finite, 99)) * 1.5 if len(finite) else 0.0
    return max(robust, 2 * thresholds.log2_fold_change, 1.0)


def _panel(axis, part: pa.Table, top: int, thresholds: Thresholds) -> None:
    change = part.column("log2_fold_change").to_numpy(zero_copy_only=False).astype(np.float64)
    p_adj = part.column("p_adj").to_numpy(zero_copy_only=False)
    height = -np.log10(np.maximum(p_adj, P_FLOOR))
    means = [part.column(name).to_numpy(zero_copy_only=False) for name in ("mean_group", "mean_reference")]
    limit = clip_limit(change, (means[0] > 0) & (means[1] > 0), thresholds)
    clipped = np.abs(np.nan_to_num(change, nan=0.0)) > limit
    shown = np.clip(np.nan_to_num(change, nan=0.0), -limit, limit)
    significant = (p_adj < thresholds.p_adj) & (np.abs(np.nan_to_num(change)) >= thresholds.log2_fold_change)
    kinds = [
        ("not significant", ~significant, "0.65"),
        ("up", significant & (change > 0), "tab:red"),
        ("down", significant & (change < 0), "tab:blue"),
    ]
    for label, chosen, color in kinds:
        axis.scatter(shown[chosen & ~clipped], height[chosen & ~clipped], s=5, color=color, label=label)
        for edge, marker in ((shown > 0, ">"), (shown < 0, "<")):
            at = chosen & clipped & edge
            axis.scatter(shown[at], height[at], s=16, color=color, marker=marker)
    axis.axhline(-math.log10(thresholds.p_adj), color="0.3", linestyle="--", linewidth=0.8)
    for side in (-1, 1):
        axis.axvline(side * thresholds.log2_fold_change, color="0.3", linestyle="--", linewidth=0.8)
    score = part.column(score_column(part)).to_numpy(zero_copy_only=False)
    names = part.column("gene").to_pylist()
    named = [i for i in np.argsort(-score) if significant[i] and change[i] > 0][:top]
    named += [i for i in np.argsort(score) if significant[i] and change[i] < 0][:top]
    axis.set_xlim(-limit * 1.08, limit * 1.08)
    _label_apart(axis, [(shown[i], height[i], str(names[i])) for i in named], limit)
    axis.set_title(f"{part.column('group')[0]} vs {part.column('reference')[0]}", fontsize=9)
    axis.set_xlabel("log2 fold change" + (f" (clipped at ±{limit:.3g})" if clipped.any() else ""))
    axis.set_ylabel("-log10 adjusted p")


def _label_apart(axis, points: list[tuple[float, float, str]], limit: float) -> None:
    """Names beside their points, with a line back to each: outward of the
    point, or inward where the panel's edge is near (_separate moves them apart)."""
    offset = 0.1 * limit
    for x, y, name in points:
        toward = np.sign(x) if abs(x) + offset < 0.75 * limit else -np.sign(x)
        axis.annotate(
            name,
            (x, y),
            xytext=(x + toward * offset, y),
            fontsize=7,
            ha="left" if toward > 0 else "right",
            va="center",
            arrowprops={"arrowstyle": "-", "color": "0.4", "linewidth": 0.5},
        )


def _separate(axis, renderer: Any) -> None:
    """Moves the axis's labels up, lowest first, until none overlaps another
    (measured as drawn, after the layout is final; the text alone, not its line)."""
    from matplotlib.text import Text

    def extent(text: Any) -> Any:
        return Text.get_window_extent(text, renderer)

    texts = sorted(axis.texts, key=lambda text: extent(text).y0)
    fixed: list[Any] = []
    to_data = axis.transData.inverted()
    for text in texts:
        box = extent(text)
        for _ in range(len(fixed) + 1):
            blocking = [other for other in fixed if box.overlaps(other)]
            if not blocking:
                break
            rise = max(other.y1 for other in blocking) - box.y0 + 1.0
            x, y = text.get_position()
            shown = axis.transData.transform((x, y))
            text.set_position((x, to_data.transform((shown[0], shown[1] + rise))[1]))
            box = extent(text)
        fixed.append(box)
