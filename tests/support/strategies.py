"""Hypothesis strategies: random filters over the typed table's columns."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import strategies as st

from support.tables import make_typed_table

#: The table the filters' literals are drawn from.
TABLE = make_typed_table(rows=1500, seed=11)
COMPARABLE = ["id", "i8", "i32", "u16", "f32", "f64", "dec", "s", "d", "ts", "tsz", "b", "all_null"]
COMPARISONS = [
    lambda a, b: a == b,
    lambda a, b: a != b,
    lambda a, b: a < b,
    lambda a, b: a <= b,
    lambda a, b: a > b,
    lambda a, b: a >= b,
]


@st.composite
def comparisons(draw) -> pc.Expression:
    name = draw(st.sampled_from(COMPARABLE))
    column = TABLE.column(name)
    value = column[draw(st.integers(0, TABLE.num_rows - 1))]
    if not value.is_valid or draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([pc.field(name).is_null(), pc.field(name).is_valid()]))
    if draw(st.booleans()) and name not in ("b", "all_null"):
        others = [column[draw(st.integers(0, TABLE.num_rows - 1))] for _ in range(draw(st.integers(1, 4)))]
        values = pa.array([v.as_py() for v in [value, *others]], column.type)
        return pc.field(name).isin(values)
    return draw(st.sampled_from(COMPARISONS))(pc.field(name), pc.scalar(value))


@st.composite
def filters(draw, depth: int = 0) -> pc.Expression:
    if depth >= 2 or draw(st.integers(0, 2)) == 0:
        return draw(comparisons())
    left, right = draw(filters(depth + 1)), draw(filters(depth + 1))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    return left & right if kind == "and" else left | right if kind == "or" else ~left
