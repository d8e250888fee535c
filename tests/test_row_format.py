"""Row objects (design format "rows": FlatBuffers of FlexBuffers rows, built
by the core's one object writer) read through the normal client path, in
storage and plainly at the client: scans with filters and projections, counts
and aggregates on both backends equal pyarrow's over the same rows; a type the
codec refuses and a corrupt row object give one clear error each."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.catalog.design import DESIGN_ATTRIBUTE, ObjectDesign
from support.assertions import assert_same_table
from support.tables import make_typed_table

F = pc.field
ROWS = 5000
ROWS_PER_OBJECT = 1200  # objects of several row blocks (4,096 rows each) and a partial one


def typed_table() -> pa.Table:
    table = make_typed_table(ROWS)
    return table.append_column("dict", pc.dictionary_encode(table["s"]))


@pytest.fixture(scope="module")
def rows_dataset(module_store: skyhook.Store) -> tuple[skyhook.Dataset, pa.Table]:
    """A dataset whose every object is a row object."""
    table = typed_table()
    dataset = module_store.write_dataset("rows", table, design=skyhook.Design("rows"), rows_per_object=ROWS_PER_OBJECT)
    assert {row["format"] for row in dataset.design().to_pylist()} == {"rows"}
    return dataset, table


SCANS = [
    (None, None),
    (["id", "s", "dec"], F("i32") > 0),
    (["ts", "tsz", "tags", "bin"], (F("s") == "apple") | F("f64").is_null()),
    (["dict", "u16", "f32"], F("d") < pa.scalar(pa.scalar(9500, pa.int32()).cast(pa.date32()))),
    (["b", "all_null", "i8"], F("id") >= 4321),
    ([], F("dec") > pa.scalar(decimal.Decimal("100.00"), pa.decimal128(12, 2))),
]


@pytest.mark.parametrize("pushdown", [True, False])
@pytest.mark.parametrize("columns, filter", SCANS)
def test_scans_equal_pyarrow(rows_dataset, columns, filter, pushdown) -> None:
    dataset, table = rows_dataset
    scanner = dataset.scanner(columns=columns, filter=filter, pushdown=pushdown)
    actual = scanner.to_table()
    expected = table.filter(filter) if filter is not None else table
    expected = expected.select(columns) if columns is not None else expected
    assert_same_table(actual, expected)
    # In storage, or plainly by the same C++ reader at the client.
    read = scanner.stats.objects_scanned if pushdown else scanner.stats.objects_read_plain
    assert read > 0
    assert read + scanner.stats.objects_pruned == 5


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
def test_types_the_codec_refuses_name_the_column(store: skyhook.Store, column: pa.Array) -> None:
    table = pa.table({"fine": pa.array([1]), "bad": column})
    with pytest.raises(skyhook.InvalidRequestError, match=r"column 'bad': the row format cannot store"):
        store.write_dataset("refused", table, design=skyhook.Design("rows"))
    assert store.list_datasets() == []


def test_corrupt_row_object_is_a_clear_error(store: skyhook.Store) -> None:
    table = make_typed_table(100)
    store.write_dataset("broken", table, design=skyhook.Design("rows"))
    (partition,) = store.manifest("broken").partitions
    opened = store.backend.open_object(partition.object_name)
    (encoded,) = opened.read([(0, opened.size)])
    corrupt = bytearray(encoded.to_pybytes())
    corrupt[len(corrupt) // 2 :] = bytes(len(corrupt) - len(corrupt) // 2)  # its rows zeroed
    design = opened.attributes[DESIGN_ATTRIBUTE]
    opened.close()
    # Its checksum says so first; without checksums (an object written before them), the reader.
    unchecked = ObjectDesign.from_bytes(design).to_bytes()
    for attribute, error in ((design, "checksum mismatch"), (unchecked, "not a readable row object")):
        store.backend.put_object(partition.object_name, pa.py_buffer(bytes(corrupt)), {DESIGN_ATTRIBUTE: attribute})
        for pushdown in (True, False):
            with pytest.raises(skyhook.CorruptObjectError, match=error):
                store.dataset("broken").to_table(pushdown=pushdown)
