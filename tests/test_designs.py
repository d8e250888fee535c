"""Objects of different physical designs (format, column groups in their own
extents, sort order, codec) in one dataset: every read path answers as pyarrow
does over the same rows, a one-column read reads that column's extent, and
bad designs are refused before anything is written."""

from __future__ import annotations

import dataclasses
import itertools

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skyhook
from skyhook.catalog.design import DESIGN_ATTRIBUTE, ObjectDesign
from skyhook.catalog.manifest import Manifest
from support.assertions import assert_same_table
from support.manifests import manifest_table, put_manifest_table
from support.oracle import expected
from support.strategies import TABLE, filters

F = pc.field
COLUMNS = TABLE.column_names
SORTABLE = ["id", "i32", "s", "d", "f64", "b"]
_names = itertools.count()


@st.composite
def designs(draw) -> skyhook.Design:
    format = draw(st.sampled_from(["parquet", "ipc", "rows"]))
    kind = "together" if format == "rows" else draw(st.sampled_from(["together", "each", "groups"]))
    groups: object = None if kind == "together" else "each"
    if kind == "groups":  # a random partition of some of the columns; the rest form one more group
        numbers = draw(st.lists(st.integers(-1, 3), min_size=len(COLUMNS), max_size=len(COLUMNS)))
        groups = [[c for c, n in zip(COLUMNS, numbers) if n == g] for g in range(4)]
        groups = [group for group in groups if group] or None
    return skyhook.Design(
        format=format,
        column_groups=groups,
        sort_by=draw(st.lists(st.sampled_from(SORTABLE), max_size=2, unique=True)),
        compression=draw(st.sampled_from(["none", "lz4", "zstd"])),
        row_group_size=draw(st.sampled_from([64, 500, 65536])),
    )


def by_id(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


def write_mixed(store: skyhook.Store, object_designs: list[skyhook.Design], rows: int) -> skyhook.Dataset:
    """One write, then one append per further design: objects of every design."""
    name = f"mixed{next(_names)}"
    pieces = [TABLE.slice(i * rows, rows) for i in range(len(object_designs))]
    dataset = store.write_dataset(name, pieces[0], design=object_designs[0], rows_per_object=rows // 2 + 1)
    for piece, design in zip(pieces[1:], object_designs[1:]):
        dataset = dataset.append(piece, design=design)
    return dataset


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    object_designs=st.lists(designs(), min_size=1, max_size=3),
    filter=filters(),
    columns=st.lists(st.sampled_from(COLUMNS), max_size=4, unique=True),
    pushdown=st.sampled_from([True, False, "auto"]),
)
def test_random_mixes_of_designs_match_pyarrow(module_store, object_designs, filter, columns, pushdown):
    rows = TABLE.num_rows // len(object_designs)
    dataset = write_mixed(module_store, object_designs, rows)
    local = TABLE.slice(0, rows * len(object_designs))
    columns = ["id", *[c for c in columns if c != "id"]]
    options = {"pushdown": pushdown}

    assert_same_table(
        by_id(dataset.to_table(columns=columns, filter=filter, **options)), expected(local, columns, filter)
    )
    assert dataset.count_rows(filter=filter, **options) == expected(local, None, filter).num_rows
    head = dataset.head(7, columns=columns, filter=filter, **options)
    assert head.num_rows == min(7, expected(local, None, filter).num_rows)
    assert set(head.column("id").to_pylist()) <= set(expected(local, ["id"], filter).column("id").to_pylist())
    aggregated = dataset.group_by("b").aggregate(
        [("i32", "sum"), ("f32", "max"), ("id", "count")], filter=filter, **options
    )
    oracle = local.filter(filter).group_by("b").aggregate([("i32", "sum"), ("f32", "max"), ("id", "count")])
    assert_same_table(aggregated.sort_by("b"), oracle.sort_by("b"))
    arrow = pads.Scanner.from_dataset(dataset, columns=columns, filter=filter).to_table()
    assert_same_table(by_id(arrow), expected(local, columns, filter))
    query = "SELECT count(*), sum(i32), min(s) FROM {} WHERE id % 3 = 1 AND d >= DATE '1996-01-01'"
    assert duckdb.sql(query.format("dataset")).fetchall() == duckdb.sql(query.format("local")).fetchall()
    # Each object is as its design asked, whichever way it was written.
    for partition, design in zip(dataset.manifest.partitions, _designs_of_objects(dataset, object_designs)):
        assert partition.design.format == design.format and partition.design.compression == design.compression
        assert [key.column for key in partition.design.sort_by] == [key.column for key in design.sort_by]


def _designs_of_objects(dataset: skyhook.Dataset, object_designs: list[skyhook.Design]) -> list[skyhook.Design]:
    counts = [dataset.manifest.history[0][1]] if dataset.manifest.history else []
    counts += [b - a for (_, a), (_, b) in zip(dataset.manifest.history, dataset.manifest.history[1:])]
    counts.append(len(dataset.manifest.partitions) - sum(counts))
    return [design for design, count in zip(object_designs, counts) for _ in range(count)]


def test_one_column_reads_its_own_extent(store):
    rows = 200_000
    table = pa.table({name: pc.multiply(pc.random(rows), 1000) for name in ("a", "b", "f64", "c")})
    table = table.append_column("s", pa.array([str(i % 1000) for i in range(rows)]))
    dataset = store.write_dataset("t", table, design=skyhook.Design(column_groups="each"), rows_per_object=100_000)
    design = dataset.design()
    extent = sum(
        length
        for groups, lengths in zip(design.column("column_groups").to_pylist(), design.column("group_bytes").to_pylist())
        for group, length in zip(groups, lengths)
        if group == ["f64"]
    )
    in_storage = dataset.scanner(columns=["f64"], pushdown=True)
    assert_same_table(in_storage.to_table(), table.select(["f64"]))
    # The extent alone; verified reads read whole 4 KiB chunks, one shared by two reads twice.
    assert 0.9 * extent <= in_storage.stats.bytes_read <= extent + 2 * 4096 * len(dataset.manifest.partitions)
    plain = dataset.scanner(columns=["f64"], pushdown=False)
    assert_same_table(plain.to_table(), table.select(["f64"]))
    assert plain.stats.bytes_read == extent  # the extents alone, by ranged reads
    assert plain.stats.bytes_read < dataset.manifest.size_bytes / 3


@pytest.mark.parametrize(
    "design",
    [skyhook.Design("ipc", column_groups="each", compression="none"), skyhook.Design("parquet", column_groups="each")],
    ids=["ipc", "parquet"],
)
def test_storage_opens_only_the_groups_a_request_reads(store, design):
    """Scans and plans in storage read the extents of their columns (footers
    included) and not a byte of the other groups, not even their footers."""
    rows = 50_000
    table = pa.table({name: pc.multiply(pc.random(rows), 1000) for name in ("a", "b", "f64")})
    dataset = store.write_dataset("t", table, design=design, rows_per_object=25_000)
    extents = {column: 0 for column in table.column_names}
    for partition in dataset.manifest.partitions:
        for group in partition.design.column_groups:
            extents[group.columns[0]] += group.length
    # Reads are widened to whole 4 KiB chunks of the extent (its checksums'): a chunk two
    # reads share may be read twice, the tail's too; another group's footer is hundreds.
    slack = 3 * 4096 * len(dataset.manifest.partitions)

    def only(*columns: str) -> range:
        stored = sum(extents[column] for column in columns)
        return range(int(0.9 * stored), stored + slack + 1)

    one = dataset.scanner(columns=["f64"], pushdown=True)
    assert_same_table(one.to_table(), table.select(["f64"]))
    assert one.stats.bytes_read in only("f64")
    filtered = dataset.scanner(columns=["f64"], filter=F("a") < 500, pushdown=True)
    assert_same_table(filtered.to_table(), table.filter(pc.field("a") < 500).select(["f64"]))
    assert filtered.stats.bytes_read in only("f64", "a")
    execution = dataset.group_by([]).execution([("b", "sum")], pushdown=True)
    total = execution.run()
    assert total.column(0)[0].as_py() == pytest.approx(pc.sum(table.column("b")).as_py())
    assert execution.stats.aggregate_in_storage
    assert execution.stats.bytes_read in only("b")


def test_write_design_is_kept_and_used_by_appends(store):
    chosen = skyhook.Design("ipc", column_groups=[["s", "id"]], sort_by=[("id", "descending")], compression="zstd")
    dataset = store.write_dataset("t", TABLE.slice(0, 1000), design=chosen, rows_per_object=400)
    dataset = dataset.append(TABLE.slice(1000, 300))  # the write design
    dataset = dataset.append(TABLE.slice(1300, 200), format="parquet")  # shorthand for this append only
    reopened = store.dataset("t")
    assert reopened.manifest.write_design == dataset.manifest.write_design
    assert reopened.manifest.write_design.format == "ipc"
    table = reopened.design()
    assert table.column("object").to_pylist() == [p.object_name for p in reopened.manifest.partitions]
    assert table.column("format").to_pylist() == ["ipc"] * 4 + ["parquet"]
    assert table.column("column_groups").to_pylist()[0] == [["s", "id"], [c for c in COLUMNS if c not in ("s", "id")]]
    assert table.column("column_groups").to_pylist()[-1] == [COLUMNS]
    assert table.column("sort_by").to_pylist()[0] == ["id desc"]
    assert table.column("compression").to_pylist() == ["zstd"] * 4 + ["lz4"]  # the default codec
    assert table.column("rows").to_pylist() == [400, 400, 200, 300, 200]
    assert sum(table.column("bytes").to_pylist()) == reopened.manifest.size_bytes
    assert all(
        sum(lengths) == size for lengths, size in zip(table["group_bytes"].to_pylist(), table["bytes"].to_pylist())
    )
    assert_same_table(by_id(reopened.to_table()), TABLE.slice(0, 1500))


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ({"design": skyhook.Design(column_groups=[["id", "nope"]])}, "names column 'nope'"),
        ({"design": skyhook.Design(sort_by="nope")}, "names column 'nope'"),
        ({"design": skyhook.Design(), "format": "ipc"}, "not both"),
        ({"design": "parquet"}, "must be a skyhook.Design"),
        ({"format": "orc"}, "unknown format 'orc'"),
        ({"compression": "snappy"}, "unknown compression 'snappy'"),
    ],
)
def test_bad_designs_are_refused_and_store_nothing(store, arguments, problem):
    with pytest.raises(skyhook.InvalidRequestError, match=problem):
        store.write_dataset("t", TABLE.slice(0, 100), **arguments)
    assert store.list_datasets() == []
    assert [name for name in store.backend.object_names() if name.startswith("t.")] == []


@pytest.mark.parametrize(
    "arguments",
    [
        {"format": "rows", "column_groups": "each"},
        {"column_groups": [["a"], ["a"]]},
        {"column_groups": [[]]},
        {"column_groups": "some"},
        {"row_group_size": 0},
        {"sort_by": [("a", "sideways")]},
    ],
)
def test_impossible_designs_are_invalid_requests(arguments):
    with pytest.raises(skyhook.InvalidRequestError):
        skyhook.Design(**arguments)


def _rewrite_design(store: skyhook.Store, dataset: skyhook.Dataset, index: int, change) -> str:
    partition = dataset.manifest.partitions[index]
    data = store.backend.read_object(partition.object_name)
    store.backend.put_object(partition.object_name, data, {DESIGN_ATTRIBUTE: change(partition.design)})
    return partition.object_name


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda design: b"garbage", "malformed skyhook.design"),
        (lambda design: dataclasses.replace(design, num_rows=design.num_rows + 1).to_bytes(), "disagree"),
        (  # the first two groups' extents swapped: each names the other's columns
            lambda design: dataclasses.replace(
                design,
                column_groups=(
                    dataclasses.replace(design.column_groups[0], columns=design.column_groups[1].columns),
                    dataclasses.replace(design.column_groups[1], columns=design.column_groups[0].columns),
                    *design.column_groups[2:],
                ),
            ).to_bytes(),
            "disagree",
        ),
        (
            lambda design: dataclasses.replace(
                design,
                column_groups=(dataclasses.replace(design.column_groups[0], length=design.column_groups[0].length - 9),)
                + design.column_groups[1:],
            ).to_bytes(),
            "not a readable|disagree",
        ),
        (lambda design: dataclasses.replace(design, format="ipc").to_bytes(), "not a readable"),
    ],
)
def test_a_corrupt_design_attribute_is_a_corrupt_object(store, change, problem):
    dataset = store.write_dataset(
        "t", TABLE, design=skyhook.Design(column_groups=[["id", "s"], ["f64"]]), rows_per_object=500
    )
    others = {p.object_name: store.backend.read_object(p.object_name) for p in dataset.manifest.partitions[1:]}
    name = _rewrite_design(store, dataset, 0, change)
    for pushdown in (True, False):
        with pytest.raises(skyhook.CorruptObjectError, match=f"{name}.*({problem})"):
            dataset.to_table(columns=["id", "s", "f64"], pushdown=pushdown)
    assert store.manifest("t") == dataset.manifest
    assert {name: store.backend.read_object(name) for name in others} == others
    assert_same_table(dataset.to_table(filter=F("id") >= 500), TABLE.slice(500))


def test_readers_decode_by_the_object_not_the_manifest(store):
    """A transform rewrites objects, then updates the manifest: in between the
    manifest's design is stale, and reads must still be right."""
    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    rewritten = skyhook.Design("ipc", column_groups="each", sort_by="i32")
    for partition in dataset.manifest.partitions:
        rows = TABLE.slice(partition.number * 1000, 1000)
        from skyhook.backends.object_codec import encode_object

        data, attribute = encode_object(rows, ObjectDesign.request(rewritten, COLUMNS, 1).to_bytes())
        store.backend.put_object(partition.object_name, data, {DESIGN_ATTRIBUTE: attribute})
    for pushdown in (True, False):
        assert_same_table(by_id(dataset.to_table(pushdown=pushdown)), TABLE)
        assert_same_table(
            by_id(dataset.to_table(columns=["id", "dec"], pushdown=pushdown)), TABLE.select(["id", "dec"])
        )


def test_manifests_before_designs_stay_readable(store):
    """A version 2 manifest (one format, no designs) naming objects that carry
    only skyhook.format reads as objects of one extent each."""
    import pyarrow.parquet as pq

    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    for partition in dataset.manifest.partitions:
        sink = pa.BufferOutputStream()
        pq.write_table(TABLE.slice(partition.number * 1000, 1000), sink, row_group_size=300)
        store.backend.put_object(partition.object_name, sink.getvalue(), {"skyhook.format": "parquet"})
    current = manifest_table(dataset)
    metadata = dict(current.schema.metadata)
    del metadata[b"skyhook.write_design"]
    metadata.update({b"skyhook.manifest_version": b"2", b"skyhook.format": b"parquet"})
    put_manifest_table(
        store, "t", current.drop_columns(["design", "object_statistics"]).replace_schema_metadata(metadata)
    )
    legacy = store.dataset("t")
    assert legacy.design().column("compression").to_pylist() == ["unknown"] * len(legacy.manifest.partitions)
    assert legacy.manifest.write_design.format == "parquet"
    for pushdown in (True, False):
        assert_same_table(legacy.to_table(pushdown=pushdown), TABLE)
    appended = legacy.append(TABLE.slice(0, 10))
    assert Manifest.from_bytes(store.backend.get_manifest("t").data, "t").partitions[-1].design.compression == "lz4"
    assert appended.count_rows() == TABLE.num_rows + 10


def test_the_cost_model_counts_the_extents_a_read_needs(store):
    from skyhook.execution.cost import bytes_read, predicted_reply_ratio

    dataset = store.write_dataset(
        "t", TABLE, design=skyhook.Design(column_groups=[["f64"], ["s"]]), rows_per_object=500
    )
    partitions = list(dataset.manifest.partitions)
    extents = [{group.columns: group.length for group in p.design.column_groups} for p in partitions]
    assert [bytes_read(p, ["f64"]) for p in partitions] == [e[("f64",)] for e in extents]
    assert [bytes_read(p, ["s", "f64"]) for p in partitions] == [e[("f64",)] + e[("s",)] for e in extents]
    assert [bytes_read(p, None) for p in partitions] == [p.size_bytes for p in partitions]
    assert [bytes_read(p, []) for p in partitions] == [min(e.values()) for e in extents]
    decoded = sum(row["f64"]["bytes"] for row in dataset.manifest.statistics.to_pylist())
    ratio = predicted_reply_ratio(dataset.manifest, None, partitions, ["f64"]).ratio
    assert ratio == pytest.approx(decoded / sum(e[("f64",)] for e in extents))


def test_an_opened_object_reads_the_version_it_opened(store):
    """What plain reads rely on: attributes and bytes of one version, never the
    attributes of one and the bytes of another (a transform rewrites objects)."""
    from skyhook.errors import ObjectChangedError

    dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
    name = dataset.manifest.partitions[0].object_name
    before = store.backend.read_object(name)
    opened = store.backend.open_object(name)
    assert opened.size == before.size and ObjectDesign.from_bytes(opened.attributes[DESIGN_ATTRIBUTE])
    store.backend.put_object(name, pa.py_buffer(b"rewritten"), {DESIGN_ATTRIBUTE: b"other"})
    try:
        (part,) = opened.read([(0, opened.size)])
    except ObjectChangedError:  # RADOS: the version changed
        pass
    else:  # the embedded store: the file opened, renamed over since
        assert part.to_pybytes() == before.to_pybytes()
    finally:
        opened.close()


@pytest.mark.parametrize(
    "change",
    [
        lambda design, size: dataclasses.replace(design, format="orc"),
        lambda design, size: dataclasses.replace(design, num_rows=design.num_rows + 1),
        lambda design, size: dataclasses.replace(
            design, column_groups=(dataclasses.replace(design.column_groups[0], length=size + 1),)
        ),
        lambda design, size: dataclasses.replace(design, column_groups=design.column_groups[:1]),
    ],
)
def test_manifest_designs_are_checked(store, change):
    dataset = store.write_dataset("t", TABLE, design=skyhook.Design(column_groups=[["id"]]), rows_per_object=1000)
    partition = dataset.manifest.partitions[0]
    bad = dataclasses.replace(partition, design=change(partition.design, partition.size_bytes))
    manifest = dataclasses.replace(dataset.manifest, partitions=(bad, *dataset.manifest.partitions[1:]))
    with pytest.raises(skyhook.CorruptManifestError, match="partition 0 has a design"):
        Manifest.from_bytes(manifest.to_bytes(), "t")
    impossible = dataclasses.replace(dataset.manifest, write_design=change(dataset.manifest.write_design, 0))
    if impossible.write_design.request_problem(TABLE.column_names):
        with pytest.raises(skyhook.CorruptManifestError, match="write design"):
            Manifest.from_bytes(impossible.to_bytes(), "t")


def test_reads_while_objects_are_rewritten_see_one_design_or_the_other(store):
    """Objects replaced whole (bytes and design attribute, as a transform does)
    while queries run: every answer is right, none is an error."""
    import threading
    import time

    from skyhook.backends.object_codec import encode_object

    dataset = store.write_dataset("t", TABLE, rows_per_object=500)
    versions = []
    for design in (skyhook.Design(), skyhook.Design("ipc", column_groups="each", sort_by="i32", compression="lz4")):
        request = ObjectDesign.request(design, COLUMNS, 1).to_bytes()
        versions.append([encode_object(TABLE.slice(p.number * 500, 500), request) for p in dataset.manifest.partitions])
    stop = threading.Event()

    def rewrite() -> None:
        for version in itertools.cycle(versions):
            for partition, (data, attribute) in zip(dataset.manifest.partitions, version):
                if stop.is_set():
                    return
                store.backend.put_object(partition.object_name, data, {DESIGN_ATTRIBUTE: attribute})

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        deadline, queries = time.monotonic() + 4, 0
        while time.monotonic() < deadline or queries < 4:
            pushdown = queries % 2 == 0
            columns = ["id", "i32", "s"] if queries % 3 else None
            filter = F("i32") > 0
            assert_same_table(
                by_id(dataset.to_table(columns, filter, pushdown=pushdown)), expected(TABLE, columns, filter)
            )
            queries += 1
    finally:
        stop.set()
        writer.join()
