"""A store behind skyhook serve, opened with skyhook.connect("grpc://...") and
used as a local one: the same rows for the same columns and filters (text or
pyarrow expressions), SQL, writes and appends, the server's errors as the
SkyhookErrors they were, and accounts that limit what each user does."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

pytest.importorskip("pyarrow.flight")

import skyhook  # noqa: E402
from skyhook.errors import (  # noqa: E402
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidRequestError,
    PermissionDeniedError,
    StorageError,
    UnknownColumnError,
)
from skyhook.remote import password_hash, start_server  # noqa: E402
from support.certificates import self_signed  # noqa: E402

ROWS = 6000
TABLE = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "price": pa.array([i * 0.25 for i in range(ROWS)]),
        "flag": pa.array(["A", "N", "R"] * (ROWS // 3)),
        "day": pa.array([i % 400 for i in range(ROWS)], pa.int32()).cast(pa.date32()),
    }
)
USERS = {"writer": {"password": password_hash("w"), "role": "writer"}, "reader": password_hash("r")}


@pytest.fixture
def remote(store):
    store.write_dataset("lineitem", TABLE, rows_per_object=1000)
    server = start_server(store, users=USERS)
    uri = f"grpc://localhost:{server.port}"
    with skyhook.connect(uri, user="writer", password="w") as opened:
        yield store, opened, uri
    server.shutdown()


FILTERS = [
    None,
    "price > 100 and flag == 'R'",
    "id IN (1, 5, 999, 4500) OR day < '1970-01-03'",
    (pc.field("price") > 1000) & (pc.field("flag") != "A"),
    pc.field("day") >= pa.scalar(300, pa.int32()).cast(pa.date32()),
    pc.field("flag").isin(["N", "X"]),
]


@pytest.mark.parametrize("filter", FILTERS, ids=str)
@pytest.mark.parametrize("columns", [None, ["id", "flag"], []])
def test_the_same_rows_as_the_local_store(remote, filter, columns):
    store, opened, _ = remote
    local, served = store.dataset("lineitem"), opened.dataset("lineitem")
    expected = local.to_table(columns=columns, filter=filter)
    assert served.schema == local.schema
    assert served.to_table(columns=columns, filter=filter).equals(expected)
    assert pa.Table.from_batches(list(served.to_batches(columns=columns, filter=filter)), expected.schema).equals(
        expected
    )
    assert served.count_rows(filter) == expected.num_rows
    if filter is not None:
        assert served.filter(filter).to_table(columns=columns).equals(expected)
    assert served.head(7, columns=columns, filter=filter).equals(expected.slice(0, 7))


def test_sql_writes_and_appends(remote):
    store, opened, _ = remote
    query = "select flag, count(*) as n, sum(price) as total from lineitem group by flag order by flag"
    assert opened.sql(query).equals(store.sql(query))
    part = TABLE.slice(0, 100)
    loaded = opened.write_dataset("part", part)
    assert loaded.to_table().equals(part) and store.dataset("part").to_table().equals(part)
    loaded.append(part.slice(0, 10))
    assert store.dataset("part").count_rows() == 110
    opened.write_dataset("part", part.slice(0, 3), mode="overwrite")
    assert opened.dataset("part").count_rows() == 3
    assert sorted(opened.list_datasets()) == ["lineitem", "part"]
    assert opened.describe("lineitem")["rows"] == ROWS
    assert opened.fsck()["clean"]


def test_errors_arrive_as_they_were_raised(remote):
    _, opened, uri = remote
    served = opened.dataset("lineitem")
    with pytest.raises(DatasetNotFoundError, match="no dataset named 'nowhere'"):
        opened.dataset("nowhere")
    with pytest.raises(UnknownColumnError, match="unknown column 'nope'"):
        served.to_table(filter="nope > 1")
    with pytest.raises(DatasetExistsError):
        opened.write_dataset("lineitem", TABLE)
    with pytest.raises(InvalidRequestError, match="mode is one of"):
        opened.write_dataset("x", TABLE, mode="upsert")
    with pytest.raises(InvalidRequestError, match="text filters with text"):
        served.filter("id > 1").to_table(filter=pc.field("id") < 5)
    with pytest.raises(PermissionDeniedError):
        skyhook.connect(uri, user="writer", password="wrong")
    with skyhook.connect(uri + "?user=reader", password="r") as reader:
        assert reader.dataset("lineitem").count_rows("flag == 'A'") == ROWS // 3
        with pytest.raises(PermissionDeniedError, match="writer role"):
            reader.write_dataset("mine", TABLE)
        with pytest.raises(PermissionDeniedError, match="writer"):
            reader.fsck(repair=True)
    with pytest.raises(InvalidRequestError, match="invalid server URI"):
        skyhook.connect("grpc://localhost:1?namespace=x")
    with pytest.raises(InvalidRequestError, match="cannot read the CA certificate"):
        skyhook.connect("grpc+tls://localhost:1?ca=/nowhere/ca.pem")


def test_over_tls_with_the_servers_certificate(store, tmp_path):
    store.write_dataset("lineitem", TABLE)
    cert, key = self_signed(tmp_path)
    server = start_server(store, users=USERS, tls_certificate=cert, tls_key=key)
    try:
        uri = f"grpc+tls://localhost:{server.port}?user=reader&ca={cert}"
        with skyhook.connect(uri, password="r") as opened:
            assert opened.dataset("lineitem").to_table(filter="id < 3").num_rows == 3
        (tmp_path / "other").mkdir()
        other, _ = self_signed(tmp_path / "other")
        with pytest.raises(StorageError, match="cannot connect"):  # a CA that did not sign it
            skyhook.connect(f"grpc+tls://localhost:{server.port}?user=reader&ca={other}", password="r")
    finally:
        server.shutdown()


def test_a_server_that_went_away_is_a_storage_error(store):
    store.write_dataset("lineitem", TABLE)
    server = start_server(store)
    opened = skyhook.connect(f"grpc://localhost:{server.port}")
    served = opened.dataset("lineitem")
    server.shutdown()
    with pytest.raises(StorageError, match="cannot be reached"):
        served.to_table()
    opened.close()


def test_the_password_comes_from_the_environment(remote, monkeypatch):
    _, _, uri = remote
    monkeypatch.setenv("SKYHOOK_PASSWORD", "r")
    with skyhook.connect(uri, user="reader") as reader:
        assert reader.list_datasets() == ["lineitem"]


def test_mutated_expressions_get_errors_and_leave_the_server_healthy(store):
    """A client's expression is Arrow's serialization of it: hostile bytes,
    functions outside the allowed set and deep chains are refused before Arrow
    rebuilds the expression."""
    import base64
    import functools
    import json
    import operator
    import random

    import pyarrow.flight as flight

    store.write_dataset("lineitem", TABLE, rows_per_object=1000)
    server = start_server(store)
    client = flight.connect(f"grpc://localhost:{server.port}")

    def rows(expression: bytes) -> int:
        request = {"dataset": "lineitem", "expression": base64.b64encode(expression).decode()}
        info = client.get_flight_info(flight.FlightDescriptor.for_command(json.dumps(request)))
        return sum(client.do_get(endpoint.ticket).read_all().num_rows for endpoint in info.endpoints)

    seeds = [
        ((pc.field("price") > 10) & pc.field("flag").isin(["A", "R"])).__reduce__()[1][0].to_pybytes(),
        (pc.field("id").cast(pa.float64()) * 2 < 7).__reduce__()[1][0].to_pybytes(),
    ]
    assert rows(seeds[0]) == len([i for i in range(ROWS) if i * 0.25 > 10 and i % 3 != 1])
    rng, refused = random.Random(7), 0
    try:
        for _ in range(300):
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(data))
                data[at] = rng.randrange(256) if rng.random() < 0.8 else data[at] ^ 0xFF
            if rng.random() < 0.2:
                del data[rng.randrange(len(data)) :]
            try:
                rows(bytes(data))
            except flight.FlightServerError as error:
                assert "\n" not in str(error).split(". Detail")[0]
                refused += 1
        assert refused > 100
        repeat = pc.binary_repeat(pc.field("flag"), 1 << 30) == "A"
        with pytest.raises(flight.FlightServerError, match="may not call 'binary_repeat'"):
            rows(repeat.__reduce__()[1][0].to_pybytes())
        chain = functools.reduce(operator.and_, [pc.field("id") != value for value in range(1000)])
        assert rows(chain.__reduce__()[1][0].to_pybytes()) == ROWS - 1000  # rebuilt balanced
        assert rows(seeds[1]) > 0  # still healthy
    finally:
        server.shutdown()


@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_compressed_streams_read_the_same(store, compression):
    adbc = pytest.importorskip("adbc_driver_flightsql.dbapi")
    store.write_dataset("lineitem", TABLE, rows_per_object=1000)
    server = start_server(store, compression=compression)
    uri = f"grpc://localhost:{server.port}"
    try:
        with skyhook.connect(uri) as opened:
            assert (
                opened.dataset("lineitem")
                .to_table(filter="flag != 'N'")
                .equals(store.dataset("lineitem").to_table(filter="flag != 'N'"))
            )
        with adbc.connect(uri, autocommit=True) as connection, connection.cursor() as cursor:
            cursor.execute("select * from lineitem order by id")
            assert cursor.fetch_arrow_table().equals(TABLE)
    finally:
        server.shutdown()
