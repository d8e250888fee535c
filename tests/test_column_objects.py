"""Column objects (manifest version 5): a transform gathers column groups of
every partition into objects of their own and back; scans, filters and
aggregates of every projection shape (within one object, spanning objects,
no columns, computed columns), through skyhook, Arrow's dataset and DuckDB,
answer as pyarrow does before, during and after; a failed commit resumes;
fsck finds nothing orphaned; bad input changes nothing."""

from __future__ import annotations

import dataclasses

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook import TransformTarget
from skyhook.catalog.manifest import ColumnObject, Manifest
from skyhook.cli import app
from skyhook.errors import CorruptManifestError, InvalidRequestError
from support.assertions import assert_one_line_error, assert_same_table
from support.manifests import manifest_table, put_manifest_table
from support.tables import make_typed_table
from support.transform_answers import assert_answers, by_id

TABLE = make_typed_table(rows=3000)
LAYOUT = [["i32"], ["s", "f64", "d"]]
F = pc.field

# (columns, filter): in the partition's object, in one column object, spanning
# objects by projection, by filter, by both; no columns; computed columns.
SHAPES = [
    (None, None),
    (["id", "i8"], F("u16") > 100),
    (["i32"], F("i32") > 200),
    (["s", "d"], F("f64") < 0.5),
    (["id", "s"], F("i32") > 200),
    (["id"], (F("i32") > 200) & (F("s") == "fig")),
    (["id", "i32", "f64", "tags"], None),
    ([], F("i32") > 200),
    ([], None),
    ({"id": F("id"), "twice": F("i32") * 2, "s": F("s")}, F("d") > pa.scalar(10000, pa.date32())),
]


def split(store: skyhook.Store) -> skyhook.Dataset:
    """Three objects of 1,000 rows, split step by step (answers checked at every step), then one appended."""
    dataset = store.write_dataset("t", TABLE.slice(0, 2500), rows_per_object=1000)
    plan = dataset.plan_transform(TransformTarget(column_objects=LAYOUT))
    assert [step.kind for step in plan.steps] == ["stream", "commit"] * 3
    assert "column objects" in str(plan)
    for _ in range(len(plan.steps)):
        assert_answers(store, "t", TABLE.slice(0, 2500))
        plan = dataset.run_plan(plan, max_steps=1)
    assert plan.state == "done"
    return store.dataset("t").append(TABLE.slice(2500))  # an unsplit partition after the split ones


def in_order(table: pa.Table, keys: list[str] | None = None) -> pa.Table:
    """Rows by id, else by the given keys, else by every column (all sortable here)."""
    keys = ["id"] if "id" in table.column_names else table.column_names if keys is None else keys
    return table.sort_by([(key, "ascending") for key in keys]) if keys else table


def assert_shapes(dataset: skyhook.Dataset) -> None:
    for columns, filter in SHAPES:
        expected = pads.dataset(TABLE).to_table(columns=columns, filter=filter)
        actual = dataset.to_table(columns=columns, filter=filter)
        assert_same_table(in_order(actual), in_order(expected))
        assert dataset.count_rows(filter=filter) == expected.num_rows
    for keys, aggregations, filter in [
        (["s"], [("i32", "sum"), ("f64", "max"), ("id", "count")], F("d") > pa.scalar(10000, pa.date32())),
        ([], [("i32", "min"), ("u16", "mean")], None),
        (["i8"], [("id", "count")], F("s") == "fig"),
    ]:
        expected = TABLE.filter(filter) if filter is not None else TABLE
        expected = expected.group_by(keys, use_threads=False).aggregate(aggregations)
        actual = dataset.group_by(keys).aggregate(aggregations, filter=filter)
        assert_same_table(in_order(actual, keys), in_order(expected, keys))


def test_split_scans_aggregates_and_merge_back_match_pyarrow(store):
    dataset = split(store)
    manifest = store.manifest("t")
    assert [len(p.object_names) for p in manifest.partitions] == [3, 3, 3, 1]
    assert [o.columns for o in manifest.partitions[0].objects(manifest.schema.names)][1:] == [
        ("i32",),
        ("s", "f64", "d"),
    ]
    assert_answers(store, "t", TABLE)
    assert_shapes(dataset)
    designs = dataset.design()  # a row per object, each with its own columns
    assert designs.column("object").to_pylist() == [n for p in manifest.partitions for n in p.object_names]
    assert designs.column("column_groups").to_pylist()[1:3] == [[["i32"]], [["s", "f64", "d"]]]
    assert sum(designs.column("bytes").to_pylist()) == manifest.size_bytes
    # One object's columns: pushed down to that object alone (filter and projection in storage).
    dataset.to_table(columns=["i32"], filter=F("i32") > 200, pushdown=True)
    alone = dataset.last_scan.stats
    assert alone.filter_in_storage and alone.objects_read_plain == 0
    dataset.to_table(columns=["id"], filter=F("i32") > F("f64"))
    assert not dataset.last_scan.stats.filter_in_storage  # the filter spans objects: done here
    dataset.to_table(pushdown=True)
    assert alone.bytes_read * 5 < dataset.last_scan.stats.bytes_read  # i32's objects, not whole partitions
    assert store.fsck(grace_seconds=0).clean
    # Planned again: nothing left to do but the appended partition.
    assert len(store.dataset("t").plan_transform(TransformTarget(column_objects=LAYOUT)).steps) == 2
    plan = dataset.plan_transform(TransformTarget(column_objects=[]))  # merge back
    assert [step.kind for step in plan.steps] == ["stream", "commit"] * 3
    dataset.run_plan(plan)
    merged = store.manifest("t")
    assert [len(p.object_names) for p in merged.partitions] == [1, 1, 1, 1]
    assert_shapes(store.dataset("t"))
    assert store.fsck(grace_seconds=0).clean


def test_arrow_dataset_and_duckdb_read_column_objects(store):
    dataset = split(store)
    local = TABLE  # noqa: F841 - DuckDB finds it by name
    ds = dataset  # noqa: F841
    for query in [
        "SELECT id, s, i32 FROM {} WHERE i32 > 200 AND f64 < 0.5 ORDER BY id",
        "SELECT s, count(*) AS n, sum(i32) AS total FROM {} WHERE d >= DATE '1997-01-01' GROUP BY s ORDER BY s NULLS FIRST",
    ]:
        assert duckdb.sql(query.format("ds")).fetchall() == duckdb.sql(query.format("local")).fetchall()
    scanned = dataset.scanner(columns=["id", "i32", "s"], filter=F("f64") < 0.5).to_table()
    expected = pads.dataset(TABLE).to_table(columns=["id", "i32", "s"], filter=F("f64") < 0.5)
    assert_same_table(by_id(scanned), by_id(expected))
    # Arrow's own scanner over the dataset's fragments (one object scan each).
    arrow = pads.Scanner.from_dataset(dataset, columns=["id", "s"], filter=F("i32") > 200).to_table()
    assert_same_table(by_id(arrow), by_id(TABLE.filter(F("i32") > 200).select(["id", "s"])))


def test_a_failed_commit_resumes_and_leaves_nothing_behind(store, monkeypatch):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    plan = dataset.plan_transform(TransformTarget(column_objects=LAYOUT))
    original = store.backend.replace_manifest
    calls = []

    def fails_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("injected: the node went away")
        return original(*args, **kwargs)

    monkeypatch.setattr(store.backend, "replace_manifest", fails_second)
    with pytest.raises(OSError, match="injected"):
        dataset.run_plan(plan)
    assert store.plan("t", plan.id).state == "failed"
    assert_answers(store, "t", TABLE)
    monkeypatch.setattr(store.backend, "replace_manifest", original)
    assert store.resume_plan(store.plan("t", plan.id)).state == "done"
    assert [len(p.object_names) for p in store.manifest("t").partitions] == [3, 3, 3]
    assert_answers(store, "t", TABLE)
    assert store.fsck(grace_seconds=0).clean
    assert_hostile_column_objects_refused(store.manifest("t"))


def assert_hostile_column_objects_refused(manifest: Manifest) -> None:
    """A version 5 manifest whose column objects could make a reader zip the
    wrong rows or the client delete a foreign object is corrupt."""
    first, second = manifest.partitions[:2]
    extra = first.column_objects[0]
    foreign = dataclasses.replace(extra, object_name="other." + extra.object_name.split(".", 1)[1])
    mistakes = {
        "twice": dataclasses.replace(first, column_objects=(extra, extra)),
        "an object twice": dataclasses.replace(second, column_objects=first.column_objects),
        "dataset does not have": dataclasses.replace(extra, columns=("zz",)),
        "holds no columns": dataclasses.replace(extra, columns=()),
        "<dataset>": dataclasses.replace(first, column_objects=(foreign, *first.column_objects[1:])),
        "says": dataclasses.replace(first, num_rows=first.num_rows + 1),
    }
    for message, bad in mistakes.items():
        if isinstance(bad, ColumnObject):
            bad = dataclasses.replace(first, column_objects=(bad, *first.column_objects[1:]))
        partitions = (bad, *manifest.partitions[1:]) if bad.number == 0 else (first, bad, *manifest.partitions[2:])
        data = dataclasses.replace(manifest, partitions=partitions).to_bytes()
        with pytest.raises(CorruptManifestError, match=message):
            Manifest.from_bytes(data, "t")


def test_a_version_4_manifest_still_reads(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    current = manifest_table(dataset)
    metadata = {**current.schema.metadata, b"skyhook.manifest_version": b"4"}
    put_manifest_table(store, "t", current.drop_columns(["column_objects"]).replace_schema_metadata(metadata))
    assert not store.manifest("t").has_column_objects
    assert_answers(store, "t", TABLE)
    store.dataset("t").run_plan(store.dataset("t").plan_transform(TransformTarget(column_objects=LAYOUT)))
    assert_answers(store, "t", TABLE)
    assert store.fsck(grace_seconds=0).clean


def test_bad_column_objects_are_a_clear_error_and_change_nothing(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    mistakes = [
        (TransformTarget(column_objects=[["zz"]]), "no column 'zz'"),
        (TransformTarget(column_objects=[["i32"], ["i32", "s"]]), "each column once"),
        (TransformTarget(column_objects=[[]]), "non-empty"),
        (TransformTarget(column_objects="i32"), "list of lists"),
        (TransformTarget(column_objects=[["i32"]], design=skyhook.Design(sort_by="s")), "cannot sort"),
        (TransformTarget(column_objects=[["i32"]], design=skyhook.Design(column_groups=[["i32"]])), "cannot group"),
    ]
    for target, message in mistakes:
        with pytest.raises(InvalidRequestError, match=message):
            dataset.plan_transform(target)
    assert store.plans() == []
    assert_answers(store, "t", TABLE)


def test_the_command_line_plans_column_objects(store):
    store.write_dataset("t", TABLE, rows_per_object=1000)
    for args, message in [
        (("--column-objects", "i32|zz"), "no column 'zz'"),
        (("--column-objects", "i32|i32,s"), "each column once"),
        (("--column-objects", "i32", "--columns", "id", "--into", "u"), "no copied column 'i32'"),
    ]:
        failed = CliRunner().invoke(app, ["design", "plan", "t", *args, "--store", store.uri])
        assert_one_line_error(failed.exit_code, failed.stdout, failed.stderr, message)
    for layout, objects in [("i32|s,f64,d", 3), ("", 1)]:
        planned = CliRunner().invoke(app, ["design", "plan", "t", "--column-objects", layout, "--store", store.uri])
        assert planned.exit_code == 0 and "column objects" in planned.stdout, planned.output
        ran = CliRunner().invoke(app, ["design", "run", "t", "--store", store.uri])
        assert ran.exit_code == 0, ran.output
        assert [len(p.object_names) for p in store.manifest("t").partitions] == [objects] * 3
        assert_answers(store, "t", TABLE)
    assert store.fsck(grace_seconds=0).clean
