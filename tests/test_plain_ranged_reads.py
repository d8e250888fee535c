"""Plain reads of Parquet objects read as Arrow's and DuckDB's S3 readers do:
the footer from the object's tail, then only the needed columns' chunks of the
row groups whose footer statistics leave the filter able to match. Answers
are pyarrow's (nulls, NaN, decimals, zoned timestamps, dictionaries, long
strings never wrongly skipped), the bytes read are the footer and those chunks,
a damaged page of a chunk read is an error. Both backends."""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

import skyhook
from skyhook.backends.object_codec import DatasetFilter, decode_object, plan_read
from skyhook.catalog.design import DESIGN_ATTRIBUTE
from skyhook.catalog.object_format import FORMAT_ATTRIBUTE
from skyhook.execution.cost import bytes_read
from skyhook.execution.parquet_ranges import TAIL_BYTES, coalesced
from support.assertions import assert_same_table
from support.damage import in_values
from support.oracle import expected
from support.strategies import TABLE, filters

F = pc.field
#: Bytes per checksummed chunk: reads are widened to whole ones (extent_checksums.h).
CHUNK = 4096


def plain(dataset: skyhook.Dataset, filter: pc.Expression | None = None, columns: list[str] | None = None):
    """The scan's rows and statistics, every object read at the client."""
    scanner = dataset.scanner(columns=columns, filter=filter, pushdown=False)
    return scanner.to_table(), scanner.stats


def lineitem_like(rows: int) -> pa.Table:
    """16 columns of lineitem's types and shapes, sorted by l_orderkey."""
    rng = np.random.default_rng(5)
    money = pa.decimal128(15, 2)
    day = np.datetime64("1992-01-01") + rng.integers(0, 2500, rows).astype("timedelta64[D]")
    words = np.array(["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"])
    comments = np.array([f"carefully regular {w} accounts" for w in ["ideas", "pinto beans", "deposits", "foxes"]])
    return pa.table(
        {
            "l_orderkey": pa.array(np.arange(rows) // 4, pa.int64()),
            "l_partkey": pa.array(rng.integers(1, 200_000, rows), pa.int64()),
            "l_suppkey": pa.array(rng.integers(1, 10_000, rows), pa.int64()),
            "l_linenumber": pa.array(np.arange(rows) % 4 + 1, pa.int32()),
            "l_quantity": pa.array([decimal.Decimal(int(q)) for q in rng.integers(1, 51, rows)], money),
            "l_extendedprice": pa.array(
                [decimal.Decimal(int(p)) / 100 for p in rng.integers(90_000, 10_000_000, rows)], money
            ),
            "l_discount": pa.array([decimal.Decimal(int(d)) / 100 for d in rng.integers(0, 11, rows)], money),
            "l_tax": pa.array([decimal.Decimal(int(t)) / 100 for t in rng.integers(0, 9, rows)], money),
            "l_returnflag": pa.array(rng.choice(["A", "N", "R"], rows)),
            "l_linestatus": pa.array(rng.choice(["O", "F"], rows)),
            "l_shipdate": pa.array(day, pa.date32()),
            "l_commitdate": pa.array(day + rng.integers(-30, 30, rows).astype("timedelta64[D]"), pa.date32()),
            "l_receiptdate": pa.array(day + rng.integers(1, 30, rows).astype("timedelta64[D]"), pa.date32()),
            "l_shipinstruct": pa.array(rng.choice(words, rows)),
            "l_shipmode": pa.array(rng.choice(["AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "FOB", "REG AIR"], rows)),
            "l_comment": pa.array([f"{c} {i % 977}" for i, c in enumerate(rng.choice(comments, rows))]),
        }
    )


def chunk_ranges(data: bytes, columns: list[str], row_groups: list[int] | None = None) -> list[tuple[int, int]]:
    """(offset, length) of the columns' chunks in the row groups (None: all), by pyarrow's reading of the footer."""
    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
    indices = [metadata.schema.to_arrow_schema().get_field_index(name) for name in columns]
    ranges = []
    for group in range(metadata.num_row_groups) if row_groups is None else row_groups:
        for index in indices:
            chunk = metadata.row_group(group).column(index)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            ranges.append((start, chunk.total_compressed_size))
    return ranges


def footer_bytes(data: bytes) -> int:
    return int.from_bytes(data[-8:-4], "little") + 8


def widened(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges as read: whole chunks of the object's checksums."""
    return [
        (start // CHUNK * CHUNK, -(-(start + length) // CHUNK) * CHUNK - start // CHUNK * CHUNK)
        for start, length in ranges
    ]


def assert_read_chunks(read: int, data: bytes, columns: list[str], row_groups: list[int] | None = None) -> None:
    """read is at least the chunks' bytes and at most their coalesced reads (whole chunks of
    the checksums) and the tail's: the footer and the checksum table (1/1024 of the data)."""
    ranges = chunk_ranges(data, columns, row_groups)
    tail = max(min(TAIL_BYTES, len(data)) + CHUNK, footer_bytes(data) + len(data) // 1024 + 8)
    assert sum(length for _, length in ranges) <= read <= sum(length for _, length in coalesced(widened(ranges))) + tail


LINEITEM = lineitem_like(40_000)
COLUMNS = ["l_quantity", "l_extendedprice", "l_shipdate"]


def test_3_of_16_columns_read_only_their_chunks_and_the_footer(store):
    dataset = store.write_dataset("lineitem", LINEITEM, rows_per_object=LINEITEM.num_rows, row_group_size=5_000)
    partition = dataset.manifest.partitions[0]
    data = store.backend.read_object(partition.object_name).to_pybytes()
    filter = F("l_quantity") < pa.scalar(decimal.Decimal(2), pa.decimal128(15, 2))
    result, stats = plain(dataset, filter, COLUMNS)
    assert_same_table(result, expected(LINEITEM, COLUMNS, filter))
    assert_read_chunks(stats.bytes_read, data, COLUMNS)
    assert stats.bytes_read < 0.5 * len(data)
    assert stats.objects_read_plain == 1 and stats.rows_scanned == LINEITEM.num_rows
    # The cost model expects about what was read; without the manifest, the whole object.
    estimated = bytes_read(partition, COLUMNS, dataset.manifest)
    assert 0.5 * stats.bytes_read <= estimated <= 2 * stats.bytes_read
    assert bytes_read(partition, COLUMNS) == len(data)


def test_a_selective_filter_on_a_sorted_column_skips_row_groups(store):
    dataset = store.write_dataset("lineitem", LINEITEM, rows_per_object=40_000, row_group_size=2_000)
    data = store.backend.read_object(dataset.manifest.partitions[0].object_name).to_pybytes()
    narrow = (F("l_orderkey") >= 2_100) & (F("l_orderkey") < 2_200)  # rows 8,400-8,799: row group 4
    result, stats = plain(dataset, narrow, COLUMNS)
    assert_same_table(result, expected(LINEITEM, COLUMNS, narrow))
    assert stats.rows_scanned == 2_000
    read = ["l_orderkey", *COLUMNS]
    assert_read_chunks(stats.bytes_read, data, read, [4])
    everything, all_stats = plain(dataset, F("l_orderkey") >= 0, COLUMNS)
    assert_same_table(everything, expected(LINEITEM, COLUMNS, F("l_orderkey") >= 0))
    assert all_stats.rows_scanned == LINEITEM.num_rows and stats.bytes_read < all_stats.bytes_read / 5
    # Between two row groups' bounds: nothing is decoded, only the footer read.
    gap = (F("l_orderkey") > 2_499) & (F("l_orderkey") < 2_500)
    none, gap_stats = plain(dataset, gap, COLUMNS)
    assert none.num_rows == 0 and gap_stats.rows_scanned == 0 and gap_stats.bytes_read <= TAIL_BYTES + CHUNK


@pytest.fixture(scope="module")
def typed(module_store):
    return module_store.write_dataset("typed", TABLE, rows_per_object=600, row_group_size=50)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filter=filters())
def test_random_filters_over_every_type_match_pyarrow(typed, filter):
    result, _ = plain(typed, filter, ["id", "f64", "dec", "s", "tsz"])
    assert_same_table(result, expected(TABLE, ["id", "f64", "dec", "s", "tsz"], filter))


def unusual_table() -> pa.Table:
    """Values whose footer statistics are easy to misread: NaN (left out of
    bounds), a zoned timestamp, dictionaries, long strings with one prefix, nulls."""
    rows = 400
    zone = pa.timestamp("ms", tz="America/New_York")
    start = datetime.datetime(2024, 3, 10, 6, 30, tzinfo=datetime.timezone.utc)
    return pa.table(
        {
            "k": pa.array(range(rows), pa.int64()),
            "f": pa.array([math.nan if i % 7 == 0 else float(i) for i in range(rows)], pa.float64()),
            "t": pa.array([start + datetime.timedelta(minutes=i) for i in range(rows)], zone),
            "dict": pa.array([["low", "mid", "high", None][i // 100] for i in range(rows)]).dictionary_encode(),
            "long": pa.array(["x" * 3000 + f"{i:04d}" for i in range(rows)]),
            "dec": pa.array([None if i % 3 else decimal.Decimal(i) / 10 for i in range(rows)], pa.decimal128(9, 1)),
        }
    )


UNUSUAL = unusual_table()
UNUSUAL_FILTERS = [
    ~(F("f") < 5.0),
    F("f") != 14.0,
    F("f").is_nan(),
    F("f") > 390.0,
    F("t")
    > pa.scalar(datetime.datetime(2024, 3, 10, 12, 0, tzinfo=datetime.timezone.utc), pa.timestamp("ms", tz="UTC")),
    F("t") < pa.scalar(datetime.datetime(2024, 3, 10, 7, 0), pa.timestamp("ms", tz="America/New_York")),
    F("dict") == "mid",
    F("dict").is_null(),
    F("long") == "x" * 3000 + "0399",
    F("long") > "x" * 3000 + "0350",
    F("dec") >= pa.scalar(decimal.Decimal("35.0"), pa.decimal128(9, 1)),
    F("dec").is_null() & (F("k") > 395),
    # Bounds that hold every value but for NaN and nulls prove no row group whole.
    F("f") >= 0.0,
    F("dec") >= pa.scalar(decimal.Decimal("0.0"), pa.decimal128(9, 1)),
    F("k") >= 0,
]


@pytest.mark.parametrize("filter", UNUSUAL_FILTERS, ids=[str(i) for i in range(len(UNUSUAL_FILTERS))])
def test_footer_statistics_never_lose_a_row(store, filter):
    dataset = store.write_dataset("unusual", UNUSUAL, row_group_size=50)
    result, _ = plain(dataset, filter)
    assert_same_table(result, expected(UNUSUAL, None, filter))


def test_a_damaged_page_of_a_chunk_read_is_a_corrupt_object(store):
    table = LINEITEM.slice(0, 10_000)
    dataset = store.write_dataset("lineitem", table, row_group_size=2_000)
    partition = dataset.manifest.partitions[0]
    original = store.backend.read_object(partition.object_name).to_pybytes()
    index = table.schema.get_field_index("l_quantity")
    damaged = bytearray(original)
    damaged[in_values(original, 3, index)] ^= 0x01
    store.backend.put_object(
        partition.object_name, pa.py_buffer(bytes(damaged)), {DESIGN_ATTRIBUTE: partition.design.to_bytes()}
    )
    with pytest.raises(skyhook.CorruptObjectError, match=r"column 'l_quantity' of row group 3"):
        plain(dataset, None, ["l_quantity"])
    # Its row group skipped or its column not read: the damage is never read.
    keys = F("l_orderkey") < 1_000
    assert_same_table(plain(dataset, keys, ["l_quantity"])[0], expected(table, ["l_quantity"], keys))
    assert_same_table(plain(dataset, None, ["l_tax"])[0], expected(table, ["l_tax"]))


def test_an_object_smaller_than_the_tail_is_read_once(store):
    table = LINEITEM.slice(0, 3)
    dataset = store.write_dataset("tiny", table)
    size = dataset.manifest.partitions[0].size_bytes
    assert size < TAIL_BYTES
    result, stats = plain(dataset, F("l_linenumber") > 1, COLUMNS)
    assert_same_table(result, expected(table, COLUMNS, F("l_linenumber") > 1))
    assert stats.bytes_read == size


def test_a_footer_larger_than_the_tail_is_read_in_two(store):
    rows = 20_000
    table = pa.table({f"c{i}": pa.array(np.arange(rows) * (i + 1), pa.int64()) for i in range(40)})
    dataset = store.write_dataset("wide", table, row_group_size=200)
    data = store.backend.read_object(dataset.manifest.partitions[0].object_name).to_pybytes()
    assert footer_bytes(data) > TAIL_BYTES
    filter = F("c0") < 1_000
    result, stats = plain(dataset, filter, ["c3"])
    assert_same_table(result, expected(table, ["c3"], filter))
    assert stats.rows_scanned == 1_000
    assert_read_chunks(stats.bytes_read, data, ["c0", "c3"], list(range(5)))


def test_objects_written_before_designs_are_read_by_ranges_too(store):
    table = LINEITEM.slice(0, 10_000)
    dataset = store.write_dataset("legacy", table, row_group_size=2_000)
    name = dataset.manifest.partitions[0].object_name
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=2_000)
    store.backend.put_object(name, sink.getvalue(), {"skyhook.format": "parquet"})
    filter = F("l_orderkey") < 400  # row group 0
    result, stats = plain(store.dataset("legacy"), filter, COLUMNS)
    assert_same_table(result, expected(table, COLUMNS, filter))
    assert stats.rows_scanned == 2_000 and stats.bytes_read < sink.getvalue().size / 4


def test_near_ranges_are_coalesced_into_one_read():
    assert coalesced([(0, 10), (10, 5), (8_000, 100), (100_000, 10), (50, 1)]) == [(0, 8_100), (100_000, 10)]
    assert coalesced([(0, 40 << 20), (40 << 20, 10)]) == [(0, 40 << 20), (40 << 20, 10)]
    assert coalesced([(0, 40 << 20), (1 << 20, 10)]) == [(0, 40 << 20)]
    assert coalesced([]) == []


def test_a_chunk_read_partly_with_the_tail_is_joined_from_both_reads(store):
    rng = np.random.default_rng(2)
    table = pa.table({"a": rng.random(20_000), "b": rng.random(20_000)})  # incompressible: 160 KB chunks
    dataset = store.write_dataset("straddle", table, row_group_size=20_000, compression="none")
    data = store.backend.read_object(dataset.manifest.partitions[0].object_name).to_pybytes()
    [(start, length)] = chunk_ranges(data, ["b"])
    assert start < len(data) - TAIL_BYTES < start + length  # b's chunk begins before the tail, ends in it
    result, stats = plain(dataset, None, ["b"])
    assert_same_table(result, table.select(["b"]))
    assert_read_chunks(stats.bytes_read, data, ["b"])
    assert stats.bytes_read == len(data) - start // CHUNK * CHUNK  # nothing read twice


def _footer_and_object(store, dataset: skyhook.Dataset):
    """(size, design, format, [(0, the whole object)]) of the dataset's first object."""
    opened = store.backend.open_object(dataset.manifest.partitions[0].object_name)
    try:
        (data,) = opened.read([(0, opened.size)])
        return opened.size, opened.attributes.get(DESIGN_ATTRIBUTE), opened.attributes.get(FORMAT_ATTRIBUTE), data
    finally:
        opened.close()


def test_statistics_that_prove_every_row_matches_leave_no_filter_to_evaluate(store):
    dataset = store.write_dataset("lineitem", LINEITEM, row_group_size=5_000)
    size, design, format, data = _footer_and_object(store, dataset)
    price = dataset.schema.field("l_extendedprice").type

    def plan(filter):
        return plan_read(
            size, design, format, [(0, data)], COLUMNS, DatasetFilter.of(filter, dataset.schema), dataset.schema, "t"
        )

    every = F("l_extendedprice") >= pa.scalar(decimal.Decimal(0), price)
    some = F("l_extendedprice") >= pa.scalar(decimal.Decimal(50_000), price)
    assert plan(every)[2] is True and plan(some)[2] is False
    assert plan(every & (F("l_orderkey") < 2_000))[2] is False  # row group 0 proven, 1 only partly
    for filter in (every, some, every & (F("l_orderkey") < 2_000)):
        result, stats = plain(dataset, filter, COLUMNS)
        assert_same_table(result, expected(LINEITEM, COLUMNS, filter))


def test_the_core_filters_as_it_decodes_unless_a_column_has_another_type_stored(store):
    days = pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 400) for i in range(4_000)], pa.date64())
    table = pa.table({"k": pa.array(range(4_000), pa.int64()), "day": days})
    dataset = store.write_dataset("typed", table, row_group_size=1_000)
    size, design, format, data = _footer_and_object(store, dataset)
    on_k, on_day = pc.bit_wise_and(F("k"), 3) == 0, F("day") > pa.scalar(datetime.date(2024, 6, 1), pa.date64())

    def decoded(filter):
        return decode_object(
            size, design, format, [(0, data)], None, "t", None, DatasetFilter.of(filter, dataset.schema)
        )

    kept = decoded(on_k)
    assert kept.filtered and kept.rows == 4_000 and kept.table.num_rows == 1_000
    in_range = decoded((F("k") >= 100) & (F("k") < 300))  # one column read twice
    assert in_range.filtered and in_range.table.num_rows == 200
    stored_as_date32 = decoded(on_day)  # Parquet holds date64 as date32: pyarrow filters at the client
    assert not stored_as_date32.filtered and stored_as_date32.table.num_rows == 4_000
    for filter in (on_k, on_day, on_k & on_day):
        result, stats = plain(dataset, filter)
        assert_same_table(result, expected(table, None, filter))
        assert stats.rows_scanned == 4_000


def test_a_filter_that_fails_to_evaluate_is_the_callers_error(store):
    dataset = store.write_dataset("lineitem", LINEITEM.slice(0, 1_000))
    with pytest.raises(skyhook.InvalidRequestError, match="evaluating the filter .* divide by zero"):
        plain(dataset, pc.divide(F("l_linenumber"), 0) > 1, COLUMNS)
