"""Distributed transforms (compact, split, cluster by a key, filter-then-copy)
as persisted plans: the dataset answers as pyarrow does before, between steps
and after; appends racing a plan are kept; a killed run resumes and leaves
nothing behind after fsck; bad input changes nothing."""

from __future__ import annotations

import pickle
import random
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook import TransformTarget
from skyhook.cli import app
from skyhook.errors import DatasetChangedError, DatasetExistsError, InvalidRequestError
from support.assertions import assert_same_table
from support.plan_steps import run_step_by_step
from support.scans import pushed_down
from support.tables import make_typed_table
from support.transform_answers import assert_answers, by_id

TABLE = make_typed_table(rows=3000)


def many_small_objects(store: skyhook.Store) -> skyhook.Dataset:
    """One right-sized object (1,000 rows), then 10 appended objects of 200 rows."""
    store.write_dataset("t", TABLE.slice(0, 1000), rows_per_object=1000)
    return store.dataset("t").append(TABLE.slice(1000), rows_per_object=200)


def assert_no_orphans(store: skyhook.Store) -> None:
    report = store.fsck(grace_seconds=0)
    assert report.clean, report


def test_compaction_merges_small_objects_and_leaves_right_sized_ones_in_place(store):
    many_small_objects(store).compute_statistics()
    dataset = store.dataset("t")
    kept = dataset.manifest.partitions[0].object_name
    pickled = pickle.dumps(dataset)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=1000))
    text = str(plan)
    assert "bytes to read" in text and "estimated" in text and plan.bytes_read > 0
    # Two groups of five small objects, each streamed then committed; the big one is not a source.
    assert [step.kind for step in plan.steps] == ["stream", "commit"] * 2
    assert kept not in {name for step in plan.steps for name in step.sources}
    assert store.plans("t")[0].id == plan.id and store.plans("t")[0].state == "planned"
    run_step_by_step(store, dataset, plan, TABLE)
    after = store.manifest("t")
    assert [p.num_rows for p in after.partitions] == [1000, 1000, 1000]
    assert after.partitions[0].object_name == kept  # never copied
    # The kept object keeps its published statistics; the new ones have none yet.
    assert after.fresh_object_statistics(0) is not None
    assert [after.fresh_object_statistics(n) for n in (1, 2)] == [None, None]
    # A dataset pickled before names objects retired since: it reads its version (kept), exactly;
    # once that version is no longer kept, refused, not read wrong.
    assert_same_table(by_id(pickle.loads(pickled).to_table()), by_id(TABLE))
    store.dataset("t").keep_versions(1)
    store.collect_garbage()
    with pytest.raises(DatasetChangedError, match="pickled, or transformed"):
        pickle.loads(pickled)
    assert_no_orphans(store)
    # Planned again: nothing left to do.
    assert store.dataset("t").plan_transform(TransformTarget(rows_per_object=1000)).steps == []


def test_a_large_object_is_split(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=3000)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=700, design=skyhook.Design("ipc")))
    run_step_by_step(store, dataset, plan, TABLE)
    partitions = store.manifest("t").partitions
    assert [p.num_rows for p in partitions] == [600] * 5
    assert {p.design.format for p in partitions} == {"ipc"}
    assert_no_orphans(store)


@pytest.mark.parametrize("key", ["s", "d", "i32", "f64"])  # f64: NaNs, in the last range
def test_cluster_by_key(store, key):
    dataset = store.write_dataset("t", TABLE, rows_per_object=500)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=1000, cluster_by=key))
    # Small: every range in one pass over the sources.
    assert [step.kind for step in plan.steps] == ["stream", "commit"] and len(plan.steps[0].ranges()) >= 3
    run_step_by_step(store, dataset, plan, TABLE)
    manifest = store.manifest("t")
    # Each object one key range, sorted inside: ranges do not overlap, nulls in the last.
    ranges = manifest.statistics.field(key)
    minimums, maximums = ranges.field("min").to_pylist(), ranges.field("max").to_pylist()
    present = [(low, high) for low, high in zip(minimums, maximums) if low is not None]
    assert all(present[i][1] < present[i + 1][0] for i in range(len(present) - 1))
    assert ranges.field("null_count").to_pylist()[:-1] == [0] * (len(minimums) - 1)
    for partition in manifest.partitions:
        assert [k.column for k in partition.design.sort_by] == [key]
    # A key-range query now reads one or two objects, not all.
    middle = sorted(v for v in TABLE.column(key).to_pylist() if v is not None)[TABLE.num_rows // 2]
    scan = store.dataset("t").scanner(filter=pc.field(key) == pc.scalar(middle))
    assert_same_table(by_id(scan.to_table()), by_id(TABLE.filter(pc.field(key) == pc.scalar(middle))))
    assert scan.stats.objects_pruned >= len(manifest.partitions) - 2
    assert_no_orphans(store)


@pytest.mark.parametrize("keys", [("f64", "s"), ("dec", "ts"), ("d", "i32", "u16")])
def test_zorder_cluster_keeps_every_row_of_every_type(store, keys):
    """Nulls, NaNs, decimals, timestamps, strings: the Z-order cluster's answers are pyarrow's."""
    dataset = store.write_dataset("t", TABLE, rows_per_object=500)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=700, cluster_by=list(keys), zorder=True))
    assert "in Z-order" in str(plan) and plan.steps[-1].kind == "commit"
    run_step_by_step(store, dataset, plan, TABLE)
    assert len(store.manifest("t").partitions) >= 3
    assert_no_orphans(store)


def box_table(rows: int) -> pa.Table:
    rng = random.Random(5)
    start = pa.scalar(0, pa.int32()).cast(pa.date32()).as_py()
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "i32": pa.array([rng.randrange(1000) for _ in range(rows)], pa.int32()),
            "x": pa.array([rng.random() * 100 for _ in range(rows)]),
            "day": pa.array([start + timedelta(days=rng.randrange(3650)) for _ in range(rows)], pa.date32()),
        }
    )


def objects_read(store: skyhook.Store, filter: pc.Expression, expected: pa.Table) -> int:
    dataset = store.dataset("t")
    scan = dataset.scanner(filter=filter)
    assert_same_table(by_id(scan.to_table()), by_id(expected.filter(filter)))
    return len(dataset.manifest.partitions) - scan.stats.objects_pruned


def test_zorder_cluster_prunes_on_either_key(store):
    table = box_table(8000)
    dataset = store.write_dataset("t", table, rows_per_object=500)
    x, day = pc.field("x"), pc.field("day")
    tenth = table["day"].sort()[800].as_py()
    slabs = [x < 10, day < pa.scalar(tenth), (x >= 30) & (x < 40), (x < 10) & (day < pa.scalar(tenth))]
    before = [objects_read(store, slab, table) for slab in slabs]
    assert before == [16] * 4  # unclustered: every object holds every key
    plan = dataset.plan_transform(TransformTarget(rows_per_object=500, cluster_by=["x", "day"], zorder=True))
    run_step_by_step(store, dataset, plan, table)
    after = [objects_read(store, slab, table) for slab in slabs]
    print(f"objects read by slabs and a box, unclustered {before}, Z-order {after}")
    # 16 objects of a 4 x 4 grid: a tenth of one key meets one column of it, a box one object or two.
    assert after[0] <= 5 and after[1] <= 5 and after[2] <= 5 and after[3] <= 2, after
    assert len(store.manifest("t").partitions) == 16
    assert_no_orphans(store)


def test_a_zorder_cell_of_identical_keys_is_cut_by_row_count(store):
    """Half the rows share both keys (a cell no halving can split): cut into
    objects near the target, which share keys at their edges, their statistics true."""
    table = box_table(6000)
    same = pa.array([i < 3000 for i in range(6000)])
    table = table.set_column(1, "i32", pc.if_else(same, pa.scalar(7, pa.int32()), table["i32"]))
    table = table.set_column(2, "x", pc.if_else(same, 0.5, table["x"]))
    dataset = store.write_dataset("t", table, rows_per_object=1000)
    plan = dataset.plan_transform(
        TransformTarget(rows_per_object=500, cluster_by=["i32", "x"], zorder=True, pass_memory=1)
    )
    run_step_by_step(store, dataset, plan, table)
    sizes = [p.num_rows for p in store.manifest("t").partitions]
    print(f"object sizes {sizes}")
    assert sizes.count(500) == 6 and max(sizes) <= 750 and sum(sizes) == 6000, sizes  # the cell: 6 x 500
    cell = (pc.field("i32") == 7) & (pc.field("x") == 0.5)
    assert objects_read(store, cell, table) == 6  # the 3,000 rows' objects and no other
    assert objects_read(store, pc.field("x") > 0.5, table) <= len(sizes) - 6
    assert_no_orphans(store)


def cluster_reads(
    store: skyhook.Store, name: str, table: pa.Table, target: TransformTarget
) -> tuple[skyhook.Plan, int]:
    """Clusters a new dataset of table by target; the plan run and the bytes its streams read in storage."""
    dataset = store.write_dataset(name, table, rows_per_object=1000)
    plan = dataset.run_plan(dataset.plan_transform(target))
    assert_answers(store, name, table)
    return plan, sum(int(step.measured["bytes_read"]) for step in plan.steps if step.kind == "stream")


@pytest.mark.parametrize("keys", [["i32"], ["i32", "x"]])
def test_a_cluster_reads_its_sources_once_per_pass(store, keys):
    """Unclustered keys (every source holds every range): a pass per range reads
    the dataset once per range, packed passes once per pass."""
    table = box_table(12_000)
    cluster = {"cluster_by": keys[0]} if len(keys) == 1 else {"cluster_by": keys, "zorder": True}
    each, each_read = cluster_reads(
        store, "each", table, TransformTarget(rows_per_object=1000, pass_memory=1, **cluster)
    )
    streams = [step for step in each.steps if step.kind == "stream"]
    ranges = len(streams)
    assert ranges >= 8 and all(len(step.ranges()) == 1 for step in streams)
    per_range = streams[0].memory
    packed, packed_read = cluster_reads(
        store, "three", table, TransformTarget(rows_per_object=1000, pass_memory=3 * per_range, **cluster)
    )
    one, one_read = cluster_reads(store, "one", table, TransformTarget(rows_per_object=1000, **cluster))
    passes = len(packed.steps) - 1
    assert passes == -(-ranges // 3) and len(one.steps) == 2 and "in one pass" in str(one)
    assert ("in Z-order" in str(one)) == (len(keys) > 1)
    assert each.bytes_read == ranges * one.bytes_read  # what plan_transform shows
    print(
        f"{ranges} ranges: bytes read in storage {each_read:,} a pass per range, {packed_read:,} in {passes}, "
        f"{one_read:,} in one"
    )
    # A filtered pass reads some chunks of these 24 KB objects twice (whole 4 KiB chunks of their checksums).
    assert 0.8 * ranges <= each_read / one_read <= 1.6 * ranges
    assert 0.8 * ranges / passes <= each_read / packed_read <= 1.6 * ranges / passes
    # Same objects either way: one per range, the same rows in each.
    for name in ("three", "one"):
        assert store.manifest(name).statistics.equals(store.manifest("each").statistics)
    assert_no_orphans(store)


def test_a_pass_holds_at_most_pass_memory_decoded_however_well_the_data_compresses(store):
    """A column a thousand times smaller stored than decoded: the passes follow its decoded bytes."""
    table = box_table(12_000).append_column("note", pa.array(["the same long note " * 20] * 12_000))
    pass_memory = table.nbytes // 4
    plan, _ = cluster_reads(
        store, "t", table, TransformTarget(rows_per_object=1000, cluster_by="i32", pass_memory=pass_memory)
    )
    streams = [step for step in plan.steps if step.kind == "stream"]
    held = [int(step.measured["selected_bytes"]) for step in streams]  # the rows each pass held, decoded
    print(f"{len(streams)} passes holding {held} bytes, pass_memory {pass_memory:,}, stored {plan.bytes_read:,}")
    assert store.manifest("t").size_bytes < pass_memory  # by stored bytes, all would be one pass
    assert len(streams) >= 4 and max(held) <= pass_memory, held
    assert all(0.8 <= step.measured["selected_bytes"] / step.memory <= 1.25 for step in streams)
    assert_no_orphans(store)


def test_filter_then_copy_with_projection_moves_only_the_subset(store):
    rng = random.Random(3)
    rows = 200_000
    big = pa.table(
        {
            "k": pa.array(range(rows)),
            "v": pa.array([rng.randrange(100) for _ in range(rows)], pa.int32()),
            "f": pa.array([rng.random() for _ in range(rows)]),
            "s": pa.array([f"row {rng.randrange(10**6)}" for _ in range(rows)]),
        }
    )
    dataset = store.write_dataset("t", big, rows_per_object=50_000)
    target = TransformTarget(filter="v < 10", columns=["k", "s"], into="copy", rows_per_object=10_000)
    plan = dataset.plan_transform(target)
    assert "copy" not in store.list_datasets()
    plan = dataset.run_plan(plan)
    expected = big.filter(pc.field("v") < 10).select(["k", "s"])
    assert_same_table(store.dataset("copy").to_table().sort_by("k"), expected)
    assert_same_table(store.dataset("t").to_table().sort_by("k"), big)  # the source is unchanged
    measured = {key: sum(step.measured.get(key, 0) for step in plan.steps) for key in plan.steps[0].measured}
    moved, decoded, selected = measured["bytes_returned"], measured["bytes_decoded"], measured["selected_bytes"]
    assert selected == expected.nbytes
    print(f"filter-then-copy moved {moved:,} bytes ({decoded:,} decoded) for a {selected:,}-byte subset")
    assert moved <= decoded <= 1.10 * selected  # loose here: the measured ratio is in the README
    assert_no_orphans(store)


def test_objects_kept_whole_are_copied_by_storage(store, monkeypatch):
    table = pa.table(
        {
            "k": pa.array(range(4000)),
            "s": pa.array([f"row {i % 97}" for i in range(4000)]),
            "v": [i % 7 for i in range(4000)],
        }
    )
    dataset = store.write_dataset("t", table, rows_per_object=1000)
    sources = [partition.object_name for partition in dataset.manifest.partitions]
    # Objects 1-3 hold only k >= 1000 (their statistics say so): copied whole; object 0 is streamed.
    plan = dataset.plan_transform(TransformTarget(filter="k >= 1000", into="copy", rows_per_object=1000))
    assert [step.kind for step in plan.steps] == ["stream", "commit", "copy", "copy", "copy", "commit"]
    assert [step.sources for step in plan.steps if step.kind == "copy"] == [[name] for name in sources[1:]]
    assert "storage to storage" in str(plan) and plan.bytes_moved < dataset.manifest.size_bytes / 3
    # What the driver reads or asks storage to scan, by object: never a copied one.
    touched: list[str] = []
    for method in ("call", "read_object", "open_object", "object_attribute"):
        original = getattr(store.backend, method)
        monkeypatch.setattr(
            store.backend, method, lambda name, *rest, _o=original: touched.append(name) or _o(name, *rest)
        )
    call_many = store.backend.call_many
    monkeypatch.setattr(
        store.backend,
        "call_many",
        lambda method, calls, *rest: call_many(method, [touched.append(c[0]) or c for c in calls], *rest),
    )
    plan = dataset.run_plan(plan)
    monkeypatch.undo()
    assert not set(sources[1:]) & set(touched), touched
    copies = [step for step in plan.steps if step.kind == "copy"]
    assert all(step.measured["bytes_returned"] == 0 for step in copies)
    expected = table.filter(pc.field("k") >= 1000)
    assert_same_table(store.dataset("copy").to_table().sort_by("k"), expected)
    assert_same_table(store.dataset("t").to_table().sort_by("k"), table)  # the source is unchanged
    for step in copies:  # the same bytes and design attribute
        (source,), (copied,) = step.sources, step.written
        assert store.backend.read_object(copied).equals(store.backend.read_object(source))
        assert store.backend.object_attribute(copied, "skyhook.design") == store.backend.object_attribute(
            source, "skyhook.design"
        )
    # A filter statistics cannot prove true of a whole object, or a projection, streams.
    for target in (TransformTarget(filter="v < 3", into="c2"), TransformTarget(columns=["k", "v"], into="c3")):
        assert "copy" not in [step.kind for step in dataset.plan_transform(target).steps]
    assert_no_orphans(store)


def test_a_copied_object_keeps_its_statistics_and_indexes(store):
    """As RADOS copy_from copies the omap, the embedded copy too: the copy's lookups use the index."""
    table = pa.table({"k": pa.array(range(4000)), "v": [i % 7 for i in range(4000)]})
    dataset = store.write_dataset("t", table, rows_per_object=1000, row_group_size=100)
    dataset.compute_statistics()
    dataset.create_index("k")
    plan = dataset.run_plan(
        dataset.plan_transform(TransformTarget(filter="k >= 1000", into="copy", rows_per_object=1000))
    )
    assert [step.kind for step in plan.steps].count("copy") == 3  # object 0 streamed, holding no row
    indexes = store.dataset("copy").secondary_design()["indexes"].to_pylist()
    assert indexes == [["k"]] * 3, indexes
    lookup = pc.field("k") == 2345
    result, stats = pushed_down(store.dataset("copy"), lookup)
    source_result, source_stats = pushed_down(dataset, lookup)
    assert_same_table(result, table.filter(lookup))
    assert_same_table(source_result, table.filter(lookup))
    assert stats.rows_read_by_index == 1 and stats.index_bytes_read > 0
    assert stats.bytes_read == source_stats.bytes_read  # the same object and index, read the same way
    assert_no_orphans(store)


def test_an_append_racing_a_plan_is_kept(store, monkeypatch):
    dataset = many_small_objects(store)
    plan = dataset.plan_transform(TransformTarget(rows_per_object=1000))
    dataset.run_plan(plan, max_steps=1)  # group 0 streamed, not committed
    extra = make_typed_table(rows=400, seed=9)
    extra = extra.set_column(0, "id", pa.array(range(3000, 3400), pa.int64()))
    store.dataset("t").append(extra.slice(0, 200), rows_per_object=100)  # between two steps
    # And one inside the commit: between its read of the manifest and its compare-and-swap.
    swap = store.backend.replace_manifest
    raced = []

    def racing_swap(name: str, data: bytes, version: object) -> bool:
        if not raced:
            raced.append(skyhook.connect(store.uri).dataset("t").append(extra.slice(200), rows_per_object=100))
        return swap(name, data, version)

    monkeypatch.setattr(store.backend, "replace_manifest", racing_swap)
    dataset.run_plan(plan)
    assert raced
    assert_answers(store, "t", pa.concat_tables([TABLE, extra]))
    assert len(store.manifest("t").partitions) == 3 + 4
    assert_no_orphans(store)


def test_a_plan_whose_sources_were_replaced_fails_cleanly(store):
    dataset = many_small_objects(store)
    first = dataset.plan_transform(TransformTarget(rows_per_object=1000))
    second = dataset.plan_transform(TransformTarget(rows_per_object=2000))
    dataset.run_plan(first)
    with pytest.raises(DatasetChangedError, match="plan again"):
        dataset.run_plan(second)
    assert store.plan("t", second.id).state == "failed"
    assert_answers(store, "t", TABLE)
    assert_no_orphans(store)


def test_bad_input_is_a_clear_error_and_changes_nothing(store):
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    store.write_dataset("other", TABLE.slice(0, 10))
    nested = [name for name in TABLE.column_names if pa.types.is_nested(TABLE.schema.field(name).type)][0]
    before = store.manifest("t")
    mistakes = [
        (TransformTarget(cluster_by="nope"), InvalidRequestError, "no column 'nope'"),
        (TransformTarget(cluster_by=nested), InvalidRequestError, "no order"),
        (TransformTarget(rows_per_object=0), InvalidRequestError, "impossible target"),
        (TransformTarget(object_size=-5), InvalidRequestError, "impossible target"),
        (TransformTarget(cluster_by="i32", pass_memory=0), InvalidRequestError, "pass_memory"),
        (TransformTarget(cluster_by="i32", pass_memory="1G"), InvalidRequestError, "pass_memory"),
        (TransformTarget(rows_per_object=10, object_size=10), InvalidRequestError, "not both"),
        (TransformTarget(filter="i32 > 0"), InvalidRequestError, "into=NAME"),
        (TransformTarget(columns=["id", "zz"], into="c"), InvalidRequestError, "no column 'zz'"),
        (TransformTarget(columns=["id"], cluster_by="s", into="c"), InvalidRequestError, "cluster key"),
        (TransformTarget(cluster_by=["i32", "s"]), InvalidRequestError, "add zorder=True"),
        (TransformTarget(cluster_by="i32", zorder=True), InvalidRequestError, "two or more"),
        (TransformTarget(cluster_by=["i32", "i32"], zorder=True), InvalidRequestError, "each key once"),
        (TransformTarget(cluster_by=["i32", nested], zorder=True), InvalidRequestError, "no order"),
        (TransformTarget(cluster_by=["i32", "zz"], zorder=True), InvalidRequestError, "no column 'zz'"),
        (TransformTarget(into="t"), InvalidRequestError, "into itself"),
        (TransformTarget(into="other"), DatasetExistsError, "exists"),
        (TransformTarget(into="bad name"), InvalidRequestError, "invalid dataset name"),
        (TransformTarget(design=skyhook.Design(sort_by=["zz"])), InvalidRequestError, "'zz'"),
        ("rows_per_object=5", InvalidRequestError, "TransformTarget"),
    ]
    for target, error, message in mistakes:
        with pytest.raises(error, match=message):
            dataset.plan_transform(target)
    assert store.plans() == []
    plan = dataset.plan_transform(TransformTarget(rows_per_object=3000))
    dataset.run_plan(plan)
    with pytest.raises(InvalidRequestError, match="is done"):
        store.resume_plan(plan)
    cancelled = store.cancel_plan(dataset.plan_transform(TransformTarget(rows_per_object=500)))
    with pytest.raises(InvalidRequestError, match="is cancelled"):
        store.resume_plan(cancelled)
    with pytest.raises(InvalidRequestError, match="max_steps"):
        dataset.run_plan(store.plans("t")[-1], max_steps=-1)
    assert_answers(store, "t", TABLE)
    assert store.manifest("other").num_rows == 10 and before.num_rows == 3000
    assert_no_orphans(store)


def skyhook_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def test_the_command_line_plans_runs_and_the_worker_resumes(store):
    many_small_objects(store)
    planned = skyhook_cli("design", "plan", "t", "--rows-per-object", "1000", "--store", store.uri)
    assert planned.exit_code == 0, planned.stderr
    assert "bytes to read" in planned.stdout and "stream" in planned.stdout
    assert_answers(store, "t", TABLE)  # planning changes nothing
    queued = skyhook_cli("design", "run", "t", "--worker", "--store", store.uri)
    assert queued.exit_code == 0 and store.plans("t")[0].state == "queued", queued.stderr
    worked = skyhook_cli("worker", "--once", "--store", store.uri)
    assert worked.exit_code == 0 and "1 plan(s) run" in worked.stdout, worked.stderr
    assert store.plans("t")[0].state == "done"
    assert_answers(store, "t", TABLE)
    status = skyhook_cli("design", "status", "t", "--store", store.uri)
    assert "done" in status.stdout and "4/4" in status.stdout, status.stdout
    for args, message in [
        (("design", "resume", "t"), "no plan that is running or paused or failed"),
        (("design", "resume", "t", "--plan", store.plans("t")[0].id), "is done"),
        (("design", "plan", "t", "--cluster-by", "nope"), "no column 'nope'"),
        (("design", "plan", "t", "--cluster-by", "i32,s"), "add zorder=True (--zorder)"),
        (("design", "plan", "t", "--rows-per-object", "0"), "impossible target"),
    ]:
        failed = skyhook_cli(*args, "--store", store.uri)
        assert failed.exit_code == 1 and "Traceback" not in failed.stderr, failed.stderr
        assert len(failed.stderr.splitlines()) == 1 and message in failed.stderr, failed.stderr
    assert len(store.plans("t")) == 1
    zorder = skyhook_cli("design", "plan", "t", "--cluster-by", "i32,d", "--zorder", "--store", store.uri)
    assert zorder.exit_code == 0 and "cluster by 'i32', 'd' in Z-order" in zorder.stdout, zorder.stderr
    assert_no_orphans(store)
