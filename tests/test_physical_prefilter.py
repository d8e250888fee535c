"""Storage's pre-filter on Parquet's stored integers (storage/object/physical_prefilter.h):
scans and aggregates whose filters compare integer-stored columns (ints, dates,
timestamps, decimals stored as INT32/INT64) with literals, against pyarrow
computing the same on the original table: selective, empty and everything,
nulls, several row groups, dictionary and plain pages, mixed with conjuncts it
does not understand, OR filters, literals that need rescaling, continuations;
column chunks stored all as dictionary indices (read as indices, the filter's
range decided per dictionary value), falling back to plain pages part way,
and corrupt indices."""

from __future__ import annotations

import datetime
import decimal
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyarrow.substrait as pas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skyhook
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import ScanRequest
from skyhook.rpc.result_options import ResultOptions
from support.assertions import assert_same_table
from support.damage import flip_inside_a_data_page, in_values, with_int64_patched
from support.oracle import expected
from support.parquet_pages import data_page_encodings, dictionary_throughout

F = pc.field
ROWS = 6000
D = decimal.Decimal


def dec(value: str, precision: int = 15, scale: int = 2) -> pc.Expression:
    return pc.scalar(pa.scalar(D(value), pa.decimal128(precision, scale)))


def make_table(rows: int = ROWS, seed: int = 11) -> pa.Table:
    rng = random.Random(seed)

    def maybe(value, rate=0.08):
        return None if rng.random() < rate else value

    day = datetime.date(1994, 1, 1)
    moment = datetime.datetime(2020, 1, 1)
    return pa.table(
        {
            "i8": pa.array([maybe(rng.randint(-128, 127)) for _ in range(rows)], pa.int8()),
            "i16": pa.array([rng.randint(-30000, 30000) for _ in range(rows)], pa.int16()),
            "i32": pa.array([maybe(rng.randint(-(2**31), 2**31 - 1)) for _ in range(rows)], pa.int32()),
            "i64": pa.array([rng.randint(-(2**62), 2**62) for _ in range(rows)], pa.int64()),
            "d": pa.array(
                [maybe(day + datetime.timedelta(days=rng.randint(0, 2500))) for _ in range(rows)], pa.date32()
            ),
            "dec32": pa.array([maybe(D(rng.randint(-99999, 99999)) / 1000) for _ in range(rows)], pa.decimal128(9, 3)),
            "dec64": pa.array([D(rng.randint(-(10**12), 10**12)) / 100 for _ in range(rows)], pa.decimal128(15, 2)),
            "disc": pa.array([D(rng.randint(0, 10)) / 100 for _ in range(rows)], pa.decimal128(15, 2)),
            "ts": pa.array(
                [maybe(moment + datetime.timedelta(microseconds=rng.randint(0, 10**12))) for _ in range(rows)],
                pa.timestamp("us"),
            ),
            "tsz": pa.array(
                [moment + datetime.timedelta(milliseconds=rng.randint(0, 10**10)) for _ in range(rows)],
                pa.timestamp("ms", tz="UTC"),
            ),
            "none": pa.array([None] * rows, pa.int64()),
            "s": pa.array([maybe(rng.choice(["a", "bb", "", "ünï"])) for _ in range(rows)], pa.string()),
            "f": pa.array([rng.random() for _ in range(rows)], pa.float64()),
        }
    )


TABLE = make_table()
FILTERS = {
    "dec_1pct": F("dec64") >= dec("9800000000.00"),
    "dec_0pct": F("dec64") > dec("10000000000.00"),
    "dec_100pct": F("dec64") >= dec("-10000000000.00"),
    "q6_like": (F("d") >= pa.scalar(datetime.date(1995, 1, 1)))
    & (F("d") < pa.scalar(datetime.date(1996, 1, 1)))
    & (F("disc") >= dec("0.05"))
    & (F("disc") <= dec("0.07"))
    & (F("dec32") < pc.scalar(pa.scalar(D("-80.000"), pa.decimal128(9, 3)))),
    "int8_eq": F("i8") == pa.scalar(5, pa.int8()),
    "int8_ne": (F("i8") != pa.scalar(5, pa.int8())) & (F("i16") < pa.scalar(-29000, pa.int16())),
    "int32_negative": F("i32") < pa.scalar(-(2**31) + 2**25, pa.int32()),
    "int64_between": (F("i64") > pa.scalar(2**61, pa.int64())) & (F("i64") <= pa.scalar(2**61 + 2**57, pa.int64())),
    "literal_first": pa.scalar(-29500, pa.int16()) > F("i16"),
    "timestamp": F("ts") < pa.scalar(datetime.datetime(2020, 1, 3), pa.timestamp("us")),
    "timestamp_tz": F("tsz")
    >= pa.scalar(datetime.datetime(2020, 4, 20, tzinfo=datetime.timezone.utc), pa.timestamp("ms", tz="UTC")),
    "all_null": F("none") > pa.scalar(0, pa.int64()),
    "with_string": (F("dec32") > pc.scalar(pa.scalar(D("90.000"), pa.decimal128(9, 3)))) & (F("s") == "bb"),
    "with_arithmetic": (F("i16") < pa.scalar(-25000, pa.int16())) & ((F("f") * 2) > 1.5),
    "or_falls_back": (F("dec64") >= dec("9800000000.00")) | (F("i16") < pa.scalar(-29900, pa.int16())),
    "rescaled_exact": F("dec64") >= dec("9800000000.0", 14, 1),
    "rescaled_inexact_up": F("dec64") > dec("9800000000.005", 16, 3),
    "rescaled_inexact_eq": F("dec64") == dec("9800000000.005", 16, 3),
    "rescaled_negative": (F("dec32") <= pc.scalar(pa.scalar(D("-99.9005"), pa.decimal128(12, 4)))),
    "null_literal": F("i16") < pa.scalar(None, pa.int16()),
    "empty_range": (F("i16") > pa.scalar(100, pa.int16())) & (F("i16") < pa.scalar(50, pa.int16())),
}


@pytest.fixture(scope="module")
def dataset(module_store):
    # Three objects of four row groups each (the last two smaller).
    return module_store.write_dataset("prefilter", TABLE, rows_per_object=2500, row_group_size=700)


@pytest.mark.parametrize("name", FILTERS)
def test_scan_matches_pyarrow(dataset, name):
    columns = ["i8", "i32", "d", "dec32", "dec64", "ts", "tsz", "none", "s"]
    result = dataset.to_table(columns=columns, filter=FILTERS[name], pushdown=True)
    assert_same_table(result, expected(TABLE, columns, FILTERS[name]))


def test_every_row_counts_as_scanned(dataset):
    """Zones the pre-filter keeps nothing of, after the last kept row too, were scanned."""
    key = TABLE.column("i64")[7].as_py()  # one row, in the first row group
    scanner = dataset.scanner(filter=F("i64") == key, pushdown=True)
    assert_same_table(scanner.to_table(), TABLE.filter(F("i64") == key))
    assert scanner.stats.rows_scanned == TABLE.num_rows


@pytest.mark.parametrize("name", ["q6_like", "dec_1pct", "dec_0pct", "or_falls_back", "all_null"])
def test_aggregate_matches_pyarrow(dataset, name):
    revenue = F("dec64") * F("disc")
    result = dataset.group_by([]).aggregate([(revenue, "sum", "revenue"), ("i8", "count")], filter=FILTERS[name])
    kept = TABLE.filter(FILTERS[name])
    want = pc.sum(pc.multiply(kept.column("dec64"), kept.column("disc"))).as_py()
    assert result.column("revenue")[0].as_py() == want
    assert result.column("i8_count")[0].as_py() == pc.count(kept.column("i8")).as_py()


def test_plain_and_dictionary_pages(module_store):
    """A column of distinct int64s outgrows its dictionary within the row
    group: its pages turn plain part way."""
    rows = 200_000
    table = pa.table(
        {
            "k": pa.array(random.Random(5).sample(range(10**12), rows), pa.int64()),
            "g": pa.array([i % 7 for i in range(rows)], pa.int32()),
        }
    )
    ds = module_store.write_dataset("pages", table, rows_per_object=rows, row_group_size=rows)
    for filter in (
        F("k") < pa.scalar(10**10, pa.int64()),
        (F("g") == 3) & (F("k") > pa.scalar(99 * 10**10)),
        F("g") != 3,  # keeps most rows: read plainly after the first rows
    ):
        assert_same_table(ds.to_table(filter=filter, pushdown=True), expected(table, None, filter))


def test_corrupt_pages_and_decimals_are_corrupt_objects(store):
    """A flipped bit in a filter column's page or a gathered column's is an
    error on the pre-filter's path as on Arrow's."""
    rows = 20_000
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "v": pa.array([(i * 7919) % rows for i in range(rows)], pa.int64()),
            "d": pa.array([D(i % 1000) / 100 for i in range(rows)], pa.decimal128(15, 2)),
        }
    )
    dataset = store.write_dataset("damaged", table, rows_per_object=rows, compression="none")
    name = dataset.manifest.partitions[0].object_name
    original = store.backend.read_object(name).to_pybytes()
    for column in ("v", "d"):
        damaged = flip_inside_a_data_page(original, column)
        store.backend.put_object(name, pa.py_buffer(damaged), {"skyhook.format": "parquet"})
        for filter in (F("v") < pa.scalar(100, pa.int64()), F("d") == dec("3.21")):
            with pytest.raises(skyhook.CorruptObjectError, match=name):
                dataset.to_table(filter=filter, pushdown=True)
    store.backend.put_object(name, pa.py_buffer(original), {"skyhook.format": "parquet"})
    assert_same_table(
        dataset.to_table(filter=F("d") == dec("3.21"), pushdown=True), expected(table, None, F("d") == dec("3.21"))
    )


def test_a_decimal_beyond_its_precision_is_a_corrupt_object(store):
    rows = 3000
    table = pa.table({"d": pa.array([D(i) / 100 for i in range(rows)], pa.decimal128(15, 2))})
    dataset = store.write_dataset("beyond", table)
    name = dataset.manifest.partitions[0].object_name
    damaged = with_int64_patched(table, rows - 1, 10**15)
    store.backend.put_object(name, pa.py_buffer(damaged), {"skyhook.format": "parquet"})
    with pytest.raises(skyhook.CorruptObjectError, match="precision"):
        dataset.to_table(filter=F("d") < dec("0.10"), pushdown=True)


def test_empty_object(module_store):
    ds = module_store.write_dataset("empty_prefilter", TABLE.slice(0, 0))
    assert ds.to_table(filter=FILTERS["dec_1pct"], pushdown=True).num_rows == 0


def test_continued_scans_give_the_same_rows(dataset):
    """A scan started anywhere (a continuation's start_row, inside a row group
    too) returns exactly the matching rows from there on."""
    filter = FILTERS["dec_1pct"] & (F("i16") > pa.scalar(-30000, pa.int16()))
    name = dataset.manifest.partitions[0].object_name
    part = TABLE.slice(0, dataset.manifest.partitions[0].num_rows)
    request = bytes(pas.serialize_expressions([filter], ["f"], TABLE.schema))
    for start in (0, 1, 699, 700, 1234, 2100, 2499, 2500):
        got, position = [], start
        while position is not None:
            reply = decode_reply(
                dataset.store.backend.call(
                    name, "scan", ScanRequest(filter=request, result=ResultOptions(start_row=position)).encode()
                )
            )
            reply.raise_for_status("scan")
            got.append(reply.reader().read_all())
            # Zones whose statistics exclude the filter are not scanned.
            assert 0 <= reply.statistics["rows_scanned"] <= (reply.resume_row or part.num_rows) - position
            position = reply.resume_row
        assert pa.concat_tables(got).equals(part.slice(start).filter(filter)), start


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    conjuncts=st.lists(
        st.tuples(
            st.sampled_from(["i8", "i16", "i32", "d", "dec32", "dec64", "ts"]),
            st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
            st.integers(0, ROWS - 1),
            st.sampled_from([0, 1, -1]),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_random_comparisons(dataset, conjuncts):
    """Comparisons with the table's own values (decimal literals at another scale too)."""
    operators = {
        "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    filter = None
    for column, operator, row, rescale in conjuncts:
        value = TABLE.column(column)[row]
        if pa.types.is_decimal(value.type) and value.is_valid and rescale:
            scale = value.type.scale + rescale
            quantum = D(1).scaleb(-scale)
            shifted = value.as_py().quantize(quantum, rounding=decimal.ROUND_FLOOR) + (quantum if rescale < 0 else 0)
            value = pa.scalar(shifted, pa.decimal128(value.type.precision + 1, scale))
        term = operators[operator](F(column), pc.scalar(value))
        filter = term if filter is None else filter & term
    columns = ["i16", "dec64", "s", "d"]
    assert_same_table(dataset.to_table(columns=columns, filter=filter, pushdown=True), expected(TABLE, columns, filter))


def make_few_values_table(rows: int = 8000, seed: int = 3) -> pa.Table:
    """Columns of a few distinct values each: stored as dictionary indices."""
    rng = random.Random(seed)

    def pick(values, null_rate=0.0):
        return [None if rng.random() < null_rate else rng.choice(values) for _ in range(rows)]

    days = [datetime.date(1994, 1, 1) + datetime.timedelta(days=7 * i) for i in range(300)]
    return pa.table(
        {
            "q": pa.array(pick(range(1, 51)), pa.int32()),
            "q_null": pa.array(pick(range(1, 51), 0.1), pa.int32()),
            "n8": pa.array(pick([-128, -1, 0, 7, 127], 0.05), pa.int8()),
            "n64": pa.array(pick([-(2**62), -5, 0, 2**40, 2**62]), pa.int64()),
            "ship": pa.array(pick(days, 0.05), pa.date32()),
            "disc": pa.array(pick([D(i) / 100 for i in range(11)]), pa.decimal128(15, 2)),
            "tax": pa.array(pick([D(i) / 100 for i in range(-4, 9)], 0.1), pa.decimal128(9, 2)),
            "key": pa.array(pick(range(10**9, 10**9 + 200)), pa.int64()),
            "s": pa.array(pick(["a", "b", "c"], 0.1), pa.string()),
        }
    )


FEW = make_few_values_table()
FEW_FILTERS = {
    "q6_like": (F("ship") >= pa.scalar(datetime.date(1995, 1, 1)))
    & (F("ship") < pa.scalar(datetime.date(1996, 1, 1)))
    & (F("disc") >= dec("0.05"))
    & (F("disc") <= dec("0.07"))
    & (F("q") < 24),
    "ints_with_nulls": (F("q_null") >= 10) & (F("q_null") <= 12),
    "narrow_ne": (F("n8") != pa.scalar(0, pa.int8())) & (F("n8") < pa.scalar(100, pa.int8())),
    "int64_extremes": F("n64") <= pa.scalar(-5, pa.int64()),
    "decimal_int32_nulls": F("tax") < dec("0.00", 9, 2),
    "rescaled": F("disc") > dec("0.045", 16, 3),
    "every_value_passes": F("disc") >= dec("0.00"),
    "no_value_passes": F("q") > 50,
    "nulls_never_pass": F("q_null") != 1000,
    "one_value": F("key") == pa.scalar(10**9 + 17, pa.int64()),
}


def stored_chunks(store, dataset, column: str) -> list[tuple[bytes, pq.ColumnChunkMetaData]]:
    """Each stored object's bytes with each of its chunks of the column."""
    chunks = []
    for partition in dataset.manifest.partitions:
        data = store.backend.read_object(partition.object_name).to_pybytes()
        metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
        index = metadata.schema.to_arrow_schema().get_field_index(column)
        chunks += [(data, metadata.row_group(g).column(index)) for g in range(metadata.num_row_groups)]
    return chunks


@pytest.fixture(scope="module")
def few_dataset(module_store):
    return module_store.write_dataset("few_values", FEW, rows_per_object=3000, row_group_size=3000)


def test_few_values_are_stored_as_dictionary_indices(module_store, few_dataset):
    """The path the tests below take: every filter column chunk all indices,
    with a dictionary small enough to filter on (stored bytes up to one a row)."""
    for column in ("q", "q_null", "n8", "n64", "ship", "disc", "tax", "key"):
        for data, chunk in stored_chunks(module_store, few_dataset, column):
            assert dictionary_throughout(data, chunk), column
            assert chunk.data_page_offset - chunk.dictionary_page_offset <= chunk.num_values, column


@pytest.mark.parametrize("name", FEW_FILTERS)
def test_dictionary_filter_columns_match_pyarrow(few_dataset, name):
    columns = ["key", "q_null", "n8", "n64", "ship", "disc", "tax", "s"]
    result = few_dataset.to_table(columns=columns, filter=FEW_FILTERS[name], pushdown=True)
    assert_same_table(result, expected(FEW, columns, FEW_FILTERS[name]))


def test_dictionary_filter_columns_aggregate_like_q6(few_dataset):
    filter = FEW_FILTERS["q6_like"]
    revenue = F("key") * F("disc")
    result = few_dataset.group_by([]).aggregate([(revenue, "sum", "revenue"), ("tax", "count")], filter=filter)
    kept = FEW.filter(filter)
    assert result.column("revenue")[0].as_py() == pc.sum(pc.multiply(kept.column("key"), kept.column("disc"))).as_py()
    assert result.column("tax_count")[0].as_py() == pc.count(kept.column("tax")).as_py()


def replace_object(store, dataset, data: bytes) -> str:
    name = dataset.manifest.partitions[0].object_name
    store.backend.put_object(name, pa.py_buffer(data), {"skyhook.format": "parquet"})
    return name


def parquet_bytes(table: pa.Table, **options) -> bytes:
    """The table as storage stores it (decimals as integers), with pyarrow's options."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, store_decimal_as_integer=True, **options)
    return sink.getvalue().to_pybytes()


def test_chunks_falling_back_to_plain_pages_part_way(store):
    """A tiny dictionary page limit: each chunk's first pages are indices, the
    rest plain (read as values, not indices), in every row group."""
    rows = 8000
    rng = random.Random(9)
    table = pa.table(
        {
            "v": pa.array([None if rng.random() < 0.05 else rng.randint(0, 3000) for _ in range(rows)], pa.int32()),
            "d": pa.array([D(rng.randint(-5000, 5000)) / 100 for _ in range(rows)], pa.decimal128(15, 2)),
            "k": pa.array(range(rows), pa.int64()),
        }
    )
    dataset = store.write_dataset("fallback", table, rows_per_object=rows)
    replace_object(
        store,
        dataset,
        parquet_bytes(table, row_group_size=2000, dictionary_pagesize_limit=256, data_page_size=512, compression="lz4"),
    )
    for column in ("v", "d", "k"):
        for data, chunk in stored_chunks(store, dataset, column):
            encodings = data_page_encodings(data, chunk)
            assert encodings[0] == "RLE_DICTIONARY" and encodings[-1] == "PLAIN", (column, encodings)
    for filter in (
        F("v") < 40,
        (F("d") >= dec("10.00")) & (F("d") < dec("11.00")),
        (F("v") > 2990) & (F("k") != pa.scalar(5, pa.int64())),
    ):
        assert_same_table(dataset.to_table(filter=filter, pushdown=True), expected(table, None, filter))


def test_dictionary_and_plain_row_groups_in_one_object(store):
    """Row groups of few values (indices) and of many (plain pages) in one object."""
    rows = 6000
    few = [i % 7 for i in range(rows // 2)]
    many = random.Random(2).sample(range(10**6), rows // 2)
    table = pa.table({"v": pa.array(few + many, pa.int64()), "k": pa.array(range(rows), pa.int32())})
    dataset = store.write_dataset("mixed_groups", table, rows_per_object=rows)
    replace_object(store, dataset, parquet_bytes(table, row_group_size=rows // 2, dictionary_pagesize_limit=4096))
    chunks = stored_chunks(store, dataset, "v")
    assert [dictionary_throughout(*chunk) for chunk in chunks] == [True, False]
    for filter in (F("v") == pa.scalar(3, pa.int64()), F("v") < pa.scalar(1000, pa.int64())):
        assert_same_table(dataset.to_table(filter=filter, pushdown=True), expected(table, None, filter))


@pytest.mark.parametrize("column", ["v", "p"])
def test_dictionary_index_out_of_range_is_a_corrupt_object(store, column):
    """An index past its dictionary, in a filter column or a gathered one: a
    corrupt object naming the column, never a crash."""
    rows = 6000  # a multiple of 8: the last bit-packed group holds no padding
    table = pa.table(
        {
            "v": pa.array([i % 3 for i in range(rows)], pa.int64()),
            "p": pa.array([D(i % 3) / 10 for i in range(rows)], pa.decimal128(9, 1)),
        }
    )
    dataset = store.write_dataset("bad_indices", table, rows_per_object=rows)
    original = parquet_bytes(table, compression="none", write_statistics=False)
    metadata = pq.ParquetFile(pa.BufferReader(original)).metadata.row_group(0)
    assert all(dictionary_throughout(original, metadata.column(i)) for i in range(2))
    damaged = bytearray(original)
    # Three values, two bits each: 0xFF makes four indices 3.
    damaged[in_values(original, 0, table.schema.get_field_index(column))] = 0xFF
    name = replace_object(store, dataset, bytes(damaged))
    with pytest.raises(skyhook.CorruptObjectError, match=f"{name}.*dictionary index out of range in column {column}"):
        dataset.to_table(filter=F("v") == pa.scalar(1, pa.int64()), pushdown=True)
