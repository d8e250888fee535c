"""Row objects (format "rows": FlatBuffers of FlexBuffers rows, encoded by the
embedded module's encode_rows) read by storage through the normal client path:
scans with filters and projections, counts and aggregates on both backends
equal pyarrow's over the same rows; a type the codec refuses and a corrupt row
object give one clear error each."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook import _embedded
from skyhook.catalog.object_format import FORMAT_ATTRIBUTE
from support.assertions import assert_same_table
from support.tables import make_typed_table

F = pc.field
ROWS = 5000
ROWS_PER_OBJECT = 1200  # objects of several row blocks (4,096 rows each) and a partial one


def ipc_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def typed_table() -> pa.Table:
    table = make_typed_table(ROWS)
    return table.append_column("dict", pc.dictionary_encode(table["s"]))


@pytest.fixture(scope="module")
def rows_dataset(module_store: skyhook.Store) -> tuple[skyhook.Dataset, pa.Table]:
    """A dataset whose every object is rewritten as a row object with the same rows."""
    table = typed_table()
    dataset = module_store.write_dataset("rows", table, format="ipc", rows_per_object=ROWS_PER_OBJECT)
    start = 0
    for partition in module_store.manifest("rows").partitions:
        encoded = _embedded.encode_rows(ipc_stream(table.slice(start, partition.num_rows)))
        module_store.backend.put_object(partition.object_name, pa.py_buffer(encoded), {FORMAT_ATTRIBUTE: "rows"})
        start += partition.num_rows
    assert start == ROWS
    return dataset, table


SCANS = [
    (None, None),
    (["id", "s", "dec"], F("i32") > 0),
    (["ts", "tsz", "tags", "bin"], (F("s") == "apple") | F("f64").is_null()),
    (["dict", "u16", "f32"], F("d") < pa.scalar(pa.scalar(9500, pa.int32()).cast(pa.date32()))),
    (["b", "all_null", "i8"], F("id") >= 4321),
    ([], F("dec") > pa.scalar(decimal.Decimal("100.00"), pa.decimal128(12, 2))),
]


@pytest.mark.parametrize("columns, filter", SCANS)
def test_scans_equal_pyarrow(rows_dataset, columns, filter) -> None:
    dataset, table = rows_dataset
    scanner = dataset.scanner(columns=columns, filter=filter, pushdown=True)
    actual = scanner.to_table()
    expected = table.filter(filter) if filter is not None else table
    expected = expected.select(columns) if columns is not None else expected
    assert_same_table(actual, expected)
    assert scanner.stats.objects_scanned > 0  # by storage: the client cannot read row objects
    assert scanner.stats.objects_scanned + scanner.stats.objects_pruned == 5


def test_counts_equal_pyarrow(rows_dataset) -> None:
    dataset, table = rows_dataset
    assert dataset.count_rows(pushdown=True) == ROWS
    assert dataset.count_rows(filter=F("u16") < 30000, pushdown=True) == table.filter(F("u16") < 30000).num_rows


def test_aggregates_equal_pyarrow(rows_dataset) -> None:
    dataset, table = rows_dataset
    aggregations = [("dec", "sum"), ("i32", "mean"), ("f64", "max"), ("d", "min"), ("id", "count")]
    actual = dataset.group_by(["s", "b"]).aggregate(aggregations, filter=F("i8") > -50, pushdown=True)
    expected = table.filter(F("i8") > -50).group_by(["s", "b"]).aggregate(aggregations)
    order = [("s", "ascending"), ("b", "ascending")]
    assert_same_table(actual.sort_by(order), expected.select(actual.column_names).sort_by(order))


@pytest.mark.parametrize(
    "column",
    [
        pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int32())),
        pa.array([[[("a", 1)]]], pa.list_(pa.map_(pa.string(), pa.int32()))),
        pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval()),
    ],
    ids=["map", "list-of-map", "interval"],
)
def test_types_the_codec_refuses_name_the_column(column: pa.Array) -> None:
    table = pa.table({"fine": pa.array([1]), "bad": column})
    with pytest.raises(skyhook.InvalidRequestError, match=r"^column 'bad': the row format cannot store"):
        _embedded.encode_rows(ipc_stream(table))


def test_not_an_ipc_stream_is_refused() -> None:
    with pytest.raises(skyhook.InvalidRequestError, match="not an Arrow IPC stream"):
        _embedded.encode_rows(b"not arrow")


def test_corrupt_row_object_is_a_clear_error(store: skyhook.Store) -> None:
    table = make_typed_table(100)
    store.write_dataset("broken", table, format="ipc")
    (partition,) = store.manifest("broken").partitions
    encoded = bytearray(_embedded.encode_rows(ipc_stream(table)))
    encoded[len(encoded) // 2 :] = bytes(len(encoded) - len(encoded) // 2)  # its rows zeroed
    store.backend.put_object(partition.object_name, pa.py_buffer(bytes(encoded)), {FORMAT_ATTRIBUTE: "rows"})
    with pytest.raises(skyhook.CorruptObjectError, match="not a readable row object"):
        store.dataset("broken").to_table(pushdown=True)
