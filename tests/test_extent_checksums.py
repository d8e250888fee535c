"""Every byte of every format is checked before it becomes an answer: single
bits flipped anywhere in row, IPC and Parquet objects give a CorruptObjectError
or the right answer, never a wrong one, on both backends, through pushdown,
plain reads and storage-side transforms; objects written before checksums
still read; fsck --verify finds damaged objects. SKYHOOK_FLIPS sets the flips
per format (the closing measurements used 1,000)."""

from __future__ import annotations

import os
import random
import re

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook.catalog.design import DESIGN_ATTRIBUTE, ObjectDesign
from skyhook.cli import app
from support.assertions import assert_same_table
from support.tables import make_typed_table

TABLE = make_typed_table(rows=2000, seed=9)
FORMATS = ["rows", "ipc", "parquet"]
FILTER = pc.field("i32") > 0


def _flips(backend: str) -> int:
    return int(os.environ.get("SKYHOOK_FLIPS", 150 if backend == "embedded" else 40))


def _stored(store: skyhook.Store, name: str) -> tuple[bytearray, dict]:
    stored = store.backend.read_versioned_object(name)
    return bytearray(stored.data.to_pybytes()), dict(stored.attributes)


def _answers(dataset: skyhook.Dataset, pushdown: bool) -> pa.Table | None:
    """The filtered scan's rows, or None if a damaged object was refused."""
    try:
        return dataset.to_table(filter=FILTER, pushdown=pushdown)
    except skyhook.CorruptObjectError as error:
        assert "Failed to read" not in str(error) and "Detail:" not in str(error), error  # one plain line
        return None


@pytest.mark.parametrize("format", FORMATS)
def test_flipped_bits_never_give_a_wrong_answer(store, backend, format):
    dataset = store.write_dataset("t", TABLE, design=skyhook.Design(format), rows_per_object=1000)
    expected = TABLE.filter(FILTER)
    name = dataset.manifest.partitions[0].object_name
    data, attributes = _stored(store, name)
    rng = random.Random(format)
    refused = 0
    for _ in range(_flips(backend)):
        position, bit = rng.randrange(len(data)), 1 << rng.randrange(8)
        data[position] ^= bit
        store.backend.put_object(name, pa.py_buffer(bytes(data)), attributes)
        for pushdown in (True, False):
            answer = _answers(dataset, pushdown)
            if answer is None:
                refused += 1
            else:  # a flip in bytes no reader uses (the table's padding)
                assert_same_table(answer, expected)
        data[position] ^= bit
    assert refused >= 0.9 * 2 * _flips(backend)


@pytest.mark.parametrize("format", FORMATS)
def test_a_transform_refuses_a_damaged_source_or_keeps_every_value(store, backend, format):
    """A flip the checks catch is refused and nothing is written; one in bytes no
    reader uses transforms into an object holding the same rows."""
    target = "ipc" if format != "ipc" else "parquet"
    rng = random.Random(f"transform-{format}")
    refused, transformed = 0, True
    for flip in range(_flips(backend)):
        if transformed:  # the source to damage: a fresh one
            dataset = store.write_dataset(f"t{flip}", TABLE, design=skyhook.Design(format), rows_per_object=1000)
            name = dataset.manifest.partitions[0].object_name
            data, attributes = _stored(store, name)
            transformed = False
        damaged = bytearray(data)
        damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        store.backend.put_object(name, pa.py_buffer(bytes(damaged)), attributes)
        try:
            dataset.transform(skyhook.Design(target), objects=[name])
        except skyhook.CorruptObjectError as error:
            # Ceph returns a writing method's error as its errno alone (EUCLEAN: "Structure needs cleaning").
            assert re.search("checksum mismatch|Structure needs cleaning", str(error)), error
            assert _stored(store, name)[0] == damaged  # never rewritten into a well-formed object
            refused += 1
            continue
        assert_same_table(store.dataset(dataset.name).to_table(), TABLE)
        transformed = True
    assert refused >= 0.9 * _flips(backend)


@pytest.mark.parametrize("format", FORMATS)
def test_objects_written_before_checksums_still_read(store, format):
    dataset = store.write_dataset("t", TABLE, design=skyhook.Design(format), rows_per_object=1000)
    for partition in dataset.manifest.partitions:
        data, attributes = _stored(store, partition.object_name)
        # The attribute as designs were written before checksums: the same fields, none of theirs.
        attributes[DESIGN_ATTRIBUTE] = ObjectDesign.from_bytes(attributes[DESIGN_ATTRIBUTE]).to_bytes()
        store.backend.put_object(partition.object_name, pa.py_buffer(bytes(data)), attributes)
    for pushdown in (True, False):
        assert_same_table(dataset.to_table(filter=FILTER, pushdown=pushdown), TABLE.filter(FILTER))


def test_fsck_verify_reads_every_object_in_storage_and_names_the_damaged(store):
    dataset = store.write_dataset("t", TABLE, design=skyhook.Design("ipc"), rows_per_object=500)
    assert store.fsck("t", verify=True).clean
    name = dataset.manifest.partitions[2].object_name
    data, attributes = _stored(store, name)
    data[len(data) // 3] ^= 0x04
    store.backend.put_object(name, pa.py_buffer(bytes(data)), attributes)
    report = store.fsck("t", verify=True)
    assert len(report.damaged) == 1 and name in report.damaged[0] and "checksum mismatch" in report.damaged[0]
    assert not report.clean and store.fsck("t").clean  # without verify, nothing is read
    checked = CliRunner().invoke(app, ["fsck", "t", "--verify", "--store", store.uri])
    assert checked.exit_code == 1 and "damaged objects" in checked.stdout and "checksum mismatch" in checked.stdout
