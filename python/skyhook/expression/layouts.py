"""The storage layouts of a matrix's values and which one a write takes.

Both give identical answers (tests/test_expression_ttest.py); what differs is
speed. Measured with bench/expression.py's layout sweep (embedded, 100,000
cells x 100 genes at 2 % to 100 % non-zeros): the sparse layout's t-test
took 0.02 to 0.15 s, the dense one's (in gene blocks) 0.38 to 0.42 s at every
density (it computes a mean and a variance of every cell's value, zeros
included). So "auto" takes the sparse layout whatever the sparsity; the
dense one is there when asked for."""

from __future__ import annotations

from skyhook.errors import InvalidRequestError
from skyhook.expression import dense_layout, sparse_layout

LAYOUTS = (sparse_layout.NAME, dense_layout.NAME)
#: What "auto" takes (the faster at every density measured).
DEFAULT_LAYOUT = sparse_layout.NAME


def choose_layout(layout: str) -> str:
    if layout == "auto":
        return DEFAULT_LAYOUT
    if layout not in LAYOUTS:
        raise InvalidRequestError(f"unknown layout {layout!r}; expected auto, sparse or dense")
    return layout


def layout_module(layout: str):
    return sparse_layout if layout == sparse_layout.NAME else dense_layout
