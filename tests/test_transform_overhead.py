"""What a distributed transform pays per partition, kept small without
loosening anything: decoded designs and manifests are reused only for the same
bytes (a corrupt one fails every time), and the embedded store makes a
partition object's name durable before any manifest can name it."""

from __future__ import annotations

import pyarrow as pa
import pytest

import skyhook
from skyhook.backends import embedded
from skyhook.catalog.design import ObjectDesign
from skyhook.catalog.manifest import Manifest
from skyhook.errors import CorruptManifestError

TABLE = pa.table({"k": pa.array(range(3000)), "v": pa.array([i * 0.5 for i in range(3000)])})


def test_corrupt_manifest_fails_every_time_after_good_ones(tmp_path):
    store = skyhook.connect(str(tmp_path / "s"))
    store.write_dataset("t", TABLE, rows_per_object=1000)
    data = store.backend.get_manifest("t").data
    first = Manifest.from_bytes(data, "t")
    assert Manifest.from_bytes(bytes(data), "t") == first
    assert [p.num_rows for p in first.partitions] == [1000, 1000, 1000]
    for corrupt in (data[: len(data) // 2], data[:-1] + bytes([data[-1] ^ 0xFF]), b""):
        for _ in range(2):
            with pytest.raises(CorruptManifestError, match="manifest of dataset 't'"):
                Manifest.from_bytes(corrupt, "t")
    with pytest.raises(CorruptManifestError):  # good bytes, another dataset's name: checked again
        Manifest.from_bytes(data, "u")


def test_design_decoded_once_per_value_and_malformed_ones_refused_each_time():
    design = ObjectDesign.request(skyhook.Design("parquet", column_groups="each"), ["k", "v"], 3)
    encoded = design.to_bytes()
    assert ObjectDesign.from_bytes(encoded) == design
    assert ObjectDesign.from_bytes(pa.py_buffer(encoded)) is ObjectDesign.from_bytes(encoded)
    assert ObjectDesign._decode(encoded) == design  # the memo returns what a decode does
    for _ in range(2):
        with pytest.raises(ValueError, match="malformed design"):
            ObjectDesign.from_bytes(encoded[: len(encoded) // 2])


def test_object_names_synced_before_a_manifest_names_them(tmp_path, monkeypatch):
    events: list[tuple[str, str]] = []
    atomic_write, fsync_directory = embedded._atomic_write, embedded._fsync_directory

    def recorded_write(path, data, attributes, **options):
        events.append(("write", path.parent.name))
        return atomic_write(path, data, attributes, **options)

    def recorded_sync(directory):
        events.append(("sync", directory.name))
        fsync_directory(directory)

    monkeypatch.setattr(embedded, "_atomic_write", recorded_write)
    monkeypatch.setattr(embedded, "_fsync_directory", recorded_sync)
    store = skyhook.connect(str(tmp_path / "s"))
    events.clear()
    store.write_dataset("t", TABLE, rows_per_object=1000)
    objects = [i for i, event in enumerate(events) if event == ("write", "objects")]
    manifest = events.index(("write", "manifests"))
    assert len(objects) == 3 and objects[-1] < manifest
    assert ("sync", "objects") in events[objects[-1] : manifest]
    # Only the manifest write syncs the objects' directory: once, not once an object.
    assert events.count(("sync", "objects")) == 1
    assert store.dataset("t").to_table().equals(TABLE)
