"""Filters written in Dask pushed into skyhook's scans: ``frame[frame.x > 5]``
on a dataset's DataFrame becomes the partitions' reader's filter, which
storage runs, instead of a pandas filter after a full read. Built on
dask-expr's own optimizer hooks (the ones its Parquet reader uses; pinned
by the [dask] extra's version).

Only what means the same in pandas and in Arrow is pushed: comparisons of a
column with a number, string or boolean, combined with & and |, and != as
"differs or is missing" (pandas keeps a missing value's row for !=, Arrow's
comparison is null); negations and anything else stay in Dask."""

from __future__ import annotations

import operator
from typing import Any

import pyarrow.compute as pc
from dask.dataframe.dask_expr import _expr as dask_expressions
from dask.dataframe.dask_expr._collection import new_collection
from dask.dataframe.dask_expr.io.io import FromMapProjectable
from dask.dataframe.utils import pyarrow_strings_enabled

_COMPARISONS = {
    dask_expressions.GT: (operator.gt, operator.lt),
    dask_expressions.GE: (operator.ge, operator.le),
    dask_expressions.LT: (operator.lt, operator.gt),
    dask_expressions.LE: (operator.le, operator.ge),
    dask_expressions.EQ: (operator.eq, operator.eq),
    dask_expressions.NE: (operator.ne, operator.ne),
}


class SkyhookRead(FromMapProjectable):
    """from_map's projectable read, taking the Filter above it into its reader."""

    def _filter_passthrough_available(self, parent: Any, dependents: Any) -> bool:
        return dask_expressions.is_filter_pushdown_available(self, parent, dependents) and (
            arrow_predicate(self, parent.predicate) is not None
        )

    def _simplify_up(self, parent: Any, dependents: Any) -> Any:
        if isinstance(parent, dask_expressions.Filter) and self._filter_passthrough_available(parent, dependents):
            narrowed = self.operand("func").narrowed(arrow_predicate(self, parent.predicate))
            return self.substitute_parameters({"func": narrowed})
        return super()._simplify_up(parent, dependents)


def read_expression(reader: Any, groups: list[list[int]], meta: Any, label: str) -> Any:
    """The DataFrame of reader over groups, as from_map makes it, with SkyhookRead."""
    read = SkyhookRead(reader, [groups], list(meta.columns), [], {}, False, meta, False, None, label)
    frame = new_collection(read)
    return new_collection(dask_expressions.ArrowStringConversion(frame)) if pyarrow_strings_enabled() else frame


def arrow_predicate(read: Any, predicate: Any) -> pc.Expression | None:
    """predicate as a pyarrow filter on read's columns, or None if it is not one
    that means the same in both (see the module)."""
    if isinstance(predicate, (dask_expressions.And, dask_expressions.Or)):
        left, right = arrow_predicate(read, predicate.left), arrow_predicate(read, predicate.right)
        if left is None or right is None:
            return None
        return left & right if isinstance(predicate, dask_expressions.And) else left | right
    operators = _COMPARISONS.get(type(predicate))
    if operators is None:
        return None
    column, value, compare = _column(read, predicate.left), predicate.right, operators[0]
    if column is None:  # the literal on the left: 5 < x
        column, value, compare = _column(read, predicate.right), predicate.left, operators[1]
    if column is None or isinstance(value, dask_expressions.Expr) or not _plain(value):
        return None
    compared = compare(pc.field(column), pc.scalar(value))
    return compared | pc.field(column).is_null() if compare is operator.ne else compared


def _column(read: Any, side: Any) -> str | None:
    """The column side reads from read directly (a projection of one column)."""
    if isinstance(side, dask_expressions.Projection) and side.frame._name == read._name:
        columns = side.operand("columns")
        return columns if isinstance(columns, str) else None
    return None


def _plain(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str)) and not (isinstance(value, float) and value != value)


__all__ = ["SkyhookRead", "arrow_predicate", "read_expression"]
