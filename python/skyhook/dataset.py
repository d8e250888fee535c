"""A stored dataset, usable wherever a ``pyarrow.dataset.Dataset`` is: DuckDB,
for one, hands it projections and filters through ``scanner()``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from skyhook.catalog.manifest import Manifest
from skyhook.execution.aggregate_execution import AggregateExecution
from skyhook.execution.explain import Explanation, explain_aggregate, explain_scan
from skyhook.execution.scanner import Scanner
from skyhook.plan.aggregate import AggregateQuery
from skyhook.plan.expressions import Columns, projected_schema
from skyhook.plan.where import parse_where

if TYPE_CHECKING:
    from skyhook.store import Store


class Dataset(pads.Dataset):
    # pyarrow's Dataset is a C++ object underneath; this subclass never builds
    # one, so every public method of the base class is overridden here.
    def __init__(self, store: Store, manifest: Manifest, filter: pc.Expression | None = None) -> None:
        self.store = store
        self.manifest = manifest
        self._filter = filter
        #: The most recent scanner made by this dataset (by you or by DuckDB).
        self.last_scan: Scanner | None = None
        #: The most recent aggregation run on this dataset.
        self.last_aggregate: AggregateExecution | None = None

    def __repr__(self) -> str:
        return (
            f"<skyhook.Dataset {self.name!r}: {self.manifest.num_rows} rows in "
            f"{len(self.manifest.partitions)} objects, {self.manifest.format}>"
        )

    @property
    def name(self) -> str:
        return self.manifest.dataset

    @property
    def schema(self) -> pa.Schema:
        return self.manifest.schema

    @property
    def partition_expression(self) -> pc.Expression:
        return pc.scalar(True)

    def scanner(
        self,
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        batch_size: int | None = None,
        use_threads: bool = True,
        **options: Any,
    ) -> Scanner:
        """filter is a pyarrow expression or text such as "price > 10 and flag == 'R'".
        options: pushdown (False reads whole objects and filters here),
        max_result_bytes (per object reply)."""
        filter = self._expression(filter)
        self.last_scan = Scanner(self, columns, filter, batch_size=batch_size, use_threads=use_threads, **options)
        return self.last_scan

    def to_table(self, columns: Columns = None, filter: pc.Expression | str | None = None, **options: Any) -> pa.Table:
        return self.scanner(columns, filter, **options).to_table()

    def to_batches(
        self, columns: Columns = None, filter: pc.Expression | str | None = None, **options: Any
    ) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns, filter, **options).to_batches()

    def count_rows(self, filter: pc.Expression | str | None = None, **options: Any) -> int:
        return self.scanner(None, filter, **options).count_rows()

    def head(
        self, num_rows: int, columns: Columns = None, filter: pc.Expression | str | None = None, **options: Any
    ) -> pa.Table:
        return self.scanner(columns, filter, **options).head(num_rows)

    def take(
        self,
        indices: pa.Array | list[int],
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        **options: Any,
    ) -> pa.Table:
        return self.scanner(columns, filter, **options).take(indices)

    def filter(self, expression: pc.Expression | str) -> Dataset:
        if isinstance(expression, str):
            expression = parse_where(expression, self.schema)
        combined = expression if self._filter is None else self._filter & expression
        return Dataset(self.store, self.manifest, combined)

    def get_fragments(self, filter: pc.Expression | None = None) -> Iterator[pads.Fragment]:
        raise NotImplementedError(
            "skyhook datasets are scanned in storage and have no pyarrow "
            "fragments; use scanner(), to_table() or to_batches()"
        )

    def replace_schema(self, schema: pa.Schema) -> Dataset:
        raise NotImplementedError("a stored dataset's schema is fixed; write a new dataset instead")

    def group_by(self, keys: str | list[str]) -> DatasetGroupBy:
        """Like ``pyarrow.Table.group_by``; the aggregation runs in storage."""
        return DatasetGroupBy(self, keys)

    def aggregate(
        self, aggregations: list[tuple[str, str]], filter: pc.Expression | str | None = None, **options: Any
    ) -> pa.Table:
        """Aggregates over the whole dataset (no keys): one row."""
        return self.group_by([]).aggregate(aggregations, filter=filter, **options)

    def explain(
        self,
        columns: Columns = None,
        filter: pc.Expression | str | None = None,
        *,
        keys: str | list[str] | None = None,
        aggregations: list[tuple] | None = None,
        **options: Any,
    ) -> Explanation:
        """Run a scan (or, with aggregations, an aggregate) and say what ran where."""
        if aggregations is not None:
            return explain_aggregate(self, self.group_by(keys or []).execution(aggregations, filter, **options))
        return explain_scan(self, self.scanner(columns, filter, **options))

    # Relational operations run in pyarrow on the materialised dataset.
    def sort_by(self, sorting: Any, **kwargs: Any) -> pads.InMemoryDataset:
        return self._materialized().sort_by(sorting, **kwargs)

    def join(self, *args: Any, **kwargs: Any) -> pads.InMemoryDataset:
        return self._materialized().join(*args, **kwargs)

    def join_asof(self, *args: Any, **kwargs: Any) -> pads.InMemoryDataset:
        return self._materialized().join_asof(*args, **kwargs)

    def _materialized(self) -> pads.InMemoryDataset:
        return pads.dataset(self.to_table())

    def _expression(self, filter: pc.Expression | str | None) -> pc.Expression | None:
        if isinstance(filter, str):
            filter = parse_where(filter, self.schema)
        if self._filter is not None:
            filter = self._filter if filter is None else self._filter & filter
        return filter


class DatasetGroupBy:
    def __init__(self, dataset: Dataset, keys: str | list[str]) -> None:
        self.dataset = dataset
        self.keys = keys

    def aggregate(
        self, aggregations: list[tuple[str, str]], filter: pc.Expression | str | None = None, **options: Any
    ) -> pa.Table:
        """aggregations: (column, function) pairs with pyarrow's function names
        (count, count_distinct, sum, min, max, mean, variance, stddev, first,
        last). options: use_threads, max_in_flight, max_slice_cpu_ns."""
        execution = self.execution(aggregations, filter, **options)
        return execution.run()

    def execution(
        self, aggregations: list[tuple[str, str]], filter: pc.Expression | str | None = None, **options: Any
    ) -> AggregateExecution:
        filter = self.dataset._expression(filter)
        if filter is not None:
            projected_schema(self.dataset.schema, [], filter)  # validates the filter
        query = AggregateQuery.make(self.dataset.schema, self.keys, aggregations, filter)
        self.dataset.last_aggregate = AggregateExecution(self.dataset, query, **options)
        return self.dataset.last_aggregate
