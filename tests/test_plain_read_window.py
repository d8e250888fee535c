"""How many plain reads the client runs at once: two objects per remote host
(each read waits on its host), up to MAX_READS_AT_ONCE, never fewer than two
per core, and no more than READ_AHEAD_BYTES of decoded objects in flight."""

from __future__ import annotations

import os
import threading
import time

import pytest

from skyhook.execution.placement import MAX_READS_AT_ONCE, READ_AHEAD_BYTES, at_client

CORES = os.cpu_count() or 1


def most_at_once(hosts: int, object_bytes: float = 0, parallel: bool = True, items: int = 40) -> int:
    """The most calls of a slow function that at_client ran together."""
    lock, running, most = threading.Lock(), [0], [0]

    def read(item: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return item

    assert list(at_client(read, range(items), parallel, hosts, object_bytes)) == list(range(items))
    return most[0]


@pytest.mark.parametrize("hosts", [4, 8, 32])
def test_two_objects_per_remote_host_are_read_at_once(hosts):
    assert most_at_once(hosts) == min(MAX_READS_AT_ONCE, max(2 * CORES, 2 * hosts))


def test_large_objects_are_read_fewer_at_once():
    assert most_at_once(16, object_bytes=READ_AHEAD_BYTES // 5) == max(2 * CORES, 5)
    assert most_at_once(16, object_bytes=4 * READ_AHEAD_BYTES) == 2 * CORES  # never fewer than before


def test_storage_on_this_machine_reads_about_one_object_per_core():
    assert most_at_once(1) <= CORES
    assert most_at_once(8, parallel=False) == 1
