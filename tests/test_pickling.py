"""Stores, datasets and scanners pickle by reference and scan in spawned processes."""

from __future__ import annotations

import copy
import multiprocessing
import pickle

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from support.assertions import assert_same_table
from support.oracle import expected
from support.workers import scan_filtered

TABLE = pa.table({"k": pa.array([i % 7 for i in range(500)], pa.int64()), "v": pa.array(range(500), pa.float64())})
FILTERS = [pc.field("k") == 3, pc.field("v") < 100.5]


def write(store: skyhook.Store) -> skyhook.Dataset:
    return store.write_dataset("t", TABLE, rows_per_object=100)


def test_store_round_trip(store: skyhook.Store) -> None:
    write(store)
    copied = pickle.loads(pickle.dumps(store))
    assert copied.uri == store.uri
    assert copied.list_datasets() == ["t"]
    assert pickle.loads(pickle.dumps(store)) is copied  # one connection per process and URI
    copied.close()
    reopened = pickle.loads(pickle.dumps(store))
    assert reopened is not copied and reopened.list_datasets() == ["t"]


def test_the_options_of_connect_survive_pickling(store: skyhook.Store) -> None:
    write(store)
    configured = skyhook.connect(store.uri, retention_seconds=5, workload_log=0, link_bytes_per_second=1e8)
    copied = pickle.loads(pickle.dumps(configured.dataset("t"))).store
    assert (copied.retention_seconds, copied.backend.workload_log_records) == (5, 0)
    assert copied.backend.link_bytes_per_second == 1e8
    plain = pickle.loads(pickle.dumps(store))
    assert plain is not copied and (plain.retention_seconds, plain.backend.workload_log_records) == (
        store.retention_seconds,
        store.backend.workload_log_records,
    )
    configured.close()


def test_dataset_round_trip(store: skyhook.Store) -> None:
    dataset = write(store).filter(pc.field("k") > 2)
    copied = pickle.loads(pickle.dumps(dataset))
    assert isinstance(copied, skyhook.Dataset)
    assert copied.manifest.generation == dataset.manifest.generation
    assert_same_table(copied.to_table(), dataset.to_table())
    assert_same_table(copied.to_table(), expected(TABLE, filter=pc.field("k") > 2))


def test_scanner_round_trip(store: skyhook.Store) -> None:
    scanner = write(store).scanner(["v"], "k == 1", batch_size=10, use_threads=False, pushdown=True)
    copied = pickle.loads(pickle.dumps(scanner))
    assert isinstance(copied, skyhook.Scanner)
    assert (copied.execution.batch_size, copied.execution.options.use_threads) == (10, False)
    assert copied.execution.policy.mode is True
    assert_same_table(copied.to_table(), expected(TABLE, ["v"], pc.field("k") == 1))


def test_deepcopy(store: skyhook.Store) -> None:
    dataset = write(store)
    assert_same_table(copy.deepcopy(dataset).to_table(), dataset.to_table())
    assert_same_table(copy.deepcopy(dataset.scanner(["k"])).to_table(), expected(TABLE, ["k"]))


def test_spawn_pool(store: skyhook.Store) -> None:
    dataset = write(store)
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(scan_filtered, [(dataset, filter) for filter in FILTERS])
    for result, filter in zip(results, FILTERS):
        assert_same_table(result, expected(TABLE, filter=filter))


def test_overwritten_dataset_reads_its_version_while_kept(store: skyhook.Store) -> None:
    pickled = pickle.dumps(write(store))
    store.write_dataset("t", TABLE.slice(0, 10), mode="overwrite")
    assert_same_table(pickle.loads(pickled).to_table(), TABLE)
    store.dataset("t").keep_versions(1)
    store.collect_garbage()
    with pytest.raises(skyhook.DatasetChangedError, match="overwritten since it was pickled"):
        pickle.loads(pickled)
    store.delete_dataset("t")
    with pytest.raises(skyhook.DatasetNotFoundError):
        pickle.loads(pickled)
