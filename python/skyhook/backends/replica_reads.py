"""Reading calls spread over every host holding a copy, not only the primaries.

CRUSH gives each object a primary pseudo-randomly: over tens of objects some
host is primary for twice its share while another idles, and a scan waits for
its busiest host. Every object also has replicas (a size-3 pool: three hosts),
and any of them can run a method that only reads. From where the cluster
places each object (placement seeds from librados, the pool's pg_num and the
placement groups' acting sets from the monitors), the calls
are given out in order, each to the least loaded host holding a copy (the
primary on a tie), so every prefix of the calls -- every window of calls in
flight -- is spread evenly. A placement out of date (a host down, placement
groups moved) only spreads reads less well: Ceph sends each read to a current
replica or to the primary and checks it there (host_clients.h).

A replica of Ceph Pacific serves a read of an object only once it knows the
object's last write is on every replica, which it learns from the primary's
later writes to the same placement group (newer Ceph sends it unasked:
pct_update_delay); until then it sends the read back to the primary. A writer
therefore settles the placement groups it wrote to when it commits: two writes
of a marker object in each (settle()).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

#: How often the osdmap's epoch is checked for a new placement.
REFRESH_SECONDS = 10.0
#: Names of the objects that settle placement groups (written and removed at once).
MARKER_PREFIX = "_skyhook.settle."


def stable_mod(seed: int, pg_num: int) -> int:
    """The placement group of a placement seed (Ceph's ceph_stable_mod)."""
    mask = (1 << (pg_num - 1).bit_length()) - 1
    return seed & mask if (seed & mask) < pg_num else seed & (mask >> 1)


def spread(candidates: Sequence[tuple[str, ...]]) -> list[str | None]:
    """For each call in order, the least loaded of its hosts so far (None: not placed)."""
    load: Counter[str] = Counter()
    chosen: list[str | None] = []
    for hosts in candidates:
        host = min(hosts, key=load.__getitem__) if hosts else None  # min keeps the first: the primary
        if host is not None:
            load[host] += 1
        chosen.append(host)
    return chosen


class ReplicaReads:
    """The host each reading call goes to. The pool's pg_num and the hosts of
    the OSDs are read again when the osdmap's epoch changes (checked at most
    every REFRESH_SECONDS), each placement group's acting set when first needed
    in an epoch (the monitors compute it from the osdmap: exact, where the
    manager's statistics lag behind new placement groups)."""

    def __init__(self, pool: str, command: Callable[[str], bytes], seeds: Callable[[list[str]], list[int]]) -> None:
        self._pool, self._command, self._seeds = pool, command, seeds
        self._checked_at = -REFRESH_SECONDS
        self._epoch = -1
        self._pool_id = self._pg_num = 0
        self._host_of: dict[int, str] = {}
        self._acting: dict[int, tuple[str, ...]] = {}
        self._markers: dict[int, str] = {}  # placement group -> an object name CRUSH places there
        self._markers_tried = 0
        self._lock = threading.Lock()

    @property
    def hosts(self) -> int:
        """Hosts holding the pool's OSDs (0 where the placement cannot be read)."""
        with self._lock:
            self._refresh()
            return self._host_count()

    def _host_count(self) -> int:
        return len(set(self._host_of.values()))

    def hosts_for(self, objects: list[str]) -> list[str | None]:
        """A host per object (None: the primary decides), all None with one host
        or where the placement cannot be read (a user without the monitors' read
        capability, say)."""
        with self._lock:
            self._refresh()
            if self._host_count() < 2:
                return [None] * len(objects)
            try:
                groups = [stable_mod(seed, self._pg_num) for seed in self._seeds(objects)]
                for group in set(groups) - self._acting.keys():
                    self._acting[group] = self._acting_set(group)
            except (OSError, ValueError, KeyError, TypeError):
                return [None] * len(objects)
            return spread([self._acting[group] for group in groups])

    def settle(self, objects: set[str], write: Callable[[str], None], remove: Callable[[str], None]) -> None:
        """Lets the replicas of objects serve reads: in each placement group
        holding one, a marker object written and removed (the later writes tell
        the replicas that the earlier ones are everywhere). Nothing to do with one host."""
        with self._lock:
            self._refresh()
            if self._host_count() < 2 or not objects:
                return
            groups = {stable_mod(seed, self._pg_num) for seed in self._seeds(sorted(objects))}
            markers = [self._marker(group) for group in sorted(groups)]
        for marker in markers:
            write(marker)
            remove(marker)

    def _marker(self, group: int) -> str:
        while group not in self._markers:
            first, self._markers_tried = self._markers_tried, self._markers_tried + 4 * self._pg_num
            names = [f"{MARKER_PREFIX}{number}" for number in range(first, self._markers_tried)]
            for name, seed in zip(names, self._seeds(names)):
                self._markers.setdefault(stable_mod(seed, self._pg_num), name)
        return self._markers[group]

    def _refresh(self) -> None:
        if time.monotonic() - self._checked_at < REFRESH_SECONDS:
            return
        self._checked_at = time.monotonic()
        try:
            osdmap = self._ask("osd dump")
            if osdmap["epoch"] == self._epoch:
                return
            (pool,) = (entry for entry in osdmap["pools"] if entry["pool_name"] == self._pool)
            tree = self._ask("osd tree")["nodes"]
            self._host_of = {
                child: node["name"] for node in tree if node["type"] == "host" for child in node["children"]
            }
            self._pool_id, self._pg_num, self._epoch = int(pool["pool"]), int(pool["pg_num"]), osdmap["epoch"]
            self._acting, self._markers, self._markers_tried = {}, {}, 0
        except (OSError, ValueError, KeyError, TypeError):
            self._host_of, self._epoch = {}, -1

    def _acting_set(self, group: int) -> tuple[str, ...]:
        acting = self._ask("pg map", pgid=f"{self._pool_id}.{group:x}")["acting"]
        return tuple(self._host_of[osd] for osd in acting if osd in self._host_of)

    def _ask(self, prefix: str, **arguments: str) -> dict:
        return json.loads(self._command(json.dumps({"prefix": prefix, "format": "json", **arguments})))
