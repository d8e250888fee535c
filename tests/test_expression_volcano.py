"""The volcano plot a biologist would publish: thresholds drawn, a legend,
the top genes up and down named without overlapping labels, and fold changes
of genes one side does not express clipped, with the axis saying so."""

from __future__ import annotations

import itertools

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

import skyhook.expression as ex
from skyhook.expression.volcano import Thresholds, volcano_figure
from support.expression import pbmc

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def result(module_store):
    ex.write_matrix(module_store, "pbmc", pbmc())
    groups = ["CD19+ B", "CD14+ Monocyte", "CD56+ NK", "Dendritic"]
    return ex.open_matrix(module_store, "pbmc").ttest("bulk_labels", groups=groups)


def test_a_publishable_volcano(result):
    figure = volcano_figure(result, top=5, thresholds=Thresholds(p_adj=0.05, log2_fold_change=1.0))
    try:
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        assert [text.get_text() for text in figure.legends[0].get_texts()] == ["not significant", "up", "down"]
        for axis in figure.axes:
            frame = result.to_pandas()
            frame = frame[frame.group == axis.get_title().split(" vs ")[0]]
            lines = [line.get_xydata()[0] for line in axis.lines]
            assert len(lines) == 3  # -log10(0.05) across, +-1 down
            assert "clipped at" in axis.get_xlabel()  # genes one group does not express reach +-30
            low, high = axis.get_xlim()
            assert high < 15 and frame.log2_fold_change.abs().max() > 25
            names = list(axis.texts)
            named = {text.get_text() for text in names}
            up = frame[(frame.p_adj < 0.05) & (frame.log2_fold_change >= 1)].sort_values("t", ascending=False)
            down = frame[(frame.p_adj < 0.05) & (frame.log2_fold_change <= -1)].sort_values("t")
            assert named == set(up.gene[:5]) | set(down.gene[:5])
            boxes = [Text.get_window_extent(text, renderer) for text in names]  # the text, not its line
            for first, second in itertools.combinations(boxes, 2):
                assert not first.overlaps(second), (first, second)
            panel = axis.get_window_extent(renderer)
            assert all(panel.x0 - 1 <= box.x0 and box.x1 <= panel.x1 + 1 for box in boxes)
    finally:
        plt.close(figure)
