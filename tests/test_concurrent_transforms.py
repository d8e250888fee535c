"""8 reader processes, 1 transformer and 1 appender on one dataset at once:
every reader answer is a consistent snapshot (pyarrow's answer over the base
rows and some prefix of the appended batches), no query fails, no appended
row is lost, and fsck finds nothing orphaned or dangling afterwards. The
transformer changes designs, or merges column objects back and splits the
partitions into them again (appends racing both, the last one after them: a
dataset of split and whole partitions)."""

from __future__ import annotations

import multiprocessing
import time
import traceback
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import skyhook
from skyhook import TransformTarget
from support.consistency import partition_objects

READERS = 8
BASE_ROWS = 2000
BATCHES = 10
BATCH_ROWS = 60
# Readers keep what a transform replaced while they may read it (the commit protocol's retention).
RETENTION_SECONDS = 600.0
#: Compact, cluster by a key, split; in rounds while the appender runs.
TARGETS = [
    TransformTarget(rows_per_object=500),
    TransformTarget(rows_per_object=400, cluster_by="k"),
    TransformTarget(rows_per_object=150),
]
ROUNDS = 1
#: Column objects (id | k | s, batch): on a split dataset, merge back, split again.
LAYOUT = [["k"], ["s", "batch"]]
COLUMN_TARGETS = [TransformTarget(column_objects=[]), TransformTarget(column_objects=LAYOUT)]
FILTER = (pc.field("k") < 300) & (pc.field("s") != "s3")
AGGREGATE_FILTER = pc.field("k") >= 500
ONE_FILTER = pc.field("k") < 300  # over k alone: on a split dataset, a scan of k's objects
AGGREGATIONS = [("k", "sum"), ("id", "count"), ("id", "max"), ("batch", "min")]

CONTEXT = multiprocessing.get_context("forkserver")
CONTEXT.set_forkserver_preload(["skyhook", "pyarrow"])


def rows(first: int, count: int, batch: int) -> pa.Table:
    ids = range(first, first + count)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "batch": pa.array([batch] * count, pa.int32()),
            "k": pa.array([i * 7919 % 1000 for i in ids], pa.int64()),
            "s": pa.array([f"s{i % 7}" for i in ids]),
        }
    )


def appended(batch: int) -> pa.Table:
    return rows(BASE_ROWS + batch * BATCH_ROWS, BATCH_ROWS, batch)


def snapshot(prefix: int) -> pa.Table:
    """The base rows and the first prefix appended batches."""
    return pa.concat_tables([rows(0, BASE_ROWS, -1), *(appended(batch) for batch in range(prefix))])


def _answers() -> dict[str, list[Any]]:
    """Per query, pyarrow's answer over every possible snapshot."""
    tables = [snapshot(prefix) for prefix in range(BATCHES + 1)]
    return {
        "full": tables,
        "filtered": [table.filter(FILTER).select(["id", "batch", "k"]) for table in tables],
        "aggregate": [
            table.filter(AGGREGATE_FILTER).group_by([]).aggregate(AGGREGATIONS).to_pylist() for table in tables
        ],
        "count": [table.filter(FILTER).num_rows for table in tables],
        "one column": [table.filter(ONE_FILTER).select(["k"]).sort_by("k") for table in tables],
    }


def _query(dataset: skyhook.Dataset, kind: str) -> Any:
    if kind == "full":
        return dataset.to_table().sort_by("id")
    if kind == "filtered":
        return dataset.to_table(columns=["id", "batch", "k"], filter=FILTER).sort_by("id")
    if kind == "aggregate":
        return dataset.aggregate(AGGREGATIONS, filter=AGGREGATE_FILTER).to_pylist()
    if kind == "one column":
        return dataset.to_table(columns=["k"], filter=ONE_FILTER).sort_by("k")
    return dataset.count_rows(filter=FILTER)


def _read(uri: str, reader: int, start, stop, outcomes) -> None:
    """Queries until stop, each kind in turn, on the dataset opened anew or (every
    fourth query) as first opened, whose objects the transforms since retired;
    reports the snapshots seen and any failure."""
    answers, kinds = _answers(), list(_answers())
    seen, failures, queries = set(), [], 0
    try:
        with skyhook.connect(uri, retention_seconds=RETENTION_SECONDS) as store:
            start.wait(timeout=120)
            first = store.dataset("t")
            while not stop.is_set():
                kind = kinds[(reader + queries) % len(kinds)]
                queries += 1
                try:
                    answer = _query(first if queries % 4 == 0 else store.dataset("t"), kind)
                except Exception as error:  # noqa: BLE001 (every failure is reported)
                    failures.append(f"{kind}: {type(error).__name__}: {error}")
                    continue
                matches = [prefix for prefix, expected in enumerate(answers[kind]) if answer == expected]
                if matches:
                    seen.add(max(matches))
                else:
                    failures.append(f"{kind}: no snapshot gives this answer")
    except BaseException:
        failures.append(traceback.format_exc())
    outcomes.put(("reader", reader, queries, sorted(seen), failures))


def _append(uri: str, rows_per_object: int, start, outcomes, transformed) -> None:
    """Appends the batches, the last once transformed is set (if given)."""
    failures = []
    try:
        with skyhook.connect(uri, retention_seconds=RETENTION_SECONDS) as store:
            start.wait(timeout=120)
            for batch in range(BATCHES):
                if batch == BATCHES - 1 and transformed is not None:
                    transformed.wait(timeout=300)
                store.dataset("t").append(appended(batch), rows_per_object=rows_per_object)
                time.sleep(0.2)
    except BaseException:
        failures.append(traceback.format_exc())
    outcomes.put(("appender", 0, BATCHES, [], failures))


def _transform(uri: str, targets: list[TransformTarget], start, outcomes, transformed) -> None:
    failures, plans = [], 0
    try:
        with skyhook.connect(uri, retention_seconds=RETENTION_SECONDS) as store:
            start.wait(timeout=120)
            for _ in range(ROUNDS):
                for target in targets:
                    dataset = store.dataset("t")
                    plan = dataset.plan_transform(target)
                    if dataset.run_plan(plan).state != "done":
                        failures.append(f"plan {plan.id} ended {store.plan('t', plan.id).state}")
                    plans += 1
    except BaseException:
        failures.append(traceback.format_exc())
    transformed.set()
    outcomes.put(("transformer", 0, plans, [], failures))


def run_together(
    store: skyhook.Store, targets: list[TransformTarget], rows_per_object: int, last_append_after: bool
) -> None:
    """On dataset t of the base rows: the readers, the transformer (running targets)
    and the appender (batches in objects of rows_per_object, the last after the
    transforms if last_append_after) at once; every answer checked."""
    start, stop, outcomes = CONTEXT.Barrier(READERS + 3), CONTEXT.Event(), CONTEXT.Queue()
    transformed = CONTEXT.Event()
    readers = [CONTEXT.Process(target=_read, args=(store.uri, n, start, stop, outcomes)) for n in range(READERS)]
    writers = [
        CONTEXT.Process(
            target=_append,
            args=(store.uri, rows_per_object, start, outcomes, transformed if last_append_after else None),
        ),
        CONTEXT.Process(target=_transform, args=(store.uri, targets, start, outcomes, transformed)),
    ]
    for process in readers + writers:
        process.start()
    start.wait(timeout=120)
    results = [outcomes.get(timeout=300) for _ in writers]
    stop.set()
    results += [outcomes.get(timeout=120) for _ in readers]
    for process in readers + writers:
        process.join(timeout=60)
    failures = [(role, number, failure) for role, number, _, _, found in results for failure in found]
    assert failures == [], failures
    counts = {role: count for role, _, count, _, _ in results if role != "reader"}
    assert counts == {"appender": BATCHES, "transformer": ROUNDS * len(targets)}
    queries = sum(count for role, _, count, _, _ in results if role == "reader")
    seen = {prefix for role, _, _, found, _ in results if role == "reader" for prefix in found}
    # The readers answered throughout: from snapshots before, during and after the appends.
    assert queries >= 5 * READERS and len(seen) >= 3, (queries, seen)
    # Nothing lost; what the transforms replaced is collected once no kept version names it
    # (keep_versions(1): the current one only), nothing orphaned or dangling.
    store.dataset("t").keep_versions(1)
    store.collect_garbage("t")
    assert store.dataset("t").to_table().sort_by("id").equals(snapshot(BATCHES))
    named = [name for partition in store.manifest("t").partitions for name in partition.object_names]
    assert partition_objects(store, "t") == sorted(named)
    report = store.fsck(grace_seconds=0)
    assert report.clean and not report.retired and not report.in_progress, report


def test_readers_a_transformer_and_an_appender_at_once(store):
    store.write_dataset("t", snapshot(0), rows_per_object=100)
    run_together(store, TARGETS, rows_per_object=BATCH_ROWS // 2, last_append_after=False)


def test_readers_a_column_object_split_and_merge_and_an_appender_at_once(store):
    dataset = store.write_dataset("t", snapshot(0), rows_per_object=1000)
    assert dataset.run_plan(dataset.plan_transform(TransformTarget(column_objects=LAYOUT))).state == "done"
    # The first appends land on the split dataset, the merge and the split race the others.
    run_together(store, COLUMN_TARGETS, rows_per_object=BATCH_ROWS, last_append_after=True)
    # Split partitions (three objects each) and, appended after the split, whole ones (one object).
    manifest = store.manifest("t")
    objects = [len(partition.object_names) for partition in manifest.partitions]
    assert set(objects) == {1, 3} and objects[-1] == 1, objects
    assert manifest.partitions[-1].num_rows == BATCH_ROWS
    # Every query again on the final dataset: one answer, pyarrow's over everything.
    final = store.dataset("t")
    for kind, answers in _answers().items():
        assert _query(final, kind) == answers[BATCHES], kind
    final.to_table(columns=["k"], filter=ONE_FILTER, pushdown=True)  # k's objects alone, filtered in storage
    assert final.last_scan.stats.filter_in_storage and final.last_scan.stats.objects_read_plain == 0
