"""Text labels of cells also stored as integer codes, ``<column>__code``: the
layouts group by the code (storage hashes and decodes integers about twice
as fast as strings: 42 M rows of a sparse matrix) and filter by the text
(what users write). The cell table holds both, so one count there maps codes
to labels and gives each group's size."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from skyhook.dataset import Dataset
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression.source import CATEGORIES

SUFFIX = "__code"


@dataclass(frozen=True)
class Groups:
    """The selected cells' groups: labels[row] (None: unlabelled), sizes[row],
    and the row of each group key value (a code, or the label itself)."""

    labels: list[Any]
    sizes: np.ndarray
    row_of: dict[Any, int]

    def rows(self, keys: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """The group row of each key value (vectorised row_of)."""
        labelled = [key for key in self.row_of if key is not None]
        found = pc.index_in(keys, value_set=pa.array(labelled, keys.type))
        by_index = np.array([self.row_of[key] for key in labelled] + [self.row_of.get(None, -1)], dtype=np.int64)
        return by_index[found.fill_null(len(labelled)).to_numpy(zero_copy_only=False).astype(np.int64)]


def with_codes(cell_metadata: pa.Table) -> pa.Table:
    """cell_metadata plus an int32 code column per text column (null stays
    null): a label's position among its column's categories where it was
    categorical (source.CATEGORIES), else among its sorted labels. Groups come
    in the order of their codes."""
    for field in list(cell_metadata.schema):
        column = cell_metadata.column(field.name)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            categories = (field.metadata or {}).get(CATEGORIES)
            labels = (
                pa.array(json.loads(categories), column.type)
                if categories is not None
                else pc.unique(column.drop_null()).sort()
            )
            codes = pc.index_in(column, value_set=labels).cast(pa.int32())
            cell_metadata = cell_metadata.append_column(field.name + SUFFIX, codes)
    return cell_metadata


def group_key(schema: pa.Schema, groupby: str) -> str:
    """The column to group by for groupby: its codes if it has them."""
    return groupby + SUFFIX if schema.get_field_index(groupby + SUFFIX) >= 0 else groupby


def group_sizes(
    obs: Dataset, groupby: str | None, cells: pc.Expression | None, options: AggregateKeywords, record: list
) -> Groups:
    """The groups of the selected cells, counted in storage; labels[row] is
    the text of each group (None: unlabelled)."""
    if groupby is None:
        counted = obs.aggregate([([], "count_all")], filter=cells, **options)
        record.append(obs.last_aggregate.stats)
        return Groups([None], counted.column("count_all").to_numpy().astype(np.float64), {None: 0})
    key = group_key(obs.schema, groupby)
    keys = list(dict.fromkeys([key, groupby]))
    counted = obs.group_by(keys).aggregate([([], "count_all")], filter=cells, **options)
    record.append(obs.last_aggregate.stats)
    labels = counted.column(groupby).to_pylist()
    key_values = counted.column(key).to_pylist()
    ordered_by = key_values if key != groupby else labels  # codes: the categories' order
    order = sorted(
        range(len(labels)),
        key=lambda i: (
            ordered_by[i] is None,
            str(type(ordered_by[i])),
            "" if ordered_by[i] is None else ordered_by[i],
        ),
    )
    rows = {key_values[i]: row for row, i in enumerate(order)}
    return Groups([labels[i] for i in order], counted.column("count_all").to_numpy()[order].astype(np.float64), rows)
