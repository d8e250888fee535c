"""Fixtures shared by the suite. Backend-generic tests take ``store``, which is
parametrized over every backend this machine can run."""

from __future__ import annotations

import datetime
import decimal
import math
import os
import random
import shutil
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.dev.cluster import LocalCluster

# SKYHOOK_TEST_CEPH=0 leaves the Ceph backend out (for machines without Ceph);
# otherwise the session starts a real local cluster and every backend-generic
# test runs on it too.
BACKENDS = ["embedded"] if os.environ.get("SKYHOOK_TEST_CEPH") == "0" else ["embedded", "ceph"]
CEPH_NODE_LIMITS = {"max_call_ms": 3000, "max_call_memory_mb": 512, "max_reply_mb": 32, "min_batch_size": 64}


@pytest.fixture(scope="session")
def ceph_cluster(tmp_path_factory) -> LocalCluster:
    if "ceph" not in BACKENDS:
        pytest.skip("SKYHOOK_TEST_CEPH=0")
    directory = tmp_path_factory.mktemp("ceph") / "cluster"
    cluster = LocalCluster(directory)
    # Node limits tight enough that long calls continue and big replies split
    # across the whole suite (tests/test_node_limits.py relies on them).
    cluster.up(osds=3, store="bluestore", node_limits=CEPH_NODE_LIMITS)
    yield cluster
    cluster.down()
    shutil.rmtree(directory, ignore_errors=True)


def open_store(backend: str, directory: Path, request) -> skyhook.Store:
    """An empty store: a fresh directory, or a fresh RADOS namespace of the cluster's pool."""
    if backend == "embedded":
        return skyhook.connect(directory.as_uri())
    cluster = request.getfixturevalue("ceph_cluster")
    return skyhook.connect(f"{cluster.uri}&namespace=test-{uuid.uuid4().hex[:12]}")


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path) -> skyhook.Store:
    with open_store(request.param, tmp_path / "store", request) as opened:
        yield opened


def make_typed_table(rows: int = 3000, seed: int = 7) -> pa.Table:
    """Every type the engine must handle, with nulls, NaN, duplicates and order
    (``id`` ascending, so statistics can prune)."""
    rng = random.Random(seed)

    def maybe(value, null_rate=0.1):
        return None if rng.random() < null_rate else value

    base_day = datetime.date(1995, 1, 1)
    base_time = datetime.datetime(2020, 1, 1, 0, 0, 0)
    words = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "", "ünïcode", "zeta"]
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "i8": pa.array([maybe(rng.randint(-128, 127)) for _ in range(rows)], pa.int8()),
            "i32": pa.array([maybe(rng.randint(-1000, 1000)) for _ in range(rows)], pa.int32()),
            "u16": pa.array([maybe(rng.randint(0, 60000)) for _ in range(rows)], pa.uint16()),
            "f32": pa.array([maybe(rng.uniform(-10, 10)) for _ in range(rows)], pa.float32()),
            "f64": pa.array(
                [maybe(math.nan if rng.random() < 0.02 else rng.gauss(0, 100)) for _ in range(rows)], pa.float64()
            ),
            "dec": pa.array(
                [maybe(decimal.Decimal(rng.randint(-99999, 99999)) / 100) for _ in range(rows)], pa.decimal128(12, 2)
            ),
            "s": pa.array([maybe(rng.choice(words)) for _ in range(rows)], pa.string()),
            "bin": pa.array(
                [maybe(bytes([rng.randint(0, 255)]) * rng.randint(0, 3)) for _ in range(rows)], pa.binary()
            ),
            "d": pa.array(
                [maybe(base_day + datetime.timedelta(days=rng.randint(0, 2000))) for _ in range(rows)], pa.date32()
            ),
            "ts": pa.array(
                [
                    maybe(
                        base_time
                        + datetime.timedelta(seconds=rng.randint(0, 10**7), microseconds=rng.randint(0, 999999))
                    )
                    for _ in range(rows)
                ],
                pa.timestamp("us"),
            ),
            "tsz": pa.array(
                [
                    maybe(
                        datetime.datetime(2021, 6, 1, tzinfo=datetime.timezone.utc)
                        + datetime.timedelta(minutes=rng.randint(0, 10**5))
                    )
                    for _ in range(rows)
                ],
                pa.timestamp("ms", tz="UTC"),
            ),
            "b": pa.array([maybe(rng.random() < 0.5) for _ in range(rows)], pa.bool_()),
            "all_null": pa.array([None] * rows, pa.int64()),
            "tags": pa.array(
                [maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 3))]) for _ in range(rows)],
                pa.list_(pa.int32()),
            ),
        }
    )


@pytest.fixture(scope="session")
def typed_table() -> pa.Table:
    return make_typed_table()


def assert_same_table(actual: pa.Table, expected: pa.Table) -> None:
    """Equal schema and values in the same order; NaN equals NaN."""
    assert actual.schema.names == expected.schema.names
    assert [f.type for f in actual.schema] == [f.type for f in expected.schema]
    assert actual.num_rows == expected.num_rows
    for name in expected.column_names:
        left, right = actual.column(name).combine_chunks(), expected.column(name).combine_chunks()
        if pa.types.is_floating(right.type):
            assert pc.is_nan(left).equals(pc.is_nan(right)), name
            left = pc.if_else(pc.is_nan(left), pa.scalar(0, left.type), left)
            right = pc.if_else(pc.is_nan(right), pa.scalar(0, right.type), right)
        assert left.equals(right), f"column {name} differs"
