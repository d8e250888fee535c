"""Spreading reading calls over the hosts holding copies (skyhook.backends.replica_reads):
the placement-group arithmetic and the assignment without a cluster (tests/test_emulated_hosts.py
checks both against a cluster of three hosts), and a commit that stands when settling fails."""

from __future__ import annotations

import random

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from skyhook.backends.replica_reads import spread, stable_mod
from skyhook.errors import StorageError


def test_stable_mod_is_cephs():
    # ceph_stable_mod(x, b, bmask): x & bmask when below b, else x & (bmask >> 1)
    assert [stable_mod(seed, 12) for seed in (0, 5, 11, 12, 13, 15, 16, 29)] == [0, 5, 11, 4, 5, 7, 0, 5]
    assert all(stable_mod(seed, 32) == seed % 32 for seed in range(1000))  # a power of two: plain modulo
    assert stable_mod(0xFFFFFFFF, 1) == 0


@given(st.integers(0, 2**32 - 1), st.integers(1, 4096))
def test_every_seed_has_a_placement_group(seed: int, pg_num: int):
    assert 0 <= stable_mod(seed, pg_num) < pg_num


def test_ties_go_to_the_primary_and_load_is_spread():
    assert spread([("a", "b", "c")] * 6) == ["a", "b", "c", "a", "b", "c"]
    assert spread([("b", "a"), ("a", "b"), (), ("a",)]) == ["b", "a", None, "a"]


def test_every_prefix_is_balanced_where_primaries_are_not():
    """61 objects on 16 hosts (the scale-out run's shape), each on 3 hosts: the
    busiest host serves at most one more than the least loaded in every prefix,
    where the primaries alone give one host several times its share."""
    chooser = random.Random(7)
    hosts = [f"h{number}" for number in range(16)]
    placements = [tuple(chooser.sample(hosts, 3)) for _ in range(61)]
    chosen = spread(placements)
    assert all(host in placement for host, placement in zip(chosen, placements))
    for end in range(16, 62):
        loads = [chosen[:end].count(host) for host in hosts]
        assert max(loads) - min(loads) <= 2
    primaries = [placement[0] for placement in placements]
    assert max(map(primaries.count, hosts)) >= 2 * max(map(chosen.count, hosts)) - 2


def test_a_commit_stands_when_settling_fails(ceph_store, monkeypatch):
    """Settling only lets replicas serve reads sooner: its failure is not the commit's."""

    def refuse(*_: object) -> None:
        raise StorageError("the settle marker was refused")

    monkeypatch.setattr(ceph_store.backend._replicas, "settle", refuse)
    written = ceph_store.write_dataset("settled", pa.table({"x": [1, 2, 3]}))
    assert written.count_rows() == 3 and ceph_store.dataset("settled").to_table()["x"].to_pylist() == [1, 2, 3]
