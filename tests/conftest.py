"""Fixtures shared by the suite. A test runs on every backend this machine can
run by taking ``store`` (a fresh store per test) or ``module_store`` (one for
the module): both follow the one ``backend`` parameter. Helpers live in
tests/support/."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pyarrow as pa
import pytest

import skyhook
from skyhook.dev.cluster import LocalCluster
from support import native_builds
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
def dask_client() -> Iterator[object]:
    """A local dask.distributed cluster of two single-threaded worker processes, and its client."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as connected:  # fmt: skip
        yield connected


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


# The slow tier: builds (C++ unit tests, fuzz harnesses), processes killed on purpose, clusters of
# their own, long property runs. `pytest -m "not slow"` leaves it out (the README's fast command);
# the test command runs everything.
SLOW_MODULES = {
    "test_fuzz",
    "test_cpp_unit",
    "test_ceph_fuzz",
    "test_emulated_hosts",
    "test_gateway",
    "test_node_limits",
    "test_plan_crashes",
    "test_concurrent_transforms",
    "test_concurrent_writers",
    "test_pruning_units",
    "test_expression_r",
    "test_dask",  # clusters of worker processes, a local Ray, servers killed on purpose
    "test_expression_dask",
    "test_ray",
    "test_flight_sql_failures",
}


# Modules whose tests start clusters of their own (emulated hosts, a gateway), and the
# fixtures that start or use one (a test that starts one itself says so: xdist_group("ceph")).
CLUSTER_MODULES = {"test_ceph", "test_ceph_fuzz", "test_emulated_hosts", "test_gateway"}
CLUSTER_FIXTURES = {"ceph_cluster", "ceph_store", "lone_osd"}


def needs_a_cluster(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    return (
        (item.module is not None and item.module.__name__ in CLUSTER_MODULES)
        or bool(CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())))
        or (callspec is not None and callspec.params.get("backend") == "ceph")
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the slow tier; puts every test that needs a Ceph cluster on one xdist worker (the
    session's cluster is started once, and clusters never run side by side on two cores) while
    the others run on the rest (`-n 2 --dist loadgroup`); and runs the tests of the C++ builds
    last (tests/support/native_builds.py)."""
    for item in items:
        if item.module is not None and item.module.__name__ in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if needs_a_cluster(item):
            item.add_marker(pytest.mark.xdist_group("ceph"))
    building = [item for item in items if _builds_native_code(item)]
    if building:
        items[:] = [item for item in items if not _builds_native_code(item)] + building


def pytest_collection_finish(session: pytest.Session) -> None:
    """Checks that the groups apply; starts the C++ builds if their tests were selected (once:
    on the first worker if any)."""
    grouped = [item for item in session.items if item.get_closest_marker("xdist_group")]
    if session.config.getoption("loadgroup", False) and any("@" not in item.nodeid for item in grouped):
        # pytest-xdist names a group's tests by rewriting their ids, which pytest 9.2 ignores
        raise pytest.UsageError("pytest-xdist's --dist loadgroup is not applied: pytest < 9.2 is needed")
    selected = any(_builds_native_code(item) for item in session.items)
    first_worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0"
    if selected and first_worker and not session.config.option.collectonly:
        native_builds.start()


def _builds_native_code(item: pytest.Item) -> bool:
    return item.module is not None and item.module.__name__ in native_builds.MODULES
