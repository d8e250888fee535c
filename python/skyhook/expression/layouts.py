"""The storage layouts of a matrix's values and which one a write takes.

Both give identical answers (tests/test_expression_stats.py); what differs is
speed. Measured with bench/expression.py (README, "Gene expression"): the
sparse layout moves and aggregates only the non-zeros, and wins below about
half non-zeros; the dense one reads every value but no gene or cell column."""

from __future__ import annotations

from skyhook.errors import InvalidRequestError
from skyhook.expression import dense_layout, sparse_layout

LAYOUTS = (sparse_layout.NAME, dense_layout.NAME)
#: "auto" takes the sparse layout below this fraction of non-zero values.
SPARSE_BELOW_DENSITY = 0.5


def choose_layout(layout: str, density: float) -> str:
    if layout == "auto":
        return sparse_layout.NAME if density < SPARSE_BELOW_DENSITY else dense_layout.NAME
    if layout not in LAYOUTS:
        raise InvalidRequestError(f"unknown layout {layout!r}; expected auto, sparse or dense")
    return layout


def layout_module(layout: str):
    return sparse_layout if layout == sparse_layout.NAME else dense_layout
