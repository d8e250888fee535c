"""The embedded store keeps its object files mapped across calls
(cpp/adapters/embedded/mapped_objects.h): a kept mapping never serves bytes
that are no longer the object's, whatever happened to the file in between."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import skyhook
from skyhook.errors import SkyhookError
from support.assertions import assert_same_table

ROWS = 20_000


def _table(start: int) -> pa.Table:
    return pa.table({"k": pa.array(range(start, start + ROWS)), "v": pa.array([i * 0.5 for i in range(ROWS)])})


def _object(store, name: str) -> str:
    dataset = store.dataset(name)
    return str(store.backend.objects / dataset.manifest.partitions[0].object_name)


def _scan(store, name: str) -> pa.Table:
    return store.dataset(name).to_table(filter=pc.field("k") >= 0, pushdown=True)


def _replace(path: str, source: str) -> None:
    """The store's way: a copy (bytes and attributes) renamed over the object."""
    temporary = path + ".new"
    shutil.copy2(source, temporary)
    os.replace(temporary, path)


@pytest.fixture
def two(tmp_path):
    """A store with datasets a and b of one object each, same shape, other rows; a scanned once."""
    store = skyhook.connect(str(tmp_path / "s"))
    store.write_dataset("a", _table(0))
    store.write_dataset("b", _table(1_000_000))
    assert_same_table(_scan(store, "a"), _table(0))  # a's object is mapped now
    return store, _object(store, "a"), _object(store, "b")


def _current(path: str) -> pa.Table:
    """The oracle: what the file now at path holds."""
    return pq.read_table(path).select(["k", "v"])


def test_an_object_renamed_over_is_read_anew(two):
    store, a, b = two
    _replace(a, b)
    assert_same_table(_scan(store, "a"), _current(b))


def test_an_object_rewritten_in_place_is_read_anew(two):
    store, a, b = two
    with open(b, "rb") as source, open(a, "r+b") as target:
        target.write(source.read())
        target.truncate()
    for name in os.listxattr(b):  # the object's design describes its bytes
        os.setxattr(a, name, os.getxattr(b, name))
    assert_same_table(_scan(store, "a"), _current(b))


def test_a_page_damaged_in_place_after_a_scan_is_found(two):
    """Chunks verified through a kept mapping are not verified again while the
    file is unchanged; a file changed in place is mapped, and verified, anew."""
    store, a, _ = two
    with pq.ParquetFile(a) as parquet:
        chunk = parquet.metadata.row_group(0).column(1)
        at = (chunk.dictionary_page_offset or chunk.data_page_offset) + chunk.total_compressed_size - 4
    with open(a, "r+b") as target:  # one byte of a value of v, same size
        target.seek(at)
        byte = target.read(1)
        target.seek(at)
        target.write(bytes([byte[0] ^ 0x10]))
    with pytest.raises(skyhook.CorruptObjectError, match="checksum|CRC|crc"):
        _scan(store, "a")


def test_an_object_truncated_in_place_fails_cleanly(two):
    store, a, _ = two
    os.truncate(a, os.path.getsize(a) // 2)  # a kept mapping of the whole file would fault (SIGBUS)
    with pytest.raises(SkyhookError):
        _scan(store, "a")


def test_a_deleted_object_fails_cleanly(two):
    store, a, _ = two
    os.remove(a)
    with pytest.raises(SkyhookError):
        _scan(store, "a")


def test_concurrent_scans_while_objects_are_replaced(tmp_path):
    store = skyhook.connect(str(tmp_path / "s"))
    versions = [_table(0), _table(1_000_000)]
    store.write_dataset("a", versions[0], rows_per_object=ROWS // 4)
    store.write_dataset("b", versions[1], rows_per_object=ROWS // 4)
    a, b = store.dataset("a"), store.dataset("b")
    paths = [
        (str(store.backend.objects / p.object_name), str(store.backend.objects / q.object_name))
        for p, q in zip(a.manifest.partitions, b.manifest.partitions)
    ]
    originals = [path + ".orig" for path, _ in paths]
    for (path, _), original in zip(paths, originals):
        shutil.copy2(path, original)
    stop, torn = threading.Event(), []

    def scan() -> None:
        while not stop.is_set():
            try:
                rows = a.to_table(filter=pc.field("k") >= 0, pushdown=True).sort_by("k")["k"].to_pylist()
            except Exception as error:  # noqa: BLE001 - every file at the path is a whole version
                torn.append(error)
                return
            # each object is one version or the other, whole: its rows are a run of 5,000 keys
            for i in range(0, len(rows), ROWS // 4):
                run = rows[i : i + ROWS // 4]
                if len(run) != ROWS // 4 or run != list(range(run[0], run[0] + ROWS // 4)):
                    torn.append(run[:3])

    readers = [threading.Thread(target=scan) for _ in range(2)]
    for reader in readers:
        reader.start()
    for round in range(30):
        for (path, other), original in zip(paths, originals):
            _replace(path, other if round % 2 == 0 else original)
    stop.set()
    for reader in readers:
        reader.join()
    assert not torn
    for path, other in paths:
        _replace(path, other)
    assert_same_table(a.to_table(pushdown=True), versions[1])  # no kept mapping of a's files served


_COUNT_MAPPINGS = """
import sys, skyhook, pyarrow.compute as pc
store = skyhook.connect(sys.argv[1])
store.dataset("t").to_table(filter=pc.field("k") >= 0, pushdown=True)
objects = str(store.backend.objects)
mapped = {line.split()[-1] for line in open("/proc/self/maps") if objects in line}
print(len(mapped))
"""


@pytest.mark.parametrize("megabytes, expected", [("0", 0), ("1", 2), ("", 8)])
def test_the_kept_mappings_stay_within_their_bound(tmp_path, megabytes, expected):
    store = skyhook.connect(str(tmp_path / "s"))
    values = np.random.default_rng(7).random(8 * 25_000)  # incompressible: objects of ~480 KB
    table = pa.table({"k": pa.array(range(8 * 25_000)), "v": pa.array(values)})
    dataset = store.write_dataset("t", table, rows_per_object=25_000, compression="none")
    sizes = [os.path.getsize(store.backend.objects / p.object_name) for p in dataset.manifest.partitions]
    assert all(400_000 < size < 512 * 1024 for size in sizes)  # two fit in 1 MiB, not three
    environment = dict(os.environ, SKYHOOK_MAPPED_OBJECTS_MB=megabytes)
    result = subprocess.run(
        [sys.executable, "-c", _COUNT_MAPPINGS, str(tmp_path / "s")],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(result.stdout) == expected
