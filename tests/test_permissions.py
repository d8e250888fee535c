"""Least privilege on Ceph: users with the capabilities of the README's roles
(skyhook.dev.cluster.role_capabilities) can do their work and nothing more, and a
refusal names the capability that is missing."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pyarrow.compute as pc
import pytest

import skyhook
from skyhook.dev.cluster import LocalCluster, role_capabilities
from skyhook.rpc.reply import decode_reply
from skyhook.rpc.requests import DescribeRequest
from support.assertions import assert_same_table
from support.oracle import expected
from support.tables import make_typed_table

F = pc.field
TABLE = make_typed_table(rows=4000, seed=3)
FILTER = (F("i32") > 0) & (F("s") != "fig")
COLUMNS = ["id", "s", "dec", "ts"]
AGGREGATIONS = [("i32", "sum"), ("dec", "max"), ("d", "min"), ("id", "count")]  # exact: equal results


def fresh_namespace() -> str:
    return f"perm-{uuid.uuid4().hex[:10]}"


def connect_as(cluster: LocalCluster, capabilities: dict[str, str], namespace: str) -> skyhook.Store:
    """A store opened by a new user that has exactly these capabilities."""
    name = f"user-{uuid.uuid4().hex[:8]}"
    return skyhook.connect(cluster.user_uri(name, cluster.add_user(name, capabilities), namespace))


def admin_store(cluster: LocalCluster, namespace: str) -> skyhook.Store:
    return skyhook.connect(f"{cluster.uri}&namespace={namespace}")


def objects_in(cluster: LocalCluster, namespace: str) -> list[str]:
    listing = subprocess.run(
        ["rados", "-c", str(cluster.conf), "-p", "skyhook", "-N", namespace, "ls"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return sorted(listing.stdout.split())


def assert_queries_answer(dataset: skyhook.Dataset) -> None:
    """Scans and aggregates give pyarrow's answers."""
    assert_same_table(dataset.to_table(columns=COLUMNS, filter=FILTER, pushdown=True), expected(TABLE, COLUMNS, FILTER))
    assert dataset.count_rows(filter=FILTER) == TABLE.filter(FILTER).num_rows
    actual = dataset.group_by("s").aggregate(AGGREGATIONS).sort_by("s")
    assert actual.equals(TABLE.group_by("s", use_threads=False).aggregate(AGGREGATIONS).sort_by("s"))


def test_a_user_of_one_namespace_works_there_and_nowhere_else(ceph_cluster):
    own, other = fresh_namespace(), fresh_namespace()
    with admin_store(ceph_cluster, other) as admin:
        admin.write_dataset("theirs", TABLE.slice(0, 100))
    writer = role_capabilities("writer", namespace=own)

    with connect_as(ceph_cluster, writer, own) as store:
        dataset = store.write_dataset("t", TABLE, rows_per_object=1000)
        assert store.list_datasets() == ["t"]
        assert_queries_answer(store.dataset("t"))
        assert dataset.scanner(filter=FILTER, pushdown=True).to_table().num_rows > 0
        store.write_dataset("t", TABLE.slice(0, 10), mode="overwrite")
        store.delete_dataset("t")
        assert store.list_datasets() == []

    before = objects_in(ceph_cluster, other)
    with connect_as(ceph_cluster, writer, other) as intruder:
        refusal = f"needs `allow r pool=skyhook namespace={other}`"
        with pytest.raises(skyhook.PermissionDeniedError, match=refusal):
            intruder.list_datasets()
        with pytest.raises(skyhook.PermissionDeniedError, match=refusal):
            intruder.dataset("theirs")
        with pytest.raises(skyhook.PermissionDeniedError):
            intruder.write_dataset("mine", TABLE)
    assert objects_in(ceph_cluster, other) == before
    with admin_store(ceph_cluster, other) as admin:
        assert_same_table(admin.dataset("theirs").to_table(), TABLE.slice(0, 100))


def test_a_reader_queries_but_cannot_change_anything(ceph_cluster):
    namespace = fresh_namespace()
    with admin_store(ceph_cluster, namespace) as admin:
        original = admin.write_dataset("t", TABLE, rows_per_object=1000)
    before = objects_in(ceph_cluster, namespace)

    with connect_as(ceph_cluster, role_capabilities("reader", namespace=namespace), namespace) as store:
        dataset = store.dataset("t")
        assert_queries_answer(dataset)
        scanner = dataset.scanner(columns=COLUMNS, filter=FILTER, pushdown=True)
        scanner.to_table()
        assert scanner.stats.objects_read_plain == 0 and not scanner.stats.class_calls_refused
        refusal = f"needs `allow rw pool=skyhook namespace={namespace}`"
        with pytest.raises(skyhook.PermissionDeniedError, match=refusal):
            store.write_dataset("new", TABLE)
        with pytest.raises(skyhook.PermissionDeniedError, match=refusal):
            store.write_dataset("t", TABLE.slice(0, 5), mode="overwrite")
        with pytest.raises(skyhook.PermissionDeniedError, match=refusal):
            store.delete_dataset("t")
        # A writing method of the class: both grants named, though the reader has `allow r`.
        with pytest.raises(skyhook.PermissionDeniedError, match=f"{refusal} and `allow pool=skyhook"):
            dataset.compute_statistics()

    assert objects_in(ceph_cluster, namespace) == before
    with admin_store(ceph_cluster, namespace) as admin:
        assert admin.list_datasets() == ["t"]
        assert admin.manifest("t").generation == original.manifest.generation


def test_without_the_class_capability_queries_fall_back_to_plain_reads(ceph_cluster):
    namespace = fresh_namespace()
    with admin_store(ceph_cluster, namespace) as admin:
        admin.write_dataset("t", TABLE, rows_per_object=1000)
    plain_reader = {"mon": "allow r", "osd": f"allow r pool=skyhook namespace={namespace}"}
    missing = f"needs `allow pool=skyhook namespace={namespace} class skyhook`"

    with connect_as(ceph_cluster, plain_reader, namespace) as store:
        dataset = store.dataset("t")
        with pytest.warns(RuntimeWarning, match=missing):
            assert_queries_answer(dataset)
        scanner = dataset.scanner(columns=COLUMNS, filter=FILTER, pushdown=True)
        with pytest.warns(RuntimeWarning, match=missing):
            scanner.to_table()
        assert scanner.stats.class_calls_refused
        assert scanner.stats.objects_read_plain == scanner.stats.objects_scanned == 4
        name = dataset.manifest.partitions[0].object_name
        with pytest.raises(skyhook.ClassCallsNotPermittedError, match=missing):
            store.describe_object(name)
        with pytest.raises(skyhook.PermissionDeniedError):  # writing needs w and the class
            store.write_dataset("new", TABLE)


def test_an_unscoped_class_grant_reaches_every_namespace(ceph_cluster):
    """Why role_capabilities scopes `class skyhook`: object-class calls need no `r`,
    so an unscoped grant lets a user of one namespace run scans in all of them."""
    own, other = fresh_namespace(), fresh_namespace()
    with admin_store(ceph_cluster, other) as admin:
        victim = admin.write_dataset("secret", TABLE).manifest.partitions[0].object_name
    describe = DescribeRequest().encode()
    unscoped = {"mon": "allow r", "osd": f"allow r pool=skyhook namespace={own}, allow class skyhook"}
    with connect_as(ceph_cluster, unscoped, other) as leaky:
        assert decode_reply(leaky.backend.call(victim, "describe", describe)).code == 0
    with connect_as(ceph_cluster, role_capabilities("reader", namespace=own), other) as scoped:
        with pytest.raises(skyhook.ClassCallsNotPermittedError):
            scoped.backend.call(victim, "describe", describe)


def test_cluster_user_command(ceph_cluster):
    namespace = fresh_namespace()
    with admin_store(ceph_cluster, namespace) as admin:
        admin.write_dataset("t", TABLE.slice(0, 50))
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "skyhook.cli",
            "cluster",
            "user",
            f"cli-{namespace}",
            str(ceph_cluster.dir),
            "--role",
            "reader",
            "--namespace",
            namespace,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    uri = created.stdout.strip().splitlines()[-1]
    assert f"user=cli-{namespace}" in uri
    with skyhook.connect(uri) as store:
        assert_same_table(store.dataset("t").to_table(), TABLE.slice(0, 50))
        with pytest.raises(skyhook.PermissionDeniedError):
            store.delete_dataset("t")
