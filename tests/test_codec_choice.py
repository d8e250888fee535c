"""compression="auto": the codec chosen by measured cost (encoded size over
the link + decode CPU, on a sample). Constructed link rates make the choice
deterministic given the measurements: a slow link takes the smallest encoding,
a free one the fastest to decode. Ingest and local transforms (in storage)
record the codec in the objects' designs; answers equal pyarrow's. Both backends."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook.catalog.design import ObjectDesign
from skyhook.cli import app
from skyhook.ingest.codec_choice import CodecChoice, choose_codec
from support.assertions import assert_one_line_error, assert_same_table
from support.oracle import expected

SLOW, FREE = 1e5, 1e15  # bytes/s
ROWS = 20_000


@pytest.fixture(scope="module")
def table() -> pa.Table:
    rng = np.random.default_rng(13)
    return pa.table(
        {
            "k": np.arange(ROWS, dtype=np.int64),
            "flag": pa.array(rng.choice(["A", "N", "R"], ROWS)),
            "price": rng.normal(100, 30, ROWS).round(2),
            "noise": rng.random(ROWS),
        }
    )


def smallest(choice: CodecChoice) -> str:
    return min(choice.costs, key=lambda cost: cost.sample_bytes).codec


def fastest(choice: CodecChoice) -> str:
    return min(choice.costs, key=lambda cost: cost.decode_s).codec


@pytest.mark.parametrize("format", ["parquet", "ipc"])
def test_the_choice_follows_the_link(table, format):
    requested = ObjectDesign.request(skyhook.Design(format, compression="auto"), table.column_names, 0)
    slow, free = choose_codec(table, requested, SLOW), choose_codec(table, requested, FREE)
    assert slow.codec == smallest(slow) != "none"  # compressible columns: a codec pays on a slow link
    assert free.codec == fastest(free)
    assert [cost.codec for cost in slow.costs] == ["none", "lz4", "zstd"] and slow.sample_rows == 8192
    for cost in slow.costs:
        assert cost.read_s == pytest.approx(cost.sample_bytes / SLOW + cost.decode_s)
    assert str(slow).startswith(f"codec {slow.codec} (link 0 MB/s, sample of 8192 rows)")
    unknown = choose_codec(table, requested, None)
    assert not unknown.link_observed and "assumed" in str(unknown)


@pytest.mark.parametrize("link", [SLOW, FREE])
def test_auto_ingest_records_the_codec_and_reads_like_pyarrow(store, table, link):
    connection = skyhook.connect(store.uri, link_bytes_per_second=link)
    chosen: list[CodecChoice] = []
    dataset = connection.write_dataset(
        "t", table, design=skyhook.Design(compression="auto"), rows_per_object=5000, codec_chosen=chosen.append
    )
    [choice] = chosen
    assert choice.codec == (smallest(choice) if link == SLOW else fastest(choice))
    assert set(dataset.design().column("compression").to_pylist()) == {choice.codec}
    assert store.dataset("t").manifest.write_design.compression == choice.codec  # appends keep it
    assert_same_table(dataset.to_table(), table)
    assert_same_table(
        dataset.to_table(["k", "price"], "flag == 'R'"), expected(table, ["k", "price"], pc.field("flag") == "R")
    )


def test_auto_transform_converts_existing_objects_in_storage(store, table):
    store.write_dataset("t", table, compression="none", rows_per_object=5000)
    slow = skyhook.connect(store.uri, link_bytes_per_second=SLOW).dataset("t")
    choice = slow.choose_codec(skyhook.Design(compression="auto"))
    assert choice.codec == smallest(choice) != "none"
    report = slow.transform(skyhook.Design(compression="auto"))
    assert report.rewritten == 4 and report.bytes_after < report.bytes_before
    converted = store.dataset("t")
    assert set(converted.design().column("compression").to_pylist()) == {choice.codec}
    assert_same_table(converted.to_table(), table)
    assert_same_table(converted.to_table(filter="price > 120"), expected(table, None, pc.field("price") > 120))


def test_the_cli_prints_the_choice_and_converts(store, table):
    store.write_dataset("t", table, compression="none", rows_per_object=10_000)
    args = ["design", "transform", "t", "--format", "parquet", "--compression", "auto", "--store", store.uri]
    args += ["--link-bytes-per-second", str(SLOW)]  # a codec pays
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("codec ") and "  zstd: " in result.stdout and "2 of 2 objects" in result.stdout
    assert_same_table(store.dataset("t").to_table(), table)


def test_bad_values_are_one_line_errors(store, table):
    with pytest.raises(
        skyhook.InvalidRequestError, match="unknown compression 'fast'; expected one of none, lz4, zstd or auto"
    ):
        skyhook.Design(compression="fast")
    store.write_dataset("t", table.slice(0, 100))
    with pytest.raises(skyhook.InvalidRequestError, match="choose_codec takes a skyhook.Design, not str"):
        store.dataset("t").choose_codec("zstd")
    transform = ["design", "transform", "t", "--format", "parquet", "--store", store.uri]
    for args, problem in (
        (["--compression", "fast"], "unknown compression 'fast'"),
        (["--compression", "auto", "--link-bytes-per-second", "-1"], "link_bytes_per_second must be a number > 0"),
    ):
        result = CliRunner().invoke(app, transform + args)
        assert_one_line_error(result.exit_code, result.stdout, result.stderr, problem)
    assert_same_table(store.dataset("t").to_table(), table.slice(0, 100))  # nothing lost


def test_the_advisor_proposes_a_codec_change_it_estimates_pays(store, table):
    store.write_dataset("t", table, compression="none", rows_per_object=5000)
    connection = skyhook.connect(store.uri, link_bytes_per_second=SLOW)
    slow = connection.dataset("t")
    queries = [(["k"], pc.field("k") < 100), (None, pc.field("flag") == "A"), (["k", "price"], pc.field("price") > 150)]

    def replay(dataset: skyhook.Dataset) -> int:
        read = 0
        for columns, filter in queries:
            scanner = dataset.scanner(columns, filter=filter)
            assert_same_table(scanner.to_table(), expected(table, columns, filter))
            read += scanner.stats.bytes_read
        return read

    before = replay(slow)
    [codec] = [advice for advice in slow.advise() if advice.kind == "codec"]
    chosen = slow.choose_codec().codec
    assert codec.description.startswith(f"compression none -> {chosen} (Design(compression={chosen!r}))")
    assert codec.bytes_after < codec.bytes_before and codec.target is None
    assert len(slow.workload()) == len(queries)  # measuring the codec is no query of the workload
    slow.transform(skyhook.Design(compression=chosen))
    after = replay(connection.dataset("t"))
    print(
        f"codec: the queries read {before:,} -> {after:,} bytes ({before / after:.1f}x; estimated {codec.benefit:.1f}x)"
    )
    assert codec.benefit / 2 <= before / after <= codec.benefit * 2, (str(codec), before, after)
    assert not [advice for advice in connection.dataset("t").advise() if advice.kind == "codec"]


def test_an_empty_auto_write_leaves_the_choice_to_its_appends(store, table):
    empty = store.write_dataset("t", table.slice(0, 0), compression="auto")
    assert empty.manifest.write_design.compression == "auto"
    appended = store.dataset("t").append(table)
    [codec] = set(appended.design().column("compression").to_pylist())
    assert codec in ("none", "lz4", "zstd") and appended.manifest.write_design.compression == "auto"  # each measures
    assert_same_table(appended.to_table(), table)
