"""The one commit every manifest change goes through: a change re-applied to
whatever another writer published between its read and its swap, a swap
prepared before (retirement) undone when it fails, deletes, and changes that
publish nothing."""

from __future__ import annotations

import pytest

from skyhook.backends.embedded import EmbeddedBackend
from skyhook.backends.manifest_commit import Publication, commit


def test_a_change_is_applied_again_to_what_another_writer_published(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    assert commit(backend, "d", lambda stored: Publication(b"1", "created")) == "created"
    seen, undone = [], []

    def append_two(stored):
        seen.append(stored.data)
        if len(seen) == 1:  # another writer swaps in between this read and this swap
            backend.replace_manifest("d", stored.data + b"+other", stored.version)
        return Publication(stored.data + b"+2", len(seen), lambda: lambda: undone.append(len(seen)))

    assert commit(backend, "d", append_two) == 2
    assert seen == [b"1", b"1+other"] and undone == [1]
    assert backend.get_manifest("d").data == b"1+other+2"


def test_a_change_that_publishes_nothing_returns_its_result(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    assert commit(backend, "d", lambda stored: ("nothing", stored)) == ("nothing", None)
    assert backend.get_manifest("d") is None
    assert commit(backend, "d", lambda stored: Publication(None, "no manifest to delete")) == "no manifest to delete"


def test_deleting_and_giving_up(tmp_path):
    backend = EmbeddedBackend(tmp_path)
    commit(backend, "d", lambda stored: Publication(b"x", None))
    assert commit(backend, "d", lambda stored: Publication(None, "deleted")) == "deleted"
    assert backend.get_manifest("d") is None

    def refuse(stored):
        raise ValueError("given up")

    with pytest.raises(ValueError, match="given up"):
        commit(backend, "d", refuse)
    assert backend.get_manifest("d") is None
