"""A skyhook dataset is an Arrow C++ Dataset: every pyarrow Dataset, Scanner and
Acero entry point scans it natively, with the same answer as on
``pads.dataset()`` of the same Parquet, and pushes its filter into storage."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.acero as ac
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import skyhook
from support.assertions import assert_same_table

F = pc.field
FILTER = (F("id") >= 1000) & (F("id") < 1100) & (F("i32") > 0)
COLUMNS = ["id", "s", "i32", "dec", "ts"]
OTHER = pa.table({"id": pa.array(range(0, 3000, 7), pa.int64()), "w": pa.array(range(0, 3000, 7), pa.float64())})


@pytest.fixture
def pair(store, typed_table, tmp_path):
    """The same data as a skyhook dataset and as pyarrow's dataset of a Parquet file."""
    table = typed_table.select(COLUMNS)
    pq.write_table(table, tmp_path / "local.parquet")
    return store.write_dataset("t", table, rows_per_object=500), pads.dataset(tmp_path / "local.parquet")


def sorted_by_id(table: pa.Table) -> pa.Table:
    return table.sort_by([(name, "ascending") for name in table.column_names if name in ("id", "id_r")])


def test_skyhook_dataset_and_scanner_are_pyarrow_objects(pair):
    ds, _ = pair
    assert isinstance(ds, pads.Dataset) and isinstance(ds.scanner(), pads.Scanner)


def test_scanner_from_dataset_pushes_filter_into_storage(pair):
    ds, local = pair
    ours = pads.Scanner.from_dataset(ds, columns=["id", "s"], filter=FILTER).to_table()
    assert_same_table(ours, local.to_table(columns=["id", "s"], filter=FILTER))
    stats = ds.arrow_scans
    assert stats.objects_scanned == 1  # id is sorted: statistics prune the other five objects
    assert stats.filter_in_storage and stats.objects_read_plain == 0
    assert stats.rows_returned < 100  # only rows passing the filter left storage


@pytest.mark.parametrize("ours_left", [True, False])
def test_joins_with_in_memory_data_on_either_side(pair, ours_left):
    ds, local = pair
    other = pads.dataset(OTHER)
    if ours_left:
        ours, theirs = ds.join(other, "id"), local.join(other, "id")
    else:
        ours, theirs = other.join(ds, "id"), other.join(local, "id")
    assert_same_table(sorted_by_id(ours.to_table()), sorted_by_id(theirs.to_table()))


def test_self_join_and_filtered_join(pair):
    ds, local = pair
    ours = ds.filter(FILTER).join(ds, "id", right_suffix="_r").to_table()
    theirs = local.filter(FILTER).join(local, "id", right_suffix="_r").to_table()
    assert_same_table(sorted_by_id(ours), sorted_by_id(theirs))


def test_join_asof(store, typed_table, tmp_path):
    table = typed_table.select(["id", "i32"]).append_column("k", pa.array([1] * typed_table.num_rows, pa.int64()))
    pq.write_table(table, tmp_path / "asof.parquet")
    ds, local = store.write_dataset("asof", table, rows_per_object=500), pads.dataset(tmp_path / "asof.parquet")
    other = pads.dataset(OTHER.append_column("k", pa.array([1] * OTHER.num_rows, pa.int64())))
    ours = ds.join_asof(other, on="id", by="k", tolerance=-5).to_table()
    theirs = local.join_asof(other, on="id", by="k", tolerance=-5).to_table()
    assert_same_table(ours, theirs)


def test_union_datasets(pair):
    ds, local = pair
    union = pads.UnionDataset(ds.schema, [ds, ds])
    assert_same_table(
        union.to_table(filter=FILTER), pads.UnionDataset(local.schema, [local, local]).to_table(filter=FILTER)
    )
    assert_same_table(
        pads.dataset([ds, ds]).to_table(columns=["id"]), pads.dataset([local, local]).to_table(columns=["id"])
    )


def test_acero_scan_node(pair):
    ds, local = pair

    def plan(dataset):
        return ac.Declaration.from_sequence(
            [
                ac.Declaration("scan", ac.ScanNodeOptions(dataset, filter=FILTER, columns=["id", "i32"])),
                ac.Declaration("filter", ac.FilterNodeOptions(FILTER)),
                ac.Declaration("project", ac.ProjectNodeOptions([F("id"), F("i32")], ["id", "i32"])),
                ac.Declaration("aggregate", ac.AggregateNodeOptions([("i32", "sum", None, "total")])),
            ]
        )

    assert plan(ds).to_table().equals(plan(local).to_table())
    assert ds.arrow_scans.objects_scanned == 1 and ds.arrow_scans.filter_in_storage


def test_write_dataset_from_a_filtered_dataset_and_a_scanner(pair, tmp_path):
    ds, local = pair
    pads.write_dataset(ds.filter(FILTER), tmp_path / "a", format="parquet")
    assert_same_table(sorted_by_id(pads.dataset(tmp_path / "a").to_table()), local.to_table(filter=FILTER))
    scanner = ds.scanner(columns=["id", "s"], filter=FILTER)
    pads.write_dataset(scanner, tmp_path / "b", format="parquet")
    assert_same_table(
        sorted_by_id(pads.dataset(tmp_path / "b").to_table()), local.to_table(columns=["id", "s"], filter=FILTER)
    )
    assert scanner.stats.objects_scanned == 1 and scanner.stats.rows_returned < 100


def test_fragments_are_pruned_by_statistics(pair):
    ds, _ = pair
    assert len(list(ds.get_fragments())) == len(ds.manifest.partitions)
    assert len(list(ds.get_fragments(filter=F("id") < 10))) == 1
    assert len(list(ds.get_fragments(filter=F("id") < -1))) == 0


def test_scan_batches_and_standard_scanner_keywords(pair):
    ds, local = pair
    scanner = ds.scanner(
        columns=["id", "i32"],
        filter=F("i32") > 500,
        batch_size=64,
        batch_readahead=2,
        fragment_readahead=1,
        cache_metadata=True,
    )
    tagged = list(scanner.scan_batches())
    assert all(batch.record_batch.num_rows <= 64 for batch in tagged)
    ours = pa.Table.from_batches([batch.record_batch for batch in tagged])
    assert_same_table(sorted_by_id(ours), local.to_table(columns=["id", "i32"], filter=F("i32") > 500))
    assert scanner.stats.objects_scanned == len(ds.manifest.partitions)


def test_dataset_relational_methods(pair):
    ds, local = pair
    assert_same_table(
        ds.sort_by([("i32", "descending"), ("id", "ascending")]).to_table(),
        local.sort_by([("i32", "descending"), ("id", "ascending")]).to_table(),
    )
    assert ds.count_rows(filter=FILTER) == local.count_rows(filter=FILTER)
    assert_same_table(ds.head(7, filter=FILTER), local.head(7, filter=FILTER))
    assert_same_table(ds.take([0, 2999, 1500]), local.take([0, 2999, 1500]))


def test_errors_reach_the_caller(pair):
    ds, _ = pair
    with pytest.raises(pa.ArrowInvalid):  # Arrow binds the filter before any fragment runs
        pads.Scanner.from_dataset(ds, filter=F("missing") > 1).to_table()
    with pytest.raises(skyhook.TypeMismatchError, match="must evaluate to bool"):
        ds.filter(F("id") + 1)
    ds.store.backend.delete_object(ds.manifest.partitions[3].object_name)
    with pytest.raises(skyhook.ObjectNotFoundError):  # raised in a fragment, on Arrow's threads
        pads.Scanner.from_dataset(ds, filter=F("id") >= 0).to_table()
    with pytest.raises(skyhook.ObjectNotFoundError):
        ds.join(pads.dataset(OTHER), "id").to_table()


def test_pyarrow_scans_follow_the_cost_model(pair):
    ds, local = pair
    wide = F("i32") > -2000  # i32 has nulls: statistics cannot tell, the first object is the sample
    ours = pads.Scanner.from_dataset(ds, filter=wide, fragment_readahead=1).to_table()
    assert_same_table(ours, local.to_table(filter=wide))
    objects = len(ds.manifest.partitions)
    assert ds.arrow_scans.objects_read_plain == objects - 1 and "plain reads" in ds.arrow_scans.cost_model
    assert pads.Scanner.from_dataset(ds, filter=FILTER).count_rows() == local.count_rows(filter=FILTER)


def test_a_widened_schema_reads_missing_columns_as_nulls(pair):
    ds, local = pair
    wider = ds.schema.append(pa.field("extra", pa.float64()))
    filter = F("extra").is_null() & (F("id") < 10)
    ours = pads.UnionDataset(ds.schema, [ds]).replace_schema(wider).to_table(columns=["id", "extra"], filter=filter)
    theirs = (
        pads.UnionDataset(local.schema, [local]).replace_schema(wider).to_table(columns=["id", "extra"], filter=filter)
    )
    assert_same_table(ours, theirs)
    assert ours.num_rows == 10
    assert pads.UnionDataset(ds.schema, [ds]).replace_schema(wider).count_rows(filter=F("extra") > 1) == 0


def test_no_pyarrow_call_crashes_the_process(store):
    """Every public method of pyarrow's Dataset and Scanner, called on skyhook
    objects in a child process: results or Python exceptions, never a signal."""
    script = textwrap.dedent(f"""
        import inspect, pyarrow as pa, pyarrow.compute as pc, pyarrow.dataset as pads, skyhook
        store = skyhook.connect({store.uri!r})
        ds = store.write_dataset("probe", pa.table({{"a": [1, 2, 3], "b": ["x", "y", "z"]}}))
        other = pads.dataset(pa.table({{"a": [1, 3], "c": [1.0, 3.0]}}))
        arguments = {{"join": [(other, "a"), (ds, "a")], "join_asof": [(other, "a", [], 1)],
                     "filter": [(pc.field("a") > 1,)], "sort_by": [("a",)], "take": [([0, 2],)],
                     "head": [(2,)], "replace_schema": [(ds.schema,), (pa.schema([("a", pa.int8())]),)],
                     "get_fragments": [(), (pc.field("a") > 5,)]}}
        fragment = next(iter(ds.get_fragments()))
        native = pads.Scanner.from_dataset(ds, filter=pc.field("a") > 1)
        scanner = ds.scanner(columns=["a"], filter=pc.field("a") > 1)
        # (object, the class whose methods to call on it): skyhook's own methods, and
        # pyarrow's implementations of the same names, bypassing the overrides.
        targets = [(ds, type(ds)), (ds, pads.Dataset), (scanner, type(scanner)), (scanner, pads.Scanner),
                   (native, pads.Scanner), (fragment, type(fragment))]
        for target, cls in targets:
            for name, member in inspect.getmembers(cls):
                if name.startswith("_") or not callable(member) or isinstance(member, type):
                    continue
                for args in arguments.get(name, [()]):
                    try:
                        result = member(target, *args) if cls is not type(target) else getattr(target, name)(*args)
                        if hasattr(result, "to_table"):
                            result.to_table()
                        elif inspect.isgenerator(result) or hasattr(result, "__next__"):
                            list(result)
                    except Exception as error:
                        print(name, type(error).__name__)
        print("survived")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "survived" in result.stdout, result.stdout + result.stderr
