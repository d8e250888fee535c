"""Datasets as Ray Data datasets (``pip install 'skyhook[ray]'``):
``dataset.to_ray(columns=, filter=)`` is a
``ray.data.Dataset`` whose read tasks are groups of the dataset's objects
(those the filter's statistics rule out are not read), sized by their stored
bytes; each task scans its objects with the filter and columns in storage.
Columns selected and filters written in Ray (``ds.select_columns``,
``ds.filter(expr=col("x") > 5)``) reach the scans through Ray's pushdown
hooks: Ray evaluates expressions in Arrow, as storage does. Ray places tasks
near nothing: Ceph decides where objects live.

``write_dataset(ray_dataset, store, name, mode=)`` (or
``ray_dataset.write_datasink(SkyhookDatasink(store, name))``) writes with
Ray's write tasks, each storing its blocks as objects of the write, and
publishes them all in one commit at the end: a failed task leaves nothing
(skyhook.ingest.staged_write)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from skyhook.dask import ObjectGroupReader, object_groups  # the same readers, engine-neutral
from skyhook.errors import SkyhookError
from skyhook.ingest.staged_write import StagedPart, StagedWrite, stage
from skyhook.ingest.write import WriteKeywords, WriteOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack

try:
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasink, WriteResult
except ImportError:  # pragma: no cover - the extra is not installed
    raise SkyhookError("Ray is not installed: pip install 'skyhook[ray]'") from None


class SkyhookDatasource(Datasource):
    """A dataset's objects as Ray read tasks (see the module)."""

    def __init__(self, dataset: Any, filter: pc.Expression | None = None) -> None:
        super().__init__()
        self._projection_map: dict[str, str] | None = None  # Ray's projection pushdown sets it
        self.store, self.name, self.generation = dataset.store, dataset.name, dataset.manifest.generation
        self.version = dataset.manifest.version
        self.manifest = dataset.manifest
        self.filter = filter

    def get_name(self) -> str:
        return f"Skyhook({self.name})"

    def supports_projection_pushdown(self) -> bool:
        return True

    def supports_predicate_pushdown(self) -> bool:
        return True

    def estimate_inmemory_data_size(self) -> int:
        return sum(partition.num_rows for partition in self.manifest.partitions) * max(1, len(self.manifest.schema))

    def get_read_tasks(
        self, parallelism: int, per_task_row_limit: int | None = None, data_context: Any = None
    ) -> list[ReadTask]:
        filter = self._combined_filter()
        columns = self._get_data_columns()
        if columns == []:  # a count: Ray loses the rows of blocks without columns, so one column comes
            columns = self.manifest.schema.names[:1]
        groups = object_groups(self.manifest, columns, filter, parallelism=max(1, parallelism))
        reader = ObjectGroupReader(self.store, self.name, self.generation, filter, self.version)
        by_number = {partition.number: partition for partition in self.manifest.partitions}
        tasks = []
        for numbers in groups:
            rows = sum(by_number[number].num_rows for number in numbers)
            stored = sum(by_number[number].stored_bytes for number in numbers)
            metadata = BlockMetadata(num_rows=None if filter is not None else rows, size_bytes=stored, exec_stats=None)
            tasks.append(
                ReadTask(
                    lambda numbers=numbers: [reader.table(numbers, columns)],
                    metadata,
                    per_task_row_limit=per_task_row_limit,
                )
            )
        return tasks

    def _combined_filter(self) -> pc.Expression | None:
        pushed = self.get_current_predicate()
        if pushed is None:
            return self.filter
        expression = pushed.to_pyarrow()
        return expression if self.filter is None else self.filter & expression


def read(dataset: Any, columns: list[str] | None, filter: pc.Expression | None) -> Any:
    """dataset (a skyhook Dataset) as a ray.data.Dataset; filter: the dataset's own and the caller's."""
    import ray.data

    frame = ray.data.read_datasource(SkyhookDatasource(dataset, filter))
    return frame if columns is None else frame.select_columns(list(columns))


class SkyhookDatasink(Datasink):
    """Writes a Ray dataset as dataset name of store in one commit (see the module).
    mode: "create", "overwrite" or "append"; options as Store.write_dataset's.
    The write begins when the sink is made (its checks, its generation): make
    one per write."""

    def __init__(self, store: Any, name: str, mode: str = "create", **options: Unpack[WriteKeywords]) -> None:
        self.store, self.name = store, name
        staged = StagedWrite(store.backend, name, mode, WriteOptions(**options), store.retention_seconds)
        self.target = staged.target
        self._staged: StagedWrite | None = staged  # the driver's; never sent to a task

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_staged": None}

    def get_name(self) -> str:
        return f"Skyhook({self.name})"

    def write(self, blocks: Iterable[Any], ctx: Any) -> StagedPart:
        tables = (BlockAccessor.for_block(block).to_arrow() for block in blocks)
        batches = (batch for table in tables for batch in table.to_batches())
        return stage(self.store.backend, self.target, ctx.task_idx, batches)

    def on_write_complete(self, write_result: WriteResult[StagedPart]) -> None:
        self._driver().publish(list(write_result.write_returns))

    def on_write_failed(self, error: Exception) -> None:
        self._driver().abandon()

    def _driver(self) -> StagedWrite:
        staged, self._staged = self._staged, None
        if staged is None:
            raise SkyhookError(f"this sink's write of {self.name!r} has ended (or it is a task's copy)")
        return staged


def write_dataset(frame: Any, store: Any, name: str, *, mode: str = "create", **options: Unpack[WriteKeywords]) -> Any:
    """frame (a ray.data.Dataset) written as dataset name of store in one commit; the dataset."""
    frame.write_datasink(SkyhookDatasink(store, name, mode, **options))
    return store.dataset(name)


__all__ = ["SkyhookDatasink", "SkyhookDatasource", "read", "write_dataset"]
