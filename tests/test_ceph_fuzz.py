"""Fuzzing live OSDs: the seed requests of cpp/fuzz (and every regression input)
go, mutated, through the RADOS backend to the seed objects on the session's
real cluster. Every reply must decode (an error or a success) within the call
timeout, and afterwards every OSD is the same process as before and up. The
writing methods get the same, on objects a store wrote whose omap holds
mutated statistics and index blocks; every object stays readable after them."""

from __future__ import annotations

import collections
import json
import random
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from skyhook.backends.rados import RadosBackend
from skyhook.dev.cluster import POOL
from skyhook.errors import SkyhookError, StorageTimeoutError
from skyhook.rpc.frame import encode_request_frame
from skyhook.rpc.reply import Reply, decode_reply

ROOT = Path(__file__).resolve().parents[1]
FUZZ = ROOT / "cpp/fuzz"
METHODS = ["scan", "describe", "execute_plan"]  # the order of kMethods: the selector byte's meaning
FORMATS = {".parquet": "parquet", ".arrow": "ipc", ".rows": "rows"}
# fuzz_objects' selector byte: format attribute (kFormats in fuzz_objects.cc) and fixed request
# kFormats of fuzz_objects.cc; "design": a length, a skyhook.design attribute, then the object.
OBJECT_FORMATS = ["parquet", "ipc", "rows", "ipc", "parquet", "design", None, "csv"]
SECONDS = 20
WRITING_SECONDS = 15
WRITING_METHODS = ["analyze", "create_index", "drop_index", "transform"]  # kWritingMethods of fuzz_writes.cc
CALL_TIMEOUT_SECONDS = 15


def mutate_bytes(data: bytes, others: list[bytes], rng: random.Random) -> bytes:
    """Byte flips, a truncation or a splice with another byte string."""
    data = bytearray(data)
    kind = rng.randrange(3)
    if kind == 0 and data:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    elif kind == 1:
        del data[rng.randrange(len(data) + 1) :]
    else:
        other = rng.choice(others)
        data = data[: rng.randrange(len(data) + 1)] + other[rng.randrange(len(other) + 1) :]
    return bytes(data)


def header_fields(request: bytes) -> dict:
    header_length = int.from_bytes(request[8:12], "little")
    header = pa.ipc.open_stream(request[16 : 16 + header_length]).read_next_batch()
    return {name: column[0].as_py() for name, column in zip(header.schema.names, header.columns)}


def mutate(request: bytes, seeds: list[bytes], substrait: list[bytes], rng: random.Random) -> bytes:
    """Mostly a Substrait field of the header mutated and the request framed again,
    so the mutation gets past the envelope; otherwise the raw request mutated."""
    fields = header_fields(request)
    binary = [name for name, value in fields.items() if isinstance(value, bytes)]
    if not binary or rng.random() < 0.25:
        return mutate_bytes(request, seeds, rng)
    name = rng.choice(binary)
    fields[name] = mutate_bytes(fields[name], substrait, rng)
    return encode_request_frame(fields)


@pytest.fixture
def fuzz_backend(ceph_cluster, tmp_path):
    # The backend's own timeout covers monitor operations only: bound OSD calls
    # too, so a call to a crashed or wedged OSD fails instead of hanging.
    conf = tmp_path / "ceph.conf"
    conf.write_text(ceph_cluster.conf.read_text() + f"\n[client]\nrados osd op timeout = {CALL_TIMEOUT_SECONDS}\n")
    backend = RadosBackend(
        POOL, str(conf), namespace=f"fuzz-{uuid.uuid4().hex[:12]}", timeout_seconds=CALL_TIMEOUT_SECONDS
    )
    yield backend
    backend.close()
    for osd in ceph_cluster.osd_ids():  # leave the session's cluster whole for the tests after this one
        if ceph_cluster.pid(f"osd.{osd}") is None:
            ceph_cluster.start_osd(osd)


def replay_object_regressions(backend: RadosBackend) -> None:
    """Every fuzz_objects regression input: its object stored, its fixed request sent."""
    fixed = sorted((FUZZ / "fixed_requests").iterdir())
    for path in sorted((FUZZ / "regressions/fuzz_objects").glob("*")):
        data = path.read_bytes()
        format, request = OBJECT_FORMATS[data[0] % 8], fixed[data[0] // 8 % len(fixed)]
        if format == "design":
            length = min(int.from_bytes(data[1:5], "little"), max(0, len(data) - 5))
            attributes, data = {"skyhook.design": data[5 : 5 + length]}, data[4 + length :]
        else:
            attributes = {"skyhook.format": format} if format else {}
        backend.put_object(path.name, pa.py_buffer(data[1:]), attributes)
        decode_reply(backend.call(path.name, request.suffix[1:], request.read_bytes()))


def test_mutated_requests_leave_every_osd_up(ceph_cluster, fuzz_backend, tmp_path):
    objects = sorted((FUZZ / "objects").iterdir())
    for path in objects:
        fuzz_backend.put_object(path.name, pa.py_buffer(path.read_bytes()), {"skyhook.format": FORMATS[path.suffix]})
    entries = [path.read_bytes() for path in sorted((FUZZ / "corpus/fuzz_requests").iterdir())]
    seeds = [entry[1:] for entry in entries]  # the corpus files start with the selector byte
    substrait = [value for seed in seeds for value in header_fields(seed).values() if isinstance(value, bytes)]
    regressions = [path.read_bytes() for path in sorted((FUZZ / "regressions/fuzz_requests").glob("*"))]
    before = osd_processes(ceph_cluster)
    replay_object_regressions(fuzz_backend)

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    sent, failure = 0, None
    deadline = time.monotonic() + SECONDS
    inputs = iter(regressions)
    while time.monotonic() < deadline:
        data = next(inputs, None)
        if data is None:
            entry = rng.choice(entries)
            selector = entry[0] if rng.random() < 0.75 else rng.randrange(256)  # mostly the seed's own method
            data = bytes([selector]) + mutate(entry[1:], seeds, substrait, rng)
        method = METHODS[data[0] % len(METHODS)]
        name = objects[data[0] // len(METHODS) % len(objects)].name
        try:
            decode_reply(fuzz_backend.call(name, method, data[1:]))
        except Exception as error:  # no reply in time (an OSD died?), or one that does not decode
            saved = tmp_path / "failed-input"
            saved.write_bytes(data)  # replayable in-process: build/fuzz/cpp/fuzz/fuzz_requests FILE
            failure = f"{method} on {name} ({saved}): {error}"
            break
        sent += 1
    print(f"{sent} requests to live OSDs (random seed {seed})")
    assert failure is None, f"call {sent + 1} failed: {failure}"
    assert_osds_unchanged(ceph_cluster, before)
    assert sent > 100


def osd_processes(ceph_cluster) -> dict[int, int | None]:
    processes = {osd: ceph_cluster.pid(f"osd.{osd}") for osd in ceph_cluster.osd_ids()}
    assert all(processes.values())
    return processes


def assert_osds_unchanged(ceph_cluster, before: dict[int, int | None]) -> None:
    after = {osd: ceph_cluster.pid(f"osd.{osd}") for osd in ceph_cluster.osd_ids()}
    osd_map = json.loads(ceph_cluster.ceph("osd", "dump", "--format", "json"))
    down = [osd["osd"] for osd in osd_map["osds"] if not osd["up"]]
    assert after == before, f"OSD processes changed: {before} -> {after}"
    assert not down, f"OSDs down: {down}"


def written_input(data: bytes) -> tuple[int, bytes, dict[str, bytes]]:
    """A fuzz_writes input as fuzz_writes.cc's Parse reads it: selector byte, request, omap entries."""
    size = min(int.from_bytes(data[1:5], "little"), max(0, len(data) - 5))
    request, at, omap = data[5 : 5 + size], 5 + size, {}
    while at + 2 <= len(data):
        key_size = int.from_bytes(data[at : at + 2], "little")
        if at + 2 + key_size + 4 > len(data):
            break
        key = data[at + 2 : at + 2 + key_size].decode()
        at += 2 + key_size
        value_size = min(int.from_bytes(data[at : at + 4], "little"), len(data) - at - 4)
        omap[key] = data[at + 4 : at + 4 + value_size]
        at += 4 + value_size
    return data[0], request, omap


def framed_written_input(selector: int, request: bytes, omap: dict[str, bytes]) -> bytes:
    entries = b"".join(
        len(key.encode()).to_bytes(2, "little") + key.encode() + len(value).to_bytes(4, "little") + value
        for key, value in omap.items()
    )
    return bytes([selector]) + len(request).to_bytes(4, "little") + request + entries


def written_objects() -> list[tuple[bytes, dict[str, bytes]]]:
    """cpp/fuzz/written's objects with their design attributes, in fuzz_writes.cc's order."""
    paths = sorted(path for path in (FUZZ / "written").iterdir() if path.suffix != ".design")
    return [(path.read_bytes(), {"skyhook.design": Path(f"{path}.design").read_bytes()}) for path in paths]


def checked(backend: RadosBackend, name: str, method: str, request: bytes) -> Reply | None:
    """The reply, None for a refused write: on Ceph a writing method answers with
    its errno alone, or nothing when it succeeds."""
    try:
        reply = backend.call(name, method, request)
        if method in WRITING_METHODS and not reply and not backend.writer_replies:
            return Reply(0, "")
        decoded = decode_reply(reply)
        if method in WRITING_METHODS or decoded.code != 0:
            return decoded
        return decoded.with_rows()  # every row validated
    except StorageTimeoutError:
        raise
    except SkyhookError:
        if method in WRITING_METHODS:
            return None
        raise


def test_mutated_writing_requests_leave_every_osd_up_and_objects_readable(ceph_cluster, fuzz_backend, tmp_path):
    objects = written_objects()
    entries = [written_input(path.read_bytes()) for path in sorted((FUZZ / "corpus/fuzz_writes").iterdir())]
    seeds = [request for _, request, _ in entries]
    substrait = [value for seed in seeds for value in header_fields(seed).values() if isinstance(value, bytes)]
    scan_all = (FUZZ / "fixed_requests/fixed-scan-all.scan").read_bytes()
    describe = (FUZZ / "fixed_requests/fixed-describe.describe").read_bytes()
    before = osd_processes(ceph_cluster)

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    sent, accepted, failure = 0, collections.Counter(), None
    deadline = time.monotonic() + WRITING_SECONDS
    while time.monotonic() < deadline and failure is None:
        selector, request, omap = rng.choice(entries)
        if rng.random() < 0.25:
            selector = rng.randrange(256)  # another method or object
        if omap and rng.random() < 0.5:
            key = rng.choice(sorted(omap))
            omap = {**omap, key: mutate_bytes(omap[key], list(omap.values()), rng)}
        if rng.random() < 0.75:  # else the request as sent, on a mutated omap: writes that succeed
            request = mutate(request, seeds, substrait, rng)
        method = WRITING_METHODS[selector % len(WRITING_METHODS)]
        data, attributes = objects[selector // len(WRITING_METHODS) % len(objects)]
        name = f"written-{sent}"
        fuzz_backend.put_object(name, pa.py_buffer(data), attributes)
        fuzz_backend._do(fuzz_backend._pool.omap_set, name, omap)
        try:
            first = checked(fuzz_backend, name, "scan", scan_all)
            written = checked(fuzz_backend, name, method, request)
            after = checked(fuzz_backend, name, "scan", scan_all)
            checked(fuzz_backend, name, "describe", describe)
            checked(fuzz_backend, name, "secondary_design", describe)
            accepted[method] += written is not None and written.code == 0
            if method == "transform" and written is not None and written.code == first.code == 0:
                # One that names the rows to keep (a delete's) may keep fewer, never more.
                kept = after.rows.num_rows <= first.rows.num_rows if b"rows" in request else None
                assert after.code == 0 and (kept or after.rows.num_rows == first.rows.num_rows), "a transform lost rows"
        except Exception as error:  # no reply in time, one that does not decode, or lost rows
            saved = tmp_path / "failed-input"  # replayable in-process: build/fuzz/cpp/fuzz/fuzz_writes FILE
            saved.write_bytes(framed_written_input(selector, request, omap))
            failure = f"{method} ({saved}): {error!r}"
        fuzz_backend.delete_object(name)
        sent += 1
    print(f"{sent} writing requests to live OSDs, accepted {dict(accepted)} (random seed {seed})")
    assert failure is None, failure
    assert_osds_unchanged(ceph_cluster, before)
    assert sent > 20 and accepted["transform"] > 0
