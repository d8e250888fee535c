"""Where a matrix's moment partials merge. Storage computes the partials of
every object either way; engine "client" merges them in this process (as any
aggregate does), engine "dask" on a Dask cluster: a task per group of objects
(about partition_bytes of them) computes that group's moments from a worker,
and the groups' moments merge split_every at a time in a tree of tasks (Chan's
formula, moments.combined), so the client receives one (groups x genes)
result however many objects, groups or workers there are. Dask's active
scheduler runs the graph: a dask.distributed Client's cluster, or its local
threads. The tasks hold the values by reference (a dataset pickles as its
store's URI, name and generation): an overwrite since is an error in them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from skyhook.dask import PARTITION_BYTES, object_groups, require_dask
from skyhook.dataset import Dataset
from skyhook.errors import InvalidRequestError
from skyhook.execution.scan_options import AggregateKeywords
from skyhook.expression.moments import Moments, combined

CLIENT = "client"
DASK = "dask"
#: Partials one merge task takes.
SPLIT_EVERY = 8

#: The moments of the selected cells in a dataset of a matrix's values (all its objects or some), recording stats.
Measure = Callable[[Dataset, list], Moments]
#: Moments and the storage statistics of the aggregates that made them.
Partial = tuple[Moments, list]


class MomentsKeywords(AggregateKeywords, total=False):
    """What computations from moments take: the aggregates' options, where the
    partials merge (engine: "client" or "dask") and dask's task size in stored bytes."""

    engine: str
    partition_bytes: int


def split_engine(options: MomentsKeywords) -> tuple[str, int, AggregateKeywords]:
    """(engine, partition_bytes, the aggregates' options), checked."""
    rest = dict(options)
    engine = rest.pop("engine", CLIENT)
    partition_bytes = rest.pop("partition_bytes", PARTITION_BYTES)
    if engine not in (CLIENT, DASK):
        raise InvalidRequestError(f"unknown engine {engine!r}; expected {CLIENT!r} or {DASK!r}")
    if not isinstance(partition_bytes, int) or isinstance(partition_bytes, bool) or partition_bytes < 1:
        raise InvalidRequestError(f"partition_bytes must be a number of bytes >= 1, not {partition_bytes!r}")
    return engine, partition_bytes, rest  # type: ignore[return-value]


def dask_moments(
    values: Dataset,
    measure: Measure,
    prune: Any,
    record: list,
    partition_bytes: int = PARTITION_BYTES,
    split_every: int = SPLIT_EVERY,
) -> Moments:
    """measure of values computed on Dask (see the module); prune: the filter
    whose statistics rule objects out before any task; the tasks' storage
    statistics are added to record."""
    moments, stats = moments_graph(values, measure, prune, partition_bytes, split_every).compute()
    record.extend(stats)
    return moments


def moments_graph(
    values: Dataset, measure: Measure, prune: Any, partition_bytes: int, split_every: int = SPLIT_EVERY
) -> Any:
    """The Dask graph (a Delayed of a Partial): partial_moments tasks, one per
    group of objects, merged_moments tasks of split_every each above them."""
    dask = require_dask("dask")
    groups = object_groups(values.manifest, None, prune, partition_bytes=partition_bytes) or [[]]
    level = [dask.delayed(partial_moments, pure=False)(values, numbers, measure) for numbers in groups]
    while len(level) > 1:
        level = [
            dask.delayed(merged_moments, pure=False)(level[at : at + split_every])
            for at in range(0, len(level), split_every)
        ]
    return level[0]


def partial_moments(values: Dataset, numbers: list[int], measure: Measure) -> Partial:
    """The moments of the objects at numbers of values (computed in storage)."""
    record: list = []
    return measure(Dataset(values.store, values.manifest.subset(numbers)), record), record


def merged_moments(parts: list[Partial]) -> Partial:
    return combined([moments for moments, _ in parts]), [stats for _, recorded in parts for stats in recorded]
