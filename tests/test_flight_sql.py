"""skyhook serve as Flight SQL clients meet it, through the ADBC Flight SQL
driver (what Python, R, Go and DuckDB users run): queries answer as store.sql
does, prepared statements take parameters, the catalog lists the datasets
with their schemas, mistakes are one line and leave the server healthy, and
with a users file and TLS only the right password over TLS gets in."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

adbc = pytest.importorskip("adbc_driver_flightsql.dbapi")
from adbc_driver_manager import Error as AdbcError  # noqa: E402

from skyhook.remote import password_hash, start_server  # noqa: E402
from support.certificates import self_signed  # noqa: E402

ROWS = 5000
TABLE = pa.table(
    {
        "id": pa.array(range(ROWS), pa.int64()),
        "price": pa.array([i * 0.5 for i in range(ROWS)]),
        "flag": pa.array(["A", "N", "R"] * (ROWS // 3) + ["A"] * (ROWS % 3)),
    }
)


@pytest.fixture
def served(store):
    store.write_dataset("lineitem", TABLE, rows_per_object=1000)
    server = start_server(store)
    yield store, f"grpc://localhost:{server.port}"
    server.shutdown()


def test_queries_and_prepared_statements_answer_as_store_sql(served):
    store, uri = served
    query = "select flag, count(*) as n, sum(price) as total from lineitem where id >= 1000 group by flag order by flag"
    with adbc.connect(uri, autocommit=True) as connection, connection.cursor() as cursor:
        cursor.execute(query)
        assert cursor.fetch_arrow_table().equals(store.sql(query))
        for low in (10, 4990):
            cursor.execute("select id, price from lineitem where id >= ? and flag = ? order by id", (low, "N"))
            got = cursor.fetch_arrow_table()
            expected = TABLE.filter((pc.field("id") >= low) & (pc.field("flag") == "N")).select(["id", "price"])
            assert got.equals(expected), low
        cursor.execute("select * from lineitem order by id")
        assert cursor.fetch_arrow_table().equals(TABLE)


def test_the_catalog_lists_datasets_and_their_schemas(served):
    store, uri = served
    store.write_dataset("orders", pa.table({"o_id": [1, 2]}))
    with adbc.connect(uri, autocommit=True) as connection:
        assert connection.adbc_get_table_schema("lineitem") == TABLE.schema
        objects = connection.adbc_get_objects(depth="all").read_all().to_pylist()
        tables = {
            table["table_name"]: [column["column_name"] for column in table["table_columns"]]
            for catalog in objects
            for schema in catalog["catalog_db_schemas"]
            for table in schema["db_schema_tables"]
        }
        assert tables == {"lineitem": ["id", "price", "flag"], "orders": ["o_id"]}
        assert connection.adbc_get_table_types() == ["TABLE"]
        assert connection.adbc_get_info()["vendor_name"] == "skyhook"


def test_mistakes_are_one_line_and_leave_the_server_healthy(served):
    _, uri = served
    with adbc.connect(uri, autocommit=True) as connection, connection.cursor() as cursor:
        for statement, message in [
            ("select * from nowhere", "no dataset named 'nowhere'"),
            ("selec 1", "invalid SQL: Parser Error"),
            ("create table t (a int)", "read-only"),
            ("select id from lineitem where id = ?", ""),  # a parameter never bound
        ]:
            with pytest.raises(AdbcError) as raised:
                cursor.execute(statement)
                cursor.fetch_arrow_table()
            assert message in str(raised.value) and "Traceback" not in str(raised.value), statement
        cursor.execute("select count(*) as n from lineitem")
        assert cursor.fetch_arrow_table().column("n").to_pylist() == [ROWS]
        cursor.execute("select * from lineitem, lineitem as again limit 3000000")  # abandoned after one batch
        assert cursor.fetch_record_batch().read_next_batch().num_rows > 0
    with adbc.connect(uri, autocommit=True) as connection, connection.cursor() as cursor:
        cursor.execute("select max(id) as top from lineitem")
        assert cursor.fetch_arrow_table().column("top").to_pylist() == [ROWS - 1]


@pytest.fixture
def certificate(tmp_path):
    return self_signed(tmp_path)


def test_only_the_right_password_over_tls_gets_in(store, tmp_path, certificate):
    store.write_dataset("lineitem", TABLE)
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"alice": password_hash("correct horse")}))
    cert, key = certificate
    server = start_server(store, users=users, tls_certificate=cert, tls_key=key)
    uri = f"grpc+tls://localhost:{server.port}"
    tls = {"adbc.flight.sql.client_option.tls_root_certs": cert.read_text()}
    try:
        with adbc.connect(uri, db_kwargs={**tls, "username": "alice", "password": "correct horse"}) as connection:
            with connection.cursor() as cursor:
                for _ in range(2):  # the bearer token from the login serves the calls after
                    cursor.execute("select count(*) as n from lineitem")
                    assert cursor.fetch_arrow_table().column("n").to_pylist() == [ROWS]
        for credentials in ({}, {"username": "alice", "password": "wrong"}, {"username": "bob", "password": "x"}):
            with pytest.raises(AdbcError, match="(?i)unauthenticated|authentication"):
                with adbc.connect(uri, db_kwargs={**tls, **credentials}) as connection, connection.cursor() as cursor:
                    cursor.execute("select 1")
        with pytest.raises(AdbcError):  # plain gRPC to a TLS server
            with adbc.connect(f"grpc://localhost:{server.port}") as connection, connection.cursor() as cursor:
                cursor.execute("select 1")
    finally:
        server.shutdown()


def test_malformed_requests_get_one_line(served):
    """What no driver sends but anyone can: garbage commands, paths, tickets, actions."""
    import pyarrow.flight as flight

    from skyhook.flight import messages

    _, uri = served
    client = flight.connect(uri)
    query = messages.pack(messages.make("CommandStatementQuery", query="select count(*) as n from lineitem"))
    info = client.get_flight_info(flight.FlightDescriptor.for_command(query))
    assert client.do_get(info.endpoints[0].ticket).read_all().column("n").to_pylist() == [ROWS]
    for call, message in [
        (lambda: client.get_flight_info(flight.FlightDescriptor.for_command(b"\xff\x00garbage")), "Flight SQL command"),
        (lambda: client.get_flight_info(flight.FlightDescriptor.for_path("a", "b")), "a path names one dataset"),
        (lambda: client.do_get(flight.Ticket(b"")).read_all(), "unsupported Flight SQL command"),
        (lambda: list(client.do_action(flight.Action("DropEverything", b""))), "unknown action"),
        (lambda: list(client.do_action(flight.Action("ClosePreparedStatement", query))), "ActionClose"),
    ]:
        with pytest.raises(flight.FlightError) as raised:
            call()
        assert message in str(raised.value) and "Traceback" not in str(raised.value), message
    forged = messages.pack(messages.make("TicketStatementQuery", statement_handle=b"qdelete from lineitem"))
    with pytest.raises(flight.FlightError, match="read-only"):
        client.do_get(flight.Ticket(forged)).read_all()
    assert client.do_get(info.endpoints[0].ticket).read_all().column("n").to_pylist() == [ROWS]


def test_plain_flight_reads_a_dataset_in_parallel_endpoints(served):
    """pyarrow.flight without SQL: an endpoint per group of the objects the
    filter leaves, each read on its own, together the filter's rows."""
    import pyarrow.flight as flight

    from skyhook.remote.dataset_flights import DEFAULT_ENDPOINTS

    store, uri = served
    client = flight.connect(uri)
    whole = client.get_flight_info(flight.FlightDescriptor.for_path("lineitem"))
    assert len(whole.endpoints) == DEFAULT_ENDPOINTS and whole.schema == TABLE.schema  # 1 per 4 cores
    whole = client.get_flight_info(
        flight.FlightDescriptor.for_command(json.dumps({"dataset": "lineitem", "endpoints": 4}))
    )
    assert len(whole.endpoints) == 4
    parts = [client.do_get(endpoint.ticket).read_all() for endpoint in whole.endpoints]
    assert pa.concat_tables(parts).sort_by("id").equals(TABLE)
    request = {"dataset": "lineitem", "columns": ["id", "flag"], "filter": "id >= 2500 AND flag = 'R'", "endpoints": 8}
    info = client.get_flight_info(flight.FlightDescriptor.for_command(json.dumps(request)))
    assert len(info.endpoints) == 3  # objects 0-1 pruned by their statistics; one object an endpoint
    got = pa.concat_tables([client.do_get(endpoint.ticket).read_all() for endpoint in info.endpoints])
    expected = TABLE.filter((pc.field("id") >= 2500) & (pc.field("flag") == "R")).select(["id", "flag"])
    assert got.sort_by("id").equals(expected)
    store.write_dataset("lineitem", TABLE.slice(0, 10), mode="overwrite")
    with pytest.raises(flight.FlightError, match="overwritten"):  # a ticket of the replaced dataset
        client.do_get(info.endpoints[0].ticket).read_all()
    for bad, message in [
        ({"dataset": "lineitem", "endpoints": 0}, "invalid dataset request"),
        ({"dataset": "lineitem", "filter": "nope >"}, "cannot parse filter"),
        ({"table": "lineitem"}, "JSON of dataset"),
        ({"dataset": "nowhere"}, "nowhere"),
    ]:
        with pytest.raises(flight.FlightError, match=message):
            client.get_flight_info(flight.FlightDescriptor.for_command(json.dumps(bad)))


def test_polars_reads_through_the_adbc_connection(served):
    polars = pytest.importorskip("polars")
    store, uri = served
    query = "select flag, count(*) as n from lineitem group by flag order by flag"
    with adbc.connect(uri, autocommit=True) as connection:
        frame = polars.read_database(query, connection)
    assert frame.to_arrow().equals(store.sql(query).cast(frame.to_arrow().schema))


def test_limits_stop_long_and_excess_queries(store):
    import pyarrow.flight as flight

    from skyhook.flight import messages
    from skyhook.remote import Limits

    store.write_dataset("lineitem", TABLE)
    server = start_server(store, limits=Limits(query_seconds=1.0, queries_per_user=1, queue_seconds=0.5))
    try:
        with adbc.connect(f"grpc://localhost:{server.port}", autocommit=True) as connection:
            with connection.cursor() as cursor:
                with pytest.raises(AdbcError, match="past its time limit of 1 s"):
                    cursor.execute("select count(*) from lineitem a, lineitem b, lineitem c")
                    cursor.fetch_arrow_table()
        client = flight.connect(f"grpc://localhost:{server.port}")

        def ticket(query: str) -> flight.Ticket:
            command = messages.pack(messages.make("CommandStatementQuery", query=query))
            return client.get_flight_info(flight.FlightDescriptor.for_command(command)).endpoints[0].ticket

        big = client.do_get(ticket("select a.id, b.id as other from lineitem a, lineitem b"))  # 25 M rows
        big.read_chunk()  # streaming: it holds the one slot, its rows wait for the reader
        with pytest.raises(flight.FlightError, match=r"already run 1 queries \(the limit\)"):
            client.do_get(ticket("select count(*) from lineitem")).read_all()  # waited 0.5 s for a slot
        big.cancel()  # the client goes: the slot comes back
        deadline = time.monotonic() + 10
        while True:
            try:
                assert client.do_get(ticket("select * from lineitem")).read_all().num_rows == ROWS
                break
            except flight.FlightError:
                assert time.monotonic() < deadline, "the cancelled query's slot never came back"
                time.sleep(0.2)
    finally:
        server.shutdown()


def test_a_result_past_its_byte_limit_stops_with_an_error(store):
    from skyhook.remote import Limits

    store.write_dataset("lineitem", TABLE, rows_per_object=1000)
    server = start_server(store, limits=Limits(result_bytes=20_000))
    try:
        with adbc.connect(f"grpc://localhost:{server.port}", autocommit=True) as connection:
            with connection.cursor() as cursor:
                with pytest.raises(AdbcError, match="the result passed 20000 bytes"):
                    cursor.execute("select * from lineitem")
                    cursor.fetch_arrow_table()
                cursor.execute("select flag, count(*) as n from lineitem group by flag")
                assert cursor.fetch_arrow_table().num_rows == 3
    finally:
        server.shutdown()


def server_information(uri: str, user: str, password: str) -> dict[int, object]:
    """GetSqlInfo's READ_ONLY (3) and BULK_INGESTION (10) as user sees them."""
    import pyarrow.flight as flight

    from skyhook.flight import messages

    client = flight.connect(uri)
    options = flight.FlightCallOptions(headers=[client.authenticate_basic_token(user, password)])
    command = messages.pack(messages.make("CommandGetSqlInfo", info=[3, 10]))
    info = client.get_flight_info(flight.FlightDescriptor.for_command(command), options)
    rows = client.do_get(info.endpoints[0].ticket, options).read_all().to_pylist()
    return {row["info_name"]: row["value"] for row in rows}


def test_writers_load_data_readers_cannot(store):
    users = {"writer": {"password": password_hash("w"), "role": "writer"}, "reader": password_hash("r")}
    server = start_server(store, users=users)
    uri = f"grpc://localhost:{server.port}"
    part = TABLE.slice(0, 100)
    try:
        with adbc.connect(uri, db_kwargs={"username": "writer", "password": "w"}, autocommit=True) as connection:
            with connection.cursor() as cursor:
                assert cursor.adbc_ingest("loaded", part, mode="create") == 100
                assert cursor.adbc_ingest("loaded", part, mode="append") == 100
                with pytest.raises(AdbcError, match="exists"):
                    cursor.adbc_ingest("loaded", part, mode="create")
                cursor.execute("select count(*) as n from loaded")
                assert cursor.fetch_arrow_table().column("n").to_pylist() == [200]
                assert cursor.adbc_ingest("loaded", part.slice(0, 7), mode="replace") == 7
        assert store.dataset("loaded").to_table().equals(part.slice(0, 7))
        with adbc.connect(uri, db_kwargs={"username": "reader", "password": "r"}, autocommit=True) as connection:
            with connection.cursor() as cursor, pytest.raises(AdbcError, match="writer role"):
                cursor.adbc_ingest("loaded", part, mode="append")
        assert store.dataset("loaded").count_rows() == 7
        assert server_information(uri, "writer", "w") == {3: False, 10: True}  # read-only, bulk ingestion
        assert server_information(uri, "reader", "r") == {3: True, 10: False}
    finally:
        server.shutdown()
    anonymous = start_server(store)
    try:
        with adbc.connect(f"grpc://localhost:{anonymous.port}", autocommit=True) as connection:
            with connection.cursor() as cursor, pytest.raises(AdbcError, match="writer role"):
                cursor.adbc_ingest("other", part, mode="create")
    finally:
        anonymous.shutdown()
    assert "other" not in store.list_datasets()


JDBC_JAR = (
    Path.home() / ".m2/repository/org/apache/arrow/flight-sql-jdbc-driver/18.3.0/flight-sql-jdbc-driver-18.3.0.jar"
)


def test_the_jdbc_driver_lists_and_queries(served):
    """A JVM tool's view (DBeaver, Tableau): the Flight SQL JDBC driver."""
    if shutil.which("java") is None or not JDBC_JAR.exists():
        pytest.skip("no Java or no JDBC driver: scripts/fetch-jdbc.sh fetches it (scripts/test.sh runs it)")
    store, uri = served
    program = Path(__file__).parent / "jdbc" / "FlightSqlQuery.java"
    url = uri.replace("grpc://", "jdbc:arrow-flight-sql://") + "/?useEncryption=false"
    run = subprocess.run(
        ["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", str(JDBC_JAR), str(program), url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    grouped = store.sql("select flag, count(*) as n from lineitem where id >= 1000 group by flag order by flag")
    expected = ["table lineitem"] + [f"group {flag} {n}" for flag, n in zip(*grouped.to_pydict().values())]
    assert lines == [*expected, f"count {ROWS}"]


def test_administrative_actions(store):
    import pyarrow.flight as flight

    store.write_dataset("lineitem", TABLE, rows_per_object=2500)
    users = {"writer": {"password": password_hash("w"), "role": "writer"}, "reader": password_hash("r")}
    server = start_server(store, users=users)
    try:
        reader = flight.connect(f"grpc://localhost:{server.port}")
        options = flight.FlightCallOptions(headers=[reader.authenticate_basic_token("reader", "r")])

        def act(client, kind, body=b"", call_options=options):
            return json.loads(next(iter(client.do_action(flight.Action(kind, body), call_options))).body.to_pybytes())

        kinds = {action.type for action in reader.list_actions(options)}
        assert kinds >= {"skyhook.list", "skyhook.describe", "skyhook.fsck", "CreatePreparedStatement"}
        listed = act(reader, "skyhook.list")
        assert [(entry["name"], entry["rows"], entry["objects"]) for entry in listed] == [("lineitem", ROWS, 2)]
        described = act(reader, "skyhook.describe", b'{"dataset": "lineitem"}')
        assert [p["rows"] for p in described["partitions"]] == [2500, 2500] and "flag: string" in described["schema"]
        assert act(reader, "skyhook.fsck")["clean"] is True
        with pytest.raises(flight.FlightUnauthorizedError, match="writer role"):
            act(reader, "skyhook.fsck", b'{"repair": true}')
        with pytest.raises(flight.FlightError, match="no dataset named 'nowhere'"):
            act(reader, "skyhook.describe", b'{"dataset": "nowhere"}')
        writer = flight.connect(f"grpc://localhost:{server.port}")
        written = flight.FlightCallOptions(headers=[writer.authenticate_basic_token("writer", "w")])
        assert act(writer, "skyhook.fsck", b'{"repair": true}', written)["clean"] is True
        metrics = act(reader, "skyhook.metrics")
        assert metrics["calls"]["do_action"]["calls"] >= 6 and metrics["calls"]["do_action"]["errors"] == 2
    finally:
        server.shutdown()


def test_users_mapped_to_stores_see_only_their_own(store, tmp_path):
    """A user given a store (a RADOS namespace on Ceph, another directory
    embedded) sees and loads only there; the others, the server's."""
    store.write_dataset("lineitem", TABLE)
    base = store.uri
    own = f"{base}&namespace=team_b" if base.startswith("ceph://") else (tmp_path / "team_b").as_uri()
    import skyhook

    with skyhook.connect(own) as theirs:
        theirs.write_dataset("orders", pa.table({"o_id": [1, 2, 3]}))
    users = {
        "alice": password_hash("a"),
        "bob": {"password": password_hash("b"), "role": "writer", "store": own},
    }
    server = start_server(store, users=users)
    uri = f"grpc://localhost:{server.port}"
    try:
        seen = {}
        for user, password in (("alice", "a"), ("bob", "b")):
            with adbc.connect(uri, db_kwargs={"username": user, "password": password}, autocommit=True) as connection:
                objects = connection.adbc_get_objects(depth="tables").read_all().to_pylist()
                seen[user] = sorted(
                    table["table_name"]
                    for catalog in objects
                    for schema in catalog["catalog_db_schemas"]
                    for table in schema["db_schema_tables"]
                )
                with connection.cursor() as cursor:
                    with pytest.raises(AdbcError, match="no dataset named"):
                        cursor.execute("select * from " + ("orders" if user == "alice" else "lineitem"))
                        cursor.fetch_arrow_table()
                    if user == "bob":
                        cursor.adbc_ingest("loaded", TABLE.slice(0, 5), mode="create")
        assert seen == {"alice": ["lineitem"], "bob": ["orders"]}
        assert "loaded" not in store.list_datasets()
        with skyhook.connect(own) as theirs:
            assert theirs.dataset("loaded").count_rows() == 5
    finally:
        server.shutdown()


def test_what_a_hostile_client_sends_costs_it_nothing(store):
    """Found by review: an abandoned DoGet kept its slot for good, EXPLAIN ANALYZE
    ran any statement, %-heavy patterns took exponential time, table names were
    case-sensitive, prepared statements piled up without bound."""
    import pyarrow.flight as flight

    from skyhook.flight import messages
    from skyhook.remote import Limits

    store.write_dataset("lineitem", TABLE)
    server = start_server(store, limits=Limits(query_seconds=5.0, queries_per_user=1, prepared_per_user=2))
    client = flight.connect(f"grpc://localhost:{server.port}")

    def ticket(query: str) -> flight.Ticket:
        command = messages.pack(messages.make("CommandStatementQuery", query=query))
        return client.get_flight_info(flight.FlightDescriptor.for_command(command)).endpoints[0].ticket

    try:
        slow = ticket("select count(*) as n from lineitem a, lineitem b, lineitem c where a.id + b.id + c.id = 7")
        with pytest.raises(flight.FlightError):  # the client gives up before the first batch
            client.do_get(slow, flight.FlightCallOptions(timeout=0.2)).read_all()
        assert client.do_get(ticket("select count(*) as n from LineItem")).read_all().column("n").to_pylist() == [ROWS]
        for statement in ("explain analyze select 1", "explain select 1", "pragma version"):
            with pytest.raises(flight.FlightError, match="one SELECT statement"):
                ticket(statement)
        started = time.monotonic()
        tables = messages.make("CommandGetTables", table_name_filter_pattern="%" * 40 + "Z")
        info = client.get_flight_info(flight.FlightDescriptor.for_command(messages.pack(tables)))
        assert client.do_get(info.endpoints[0].ticket).read_all().num_rows == 0
        assert time.monotonic() - started < 2
        with pytest.raises(flight.FlightError, match="not UTF-8"):
            handle = b"q\xff\xfe"
            forged = messages.pack(messages.make("TicketStatementQuery", statement_handle=handle))
            client.do_get(flight.Ticket(forged)).read_all()
        create = messages.pack(messages.make("ActionCreatePreparedStatementRequest", query="select 1"))
        for _ in range(2):
            list(client.do_action(flight.Action("CreatePreparedStatement", create)))
        with pytest.raises(flight.FlightError, match="prepared statements are open"):
            list(client.do_action(flight.Action("CreatePreparedStatement", create)))
    finally:
        server.shutdown()


def test_skyhook_serve_runs_until_terminated(tmp_path):
    """The command an operator runs: settings from a file, the environment
    and options (in that order of strength); it says where it listens, serves,
    and a SIGTERM stops it once running calls are done."""
    import os
    import signal
    import sys

    import skyhook

    uri = (tmp_path / "store").as_uri()
    with skyhook.connect(uri) as store:
        store.write_dataset("lineitem", TABLE)
    settings = tmp_path / "serve.toml"
    settings.write_text(f'store = "{uri}"\nport = 31999\nquery_timeout = 600\n')
    environment = {**os.environ, "SKYHOOK_SERVE_QUERY_TIMEOUT": "1.5"}
    process = subprocess.Popen(
        [sys.executable, "-m", "skyhook.cli", "serve", "--config", str(settings), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
    )  # fmt: skip
    try:
        line = process.stdout.readline()
        assert line.startswith(f"serving {uri} at grpc://localhost:") and ":31999" not in line, line
        with adbc.connect(line.split(" at ")[1].strip(), autocommit=True) as connection:
            with connection.cursor() as cursor:
                cursor.execute("select count(*) as n from lineitem")
                assert cursor.fetch_arrow_table().column("n").to_pylist() == [ROWS]
                with pytest.raises(AdbcError, match=r"past its time limit of 1.5 s"):
                    cursor.execute("select count(*) from lineitem a, lineitem b, lineitem c")
                    cursor.fetch_arrow_table()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        assert "call=do_get" in process.stderr.read()  # a log line per call
    finally:
        process.kill()
    settings.write_text("query_timeot = 5\n")
    wrong = subprocess.run(
        [sys.executable, "-m", "skyhook.cli", "serve", "--config", str(settings)], capture_output=True, text=True
    )
    assert wrong.returncode == 2 and "names no setting 'query_timeot'" in wrong.stderr
