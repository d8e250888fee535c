"""The S3 baseline on a real one-OSD cluster: RGW started by the project's
tooling (dev/gateway.py), datasets of every type published as Parquet files
(dev/s3_baseline.py), read by pyarrow and DuckDB over S3 with the rows
skyhook's own scan and the oracle give; RGW's counters show each run reads
from the gateway; a stop and start keeps the endpoint and user."""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import skyhook
from skyhook.cli import app
from skyhook.dev.cluster import LocalCluster
from skyhook.dev.gateway import NAME, Gateway, S3Endpoint
from skyhook.dev.s3_baseline import duckdb_over_s3, publish_dataset, pyarrow_over_s3, s3_filesystem
from support.assertions import assert_same_table
from support.oracle import expected
from support.stores import BACKENDS
from support.tables import make_typed_table

pytestmark = pytest.mark.skipif("ceph" not in BACKENDS, reason="SKYHOOK_TEST_CEPH=0")

BUCKET = "baseline"
ROWS, ROWS_PER_OBJECT, ROW_GROUP = 3000, 800, 500  # 4 objects of 2 row groups each
# Parquet objects go byte for byte; IPC ones are rewritten with the design's row groups and codec.
DESIGNS = {
    "parquet": skyhook.Design(format="parquet", compression="zstd", row_group_size=ROW_GROUP),
    "ipc": skyhook.Design(format="ipc", compression="lz4", row_group_size=ROW_GROUP),
}
FILTER = (pc.field("id") < 1000) & (pc.field("i32") > 0)
WHERE = "id < 1000 and i32 > 0"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("gateway") / "cluster"
    cluster = LocalCluster(directory)
    cluster.up(osds=1, store="memstore", worker=False)
    yield cluster
    cluster.down()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def endpoint(cluster: LocalCluster) -> S3Endpoint:
    return Gateway(cluster).up()


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return make_typed_table(ROWS)


@pytest.fixture(scope="module")
def datasets(cluster: LocalCluster, endpoint: S3Endpoint, table: pa.Table) -> Iterator[dict[str, skyhook.Dataset]]:
    with skyhook.connect(cluster.uri) as store:
        written = {}
        for prefix, design in DESIGNS.items():
            written[prefix] = store.write_dataset(prefix, table, design=design, rows_per_object=ROWS_PER_OBJECT)
            publish_dataset(written[prefix], endpoint, BUCKET, prefix)
        yield written


def test_parquet_objects_are_published_byte_for_byte(cluster, endpoint, datasets):
    dataset = datasets["parquet"]
    filesystem = s3_filesystem(endpoint)
    partitions = dataset.manifest.partitions
    assert len(partitions) == 4
    for partition in partitions:
        with filesystem.open_input_file(f"{BUCKET}/parquet/part-{partition.number:05d}.parquet") as file:
            assert file.read() == dataset.store.backend.read_object(partition.object_name)


def test_other_designs_are_written_with_their_row_groups_codec_and_statistics(endpoint, datasets):
    filesystem = s3_filesystem(endpoint)
    with filesystem.open_input_file(f"{BUCKET}/ipc/part-00000.parquet") as file:
        metadata = pq.ParquetFile(file).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [ROW_GROUP, 300]
    first_id = metadata.row_group(0).column(0)
    assert first_id.compression.lower().startswith("lz4")
    assert (first_id.statistics.min, first_id.statistics.max) == (0, ROW_GROUP - 1)


@pytest.mark.parametrize("prefix", list(DESIGNS))
def test_pyarrow_over_s3_gives_the_rows_of_skyhooks_scan(endpoint, datasets, table, prefix):
    columns = ["id", "i32", "dec", "s", "tsz", "tags", "f64"]
    ours = datasets[prefix].to_table(columns=columns, filter=FILTER).sort_by("id")
    assert_same_table(ours, expected(table, columns, FILTER).sort_by("id"))
    read = pyarrow_over_s3(endpoint, BUCKET, prefix, datasets[prefix].schema)
    assert_same_table(read.to_table(columns=columns, filter=FILTER).sort_by("id"), ours)


def test_duckdb_over_s3_gives_the_rows_of_skyhooks_scan(endpoint, datasets, table):
    ours = datasets["parquet"].to_table(filter=FILTER).sort_by("id")
    duck = duckdb_over_s3(endpoint, BUCKET, "parquet", view="typed")
    try:
        read = duck.sql(f"select * from typed where {WHERE} order by id")
        assert duck.sql("select id from typed", fetch=False) == ROWS
    finally:
        duck.close()
    # DuckDB's own types for a few columns (timestamps in microseconds, its zone name).
    assert_same_table(read.cast(ours.schema), ours)


def test_every_run_reads_from_the_gateway_and_prunes(cluster, endpoint, datasets):
    """Footers may be cached, data not: repeated runs fetch the same bytes, far
    fewer than the files hold (the filter keeps 2 of 8 row groups)."""
    gateway = Gateway(cluster)
    files_bytes = sum(
        info.size for info in s3_filesystem(endpoint).get_file_info(pafs.FileSelector(f"{BUCKET}/parquet"))
    )
    local = pyarrow_over_s3(endpoint, BUCKET, "parquet", datasets["parquet"].schema)
    duck = duckdb_over_s3(endpoint, BUCKET, "parquet", view="typed")
    fetched: dict[str, list[int]] = {"pyarrow": [], "duckdb": []}
    try:
        for _ in range(3):
            before = gateway.traffic()
            local.to_table(columns=["id", "s"], filter=FILTER)
            fetched["pyarrow"].append((gateway.traffic() - before).get_bytes)
            before = gateway.traffic()
            duck.sql(f"select id, s from typed where {WHERE}", fetch=False)
            fetched["duckdb"].append((gateway.traffic() - before).get_bytes)
    finally:
        duck.close()
    for reader, runs in fetched.items():
        assert runs[1] == runs[2] > 0, (reader, runs)  # nothing served from the reader's memory
        assert runs[1] < files_bytes / 4, (reader, runs, files_bytes)


def test_gateway_stops_and_starts_with_the_same_endpoint(cluster, endpoint, datasets):
    first = cluster.pid(NAME)
    result = CliRunner().invoke(app, ["cluster", "gateway", "down", str(cluster.dir)])
    assert result.exit_code == 0, result.output
    assert cluster.pid(NAME) is None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(endpoint.url, timeout=5)
    result = CliRunner().invoke(app, ["cluster", "gateway", "up", str(cluster.dir)])
    assert result.exit_code == 0, result.output
    assert S3Endpoint(**json.loads(result.stdout)) == endpoint
    assert cluster.pid(NAME) not in (None, first)
    read = pyarrow_over_s3(endpoint, BUCKET, "parquet").to_table(columns=["id"])
    assert read.num_rows == ROWS


def test_rgw_pools_are_active_and_the_cluster_healthy(cluster, datasets):
    deadline = time.monotonic() + 60
    while True:
        status = json.loads(cluster.ceph("status", "-f", "json"))
        states = {state["state_name"]: state["count"] for state in status["pgmap"]["pgs_by_state"]}
        if set(states) == {"active+clean"} or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert set(states) == {"active+clean"}, states
    pools = cluster.ceph("osd", "pool", "ls").split()
    assert {".rgw.root", "default.rgw.buckets.data", "default.rgw.buckets.index"} <= set(pools)
    checks = status["health"]["checks"]
    assert not set(checks) - {"MON_DISK_LOW"}, checks  # a full test machine's disk is no fault of RGW's
