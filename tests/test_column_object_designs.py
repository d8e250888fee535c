"""Designs on datasets with column objects: statistics and indexes built on
the object holding each column (and used to prune whole partitions), local
transforms applied to every object of a partition, and column objects
combined with a size, a cluster and a filter-then-copy in one plan. Answers
equal pyarrow's after every step; bad combinations change nothing."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import skyhook
from skyhook import Design, TransformTarget
from skyhook.errors import InvalidRequestError, TypeMismatchError
from support.assertions import assert_same_table
from support.plan_steps import run_step_by_step
from support.tables import make_typed_table
from support.transform_answers import assert_answers, by_id

TABLE = make_typed_table(rows=3000)
LAYOUT = [["id", "i32"], ["s", "f64", "d"]]
F = pc.field


def split(store: skyhook.Store, layout: list[list[str]] = LAYOUT) -> skyhook.Dataset:
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    dataset.run_plan(dataset.plan_transform(TransformTarget(column_objects=layout)))
    return store.dataset("t")


def assert_scans(dataset: skyhook.Dataset, expected: pa.Table) -> None:
    """Scans within one object, spanning objects, and by a filter on a column object, equal pyarrow's."""
    for columns, filter in [
        (["id", "i32"], F("i32") > 100),
        (["id", "s", "u16"], F("id") < 700),
        (["id", "f64"], (F("s") == "fig") & (F("i32") < 0)),
        (None, F("d") > pa.scalar(10000, pa.date32())),
    ]:
        wanted = pads.dataset(expected).to_table(columns=columns, filter=filter)
        assert_same_table(by_id(dataset.to_table(columns=columns, filter=filter)), by_id(wanted))


def fresh(store: skyhook.Store) -> list[bool]:
    manifest = store.manifest("t")
    return [manifest.fresh_object_statistics(index) is not None for index in range(len(manifest.partitions))]


def test_statistics_and_indexes_live_in_the_object_holding_each_column(store):
    dataset = split(store)
    manifest = store.manifest("t")
    objects = [name for p in manifest.partitions for name in p.object_names]
    assert dataset.compute_statistics() == 3 and fresh(store) == [True] * 3
    designs = store.dataset("t").secondary_design()
    assert designs.column("object").to_pylist() == objects and all(designs.column("statistics").to_pylist())
    # Each partition's published row joins its objects' statistics: as pyarrow computes them.
    manifest = store.manifest("t")
    for index, partition in enumerate(manifest.partitions):
        rows = TABLE.slice(index * 1000, 1000)
        statistics = manifest.fresh_object_statistics(index)
        for column in ["id", "i32", "s", "u16", "d"]:
            assert statistics[column]["null_count"].as_py() == rows.column(column).null_count
            assert statistics[column]["min"].as_py() == pc.min(rows.column(column)).as_py()
            assert statistics[column]["max"].as_py() == pc.max(rows.column(column)).as_py()
    # A column object rewritten to the same size still makes them stale (its generation is in the tag).
    first = manifest.partitions[0]
    held = first.column_objects[0]
    bumped = replace(held, design=replace(held.design, generation=held.design.generation + 1))
    rewritten = replace(first, column_objects=(bumped, *first.column_objects[1:]))
    assert replace(manifest, partitions=(rewritten, *manifest.partitions[1:])).fresh_object_statistics(0) is None
    # A filter on a column object's column prunes the whole partition (all its objects).
    dataset = store.dataset("t")
    wanted = TABLE.filter(F("id") < 700).select(["id", "s", "u16"])
    assert_same_table(by_id(dataset.to_table(columns=["id", "s", "u16"], filter=F("id") < 700)), by_id(wanted))
    assert dataset.last_scan.stats.objects_pruned == 2
    # An index is built on the object holding its column, and answers stay pyarrow's.
    dataset.create_index("s")
    indexed = dataset.secondary_design()
    holding_s = {p.column_objects[1].object_name for p in manifest.partitions}
    assert {row["object"] for row in indexed.to_pylist() if "s" in row["indexes"]} == holding_s
    assert_scans(dataset, TABLE)
    dataset.drop_index("s")
    assert not any(dataset.secondary_design().column("indexes").to_pylist())
    with pytest.raises(TypeMismatchError, match="cannot be indexed"):
        dataset.create_index("f64")
    # Rewriting one column object makes its partition's statistics stale, not the others'.
    dataset.transform(Design(compression="zstd"), objects=[manifest.partitions[1].column_objects[0].object_name])
    assert fresh(store) == [True, False, True]
    assert store.dataset("t").compute_statistics() == 3
    # Merged back: new objects, no statistics until computed again; then as an unsplit dataset's.
    store.dataset("t").run_plan(store.dataset("t").plan_transform(TransformTarget(column_objects=[])))
    assert fresh(store) == [False] * 3
    assert store.dataset("t").compute_statistics() == 3
    assert_scans(store.dataset("t"), TABLE)
    assert store.fsck(grace_seconds=0).clean


def test_local_transforms_rewrite_every_object_of_a_partition(store):
    dataset = split(store)
    before = store.manifest("t")
    design = Design(compression="lz4", column_groups=[["s"], ["f64", "d"]], row_group_size=256)
    report = dataset.transform(design)
    assert report.rewritten == 9
    manifest = store.manifest("t")
    designs = store.dataset("t").design()
    assert designs.column("object").to_pylist() == [n for p in manifest.partitions for n in p.object_names]
    assert set(designs.column("compression").to_pylist()) == {"lz4"}
    assert designs.column("column_groups").to_pylist()[1:3] == [[["id", "i32"]], [["s"], ["f64", "d"]]]
    assert sum(designs.column("bytes").to_pylist()) == manifest.size_bytes != before.size_bytes
    assert_scans(store.dataset("t"), TABLE)
    assert store.dataset("t").transform(design).rewritten == 0  # each object has its design already
    # At the client, one partition (all its objects).
    report = store.dataset("t").transform(Design(compression="zstd"), objects=[1], where="client")
    assert [result.object_name for result in report.objects if result.rewritten] == list(
        manifest.partitions[1].object_names
    )
    assert_scans(store.dataset("t"), TABLE)
    # A sort or a group spanning objects is refused before anything changes.
    before = store.manifest("t")
    for design, message in [
        (Design(sort_by="i32"), "a sort cannot reorder one object alone"),
        (Design(column_groups=[["i32", "s"]]), "spans column objects"),
        (Design(column_groups=[["zz"]]), "does not have"),
    ]:
        with pytest.raises(InvalidRequestError, match=message):
            store.dataset("t").transform(design)
    assert store.manifest("t") == before
    assert store.fsck(grace_seconds=0).clean


def test_column_objects_with_a_size_step_by_step(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    plan = dataset.plan_transform(TransformTarget(column_objects=LAYOUT, rows_per_object=500))
    text = str(plan)
    assert "all_null,tags | id,i32 | s,f64,d, in place" in text and "bytes to read" in text and plan.bytes_read > 0
    assert [step.kind for step in plan.steps] == ["stream", "commit"] * 3
    run_step_by_step(store, dataset, plan, TABLE)
    manifest = store.manifest("t")
    assert [(p.num_rows, len(p.object_names)) for p in manifest.partitions] == [(500, 3)] * 6
    assert_scans(store.dataset("t"), TABLE)
    # Planned again: every partition right-sized and in the layout.
    assert store.dataset("t").plan_transform(TransformTarget(column_objects=LAYOUT, rows_per_object=500)).steps == []
    assert store.fsck(grace_seconds=0).clean


@pytest.mark.parametrize("zorder", [False, True])
def test_column_objects_clustered_in_one_plan(store, zorder):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    keys = ["i32", "s"] if zorder else "i32"
    plan = dataset.plan_transform(
        TransformTarget(column_objects=[["i32"], ["s", "f64"]], cluster_by=keys, zorder=zorder, rows_per_object=600)
    )
    assert "cluster by" in str(plan) and "tags | i32 | s,f64" in str(plan)
    run_step_by_step(store, dataset, plan, TABLE)
    manifest = store.manifest("t")
    assert all(len(p.object_names) == 3 for p in manifest.partitions) and len(manifest.partitions) >= 4
    dataset = store.dataset("t")
    assert_scans(dataset, TABLE)
    if not zorder:  # disjoint key ranges, each partition's rows in key order in all its objects
        spans = sorted((s["min"], s["max"]) for s in manifest.statistics.field("i32").to_pylist())
        assert all(high < low for (_, high), (low, _) in zip(spans, spans[1:]))
        keys = dataset.to_table(columns=["i32"]).column("i32")
        start = 0
        for partition in manifest.partitions:
            values = keys.slice(start, partition.num_rows).drop_null().to_pylist()
            assert values == sorted(values)
            start += partition.num_rows
    narrow = F("i32") < -800
    wanted = TABLE.filter(narrow).select(["id", "s"])
    assert_same_table(by_id(dataset.to_table(columns=["id", "s"], filter=narrow)), by_id(wanted))
    assert dataset.last_scan.stats.objects_pruned >= 2
    assert store.fsck(grace_seconds=0).clean


def test_filter_then_copy_into_column_objects(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    columns = ["id", "i32", "s", "f64"]
    target = TransformTarget(filter=F("u16") > 20000, columns=columns, into="u", column_objects=[["s", "f64"]])
    plan = dataset.plan_transform(target)
    assert "column objects id,i32 | s,f64" in str(plan) and "copied into 'u'" in str(plan)
    expected = TABLE.filter(F("u16") > 20000).select(columns)
    dataset.run_plan(plan)
    copied = store.manifest("u")
    assert all(len(p.object_names) == 2 for p in copied.partitions)
    assert_answers(store, "u", expected)
    assert_scans_copied = pads.dataset(expected).to_table(columns=["id", "s"], filter=F("i32") > 0)
    assert_same_table(
        by_id(store.dataset("u").to_table(columns=["id", "s"], filter=F("i32") > 0)), by_id(assert_scans_copied)
    )
    assert_answers(store, "t", TABLE)  # the source is unchanged
    assert store.fsck(grace_seconds=0).clean


def test_combinations_that_make_no_sense_are_a_clear_error_and_change_nothing(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    for target, message in [
        (TransformTarget(column_objects=[["i32"]], design=Design(sort_by="i32")), "cannot sort one object"),
        (TransformTarget(column_objects=[["u16"]], columns=["id", "i32"], into="u"), "no copied column 'u16'"),
        (TransformTarget(column_objects=[["i32"]], filter=F("i32") > 0), "give into=NAME"),
    ]:
        with pytest.raises(InvalidRequestError, match=message):
            dataset.plan_transform(target)
    assert store.plans() == [] and store.backend.get_manifest("u") is None
    assert_answers(store, "t", TABLE)
