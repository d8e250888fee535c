"""Fixtures shared by the suite. A test runs on every backend this machine can
run by taking ``store`` (a fresh store per test) or ``module_store`` (one for
the module): both follow the one ``backend`` parameter. Helpers live in
tests/support/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pyarrow as pa
import pytest

import skyhook
from skyhook.dev.cluster import LocalCluster
from support.stores import BACKENDS, CEPH_NODE_LIMITS, open_store
from support.tables import make_typed_table


@pytest.fixture(scope="session")
def ceph_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    if "ceph" not in BACKENDS:
        pytest.skip("SKYHOOK_TEST_CEPH=0")
    directory = tmp_path_factory.mktemp("ceph") / "cluster"
    cluster = LocalCluster(directory)
    cluster.up(osds=3, store="bluestore", node_limits=CEPH_NODE_LIMITS)
    yield cluster
    cluster.down()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def store(backend: str, request: pytest.FixtureRequest, tmp_path) -> Iterator[skyhook.Store]:
    with open_store(backend, tmp_path / "store", request) as opened:
        yield opened


@pytest.fixture(scope="module")
def module_store(
    backend: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[skyhook.Store]:
    with open_store(backend, tmp_path_factory.mktemp("store"), request) as opened:
        yield opened


@pytest.fixture
def ceph_store(request: pytest.FixtureRequest, tmp_path) -> Iterator[skyhook.Store]:
    """For what only a cluster has (OSDs to stop, limits set when it started)."""
    with open_store("ceph", tmp_path / "store", request) as opened:
        yield opened


@pytest.fixture(scope="session")
def typed_table() -> pa.Table:
    return make_typed_table()
