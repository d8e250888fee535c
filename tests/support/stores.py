"""The backends a test runs on, and empty stores on each of them."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

import skyhook

# SKYHOOK_TEST_CEPH=0 leaves the Ceph backend out (for machines without Ceph);
# otherwise the session starts a real local cluster and every backend-generic
# test runs on it too.
BACKENDS = ["embedded"] if os.environ.get("SKYHOOK_TEST_CEPH") == "0" else ["embedded", "ceph"]
# Node limits tight enough that long calls continue and big replies split
# across the whole suite (tests/test_node_limits.py relies on them).
CEPH_NODE_LIMITS = {"max_call_ms": 3000, "max_call_memory_mb": 512, "max_reply_mb": 32, "min_batch_size": 64}


def open_store(backend: str, directory: Path, request: pytest.FixtureRequest) -> skyhook.Store:
    """An empty store: a fresh directory, or a fresh RADOS namespace of the session's cluster.
    Replaced objects are deleted right after the publication that replaced them
    (no retention), so a test sees exactly the objects its datasets name;
    tests/test_commit_protocol.py tests the retention."""
    if backend == "embedded":
        return skyhook.connect(directory.as_uri(), retention_seconds=0)
    cluster = request.getfixturevalue("ceph_cluster")
    return skyhook.connect(f"{cluster.uri}&namespace=test-{uuid.uuid4().hex[:12]}", retention_seconds=0)
