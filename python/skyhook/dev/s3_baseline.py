"""The baseline Ceph users run today: a dataset's Parquet in an S3 bucket
(RGW, dev/gateway.py), read by DuckDB (httpfs) or by pyarrow's dataset API
over S3FileSystem. Both fetch each file's footer, then only the column chunks
they need of the row groups its statistics do not exclude. Each is set up as
well as it can be: path-style URLs, no TLS on the private link, pyarrow with
pre-buffering (coalesced ranged reads), DuckDB caching footers; neither
caches data, so each run reads from RGW (Gateway.traffic() counts what it served).

    publish_dataset(ds, endpoint, "bench", "lineitem")   # the objects, as files
    pyarrow_over_s3(endpoint, "bench", "lineitem").to_table(columns=..., filter=...)
    duckdb_over_s3(endpoint, "bench", "lineitem").sql("select ... from lineitem where ...")

DuckDB's own optimisations stay on (threads: its default, one per core).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from skyhook.catalog.design import COMPRESSIONS, DEFAULT_ROW_GROUP_SIZE, DESIGN_ATTRIBUTE, ObjectDesign
from skyhook.dataset import Dataset
from skyhook.dev.gateway import S3Endpoint
from skyhook.execution.dataset_objects import DatasetObjects
from skyhook.execution.plain_read import read_partition

REGION = "us-east-1"  # RGW's default zonegroup answers to any region name; pyarrow needs one


def s3_filesystem(endpoint: S3Endpoint) -> pafs.S3FileSystem:
    # The AWS SDK's default checksums send uploads in aws-chunked encoding, which
    # Pacific's RGW refuses (411 MissingContentLength): only where S3 requires them.
    os.environ.setdefault("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required")
    os.environ.setdefault("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required")
    address = urlparse(endpoint.url)
    return pafs.S3FileSystem(
        access_key=endpoint.access_key,
        secret_key=endpoint.secret_key,
        endpoint_override=address.netloc,
        scheme=address.scheme,
        region=REGION,
        force_virtual_addressing=False,
        allow_bucket_creation=True,
    )


def publish_dataset(dataset: Dataset, endpoint: S3Endpoint, bucket: str, prefix: str) -> list[str]:
    """Puts each object of dataset in bucket as PREFIX/part-NNNNN.parquet: a
    Parquet object byte for byte (the same row groups, encodings and
    statistics); an object of another design as the Parquet pyarrow writes of
    its rows. Returns the files' paths."""
    filesystem = s3_filesystem(endpoint)
    filesystem.create_dir(bucket)
    backend = dataset.store.backend
    source = DatasetObjects(dataset.manifest, backend)
    paths = []
    for partition in dataset.manifest.partitions:
        path = f"{bucket}/{prefix}/part-{partition.number:05d}.parquet"
        attribute = backend.object_attribute(partition.object_name, DESIGN_ATTRIBUTE)
        design = ObjectDesign.from_bytes(attribute) if attribute is not None else None
        if design is not None and design.format == "parquet" and design.monolithic:
            with filesystem.open_output_stream(path) as stream:
                stream.write(backend.read_object(partition.object_name))
        else:
            _, _, table = read_partition(source, partition)
            with filesystem.open_output_stream(path) as stream:
                pq.write_table(table, stream, write_statistics=True, **_parquet_options(design))
        paths.append(path)
    return paths


def _parquet_options(design: ObjectDesign | None) -> dict:
    """The object's own row groups and codec where it names them, so the file's
    statistics prune as finely as skyhook's Parquet objects of that design would."""
    if design is None:
        return {"row_group_size": DEFAULT_ROW_GROUP_SIZE}
    codec = design.compression if design.compression in COMPRESSIONS else "snappy"  # "unknown": pyarrow's default
    return {"row_group_size": design.row_group_size, "compression": codec}


def pyarrow_over_s3(endpoint: S3Endpoint, bucket: str, prefix: str, schema: pa.Schema | None = None) -> pads.Dataset:
    """pyarrow's dataset over the files: to_table(columns=, filter=) prunes row
    groups by their statistics and reads only the needed column chunks."""
    scan_options = pads.ParquetFragmentScanOptions(pre_buffer=True)
    file_format = pads.ParquetFileFormat(default_fragment_scan_options=scan_options)
    return pads.dataset(f"{bucket}/{prefix}/", filesystem=s3_filesystem(endpoint), format=file_format, schema=schema)


def duckdb_over_s3(
    endpoint: S3Endpoint, bucket: str, prefix: str, view: str = "lineitem", threads: int | None = None
) -> DuckDBProcess:
    """DuckDB with view over the files, in a process of its own."""
    return DuckDBProcess(endpoint, f"s3://{bucket}/{prefix}/*.parquet", view, threads)


class DuckDBProcess:
    """DuckDB with httpfs, run in a virtual environment of its own
    (BASELINE_VENV, made on first use): httpfs cannot be downloaded here and
    PyPI has it only for DuckDB 1.5.5, older than the DuckDB the project
    runs. sql() returns the result as Arrow (DuckDB's own .arrow()); with
    fetch=False only its row count crosses back, so the time is DuckDB's."""

    def __init__(self, endpoint: S3Endpoint, files: str, view: str, threads: int | None) -> None:
        address = urlparse(endpoint.url)
        settings = {"key_id": endpoint.access_key, "secret": endpoint.secret_key, "endpoint": address.netloc}
        secret = ", ".join(f"{name} '{_quoted(value)}'" for name, value in {**settings, "region": REGION}.items())
        setup = [
            f"create secret rgw (type s3, {secret}, url_style 'path', use_ssl false)",
            # Footers once per connection, as pyarrow's dataset keeps its fragments' metadata.
            "set parquet_metadata_cache = true",
            # Its cache of file bytes would serve repeated runs from memory, not RGW.
            "set enable_external_file_cache = false",
            f"create view {view} as select * from read_parquet('{_quoted(files)}')",
        ]
        if threads:
            setup.append(f"set threads = {int(threads)}")
        self._scratch = Path(tempfile.mkdtemp(prefix="skyhook-duckdb-"))
        self._process = subprocess.Popen(
            [str(baseline_python()), "-c", _WORKER, json.dumps(setup)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._call({"ping": True})

    def sql(self, query: str, fetch: bool = True) -> pa.Table | int:
        target = self._scratch / "result.arrow"
        rows = self._call({"sql": query, "out": str(target) if fetch else None})["rows"]
        if not fetch:
            return rows
        with pa.memory_map(str(target)) as source:
            table = pa.ipc.open_file(source).read_all()
        target.unlink()
        return table

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(30)
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _call(self, request: dict) -> dict:
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        reply = json.loads(self._process.stdout.readline() or '{"error": "the DuckDB process ended"}')
        if "error" in reply:
            raise RuntimeError(f"DuckDB over S3: {reply['error']}")
        return reply


# Reads requests (JSON lines) on stdin, answers each on stdout.
_WORKER = """
import json, os, sys, pathlib, duckdb, duckdb_extension_httpfs, pyarrow as pa
replies = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # whatever else writes to standard output goes to standard error
connection = duckdb.connect()
connection.execute("set enable_progress_bar = false")
extension = next(pathlib.Path(duckdb_extension_httpfs.__file__).parent.rglob("httpfs.duckdb_extension"))
connection.load_extension(str(extension))
for statement in json.loads(sys.argv[1]):
    connection.execute(statement)
for line in sys.stdin:
    request = json.loads(line)
    try:
        rows = 0
        if "sql" in request:
            relation = connection.sql(request["sql"])  # None for a statement (set ...)
            table = relation.arrow() if relation is not None else pa.table({})
            table = table.read_all() if isinstance(table, pa.RecordBatchReader) else table
            rows = table.num_rows
            if request["out"]:
                with pa.OSFile(request["out"], "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                    writer.write_table(table)
        print(json.dumps({"rows": rows}), file=replies, flush=True)
    except Exception as error:
        print(json.dumps({"error": str(error)}), file=replies, flush=True)
"""

#: Where DuckDB 1.5.5 and its httpfs extension are installed for the baseline.
BASELINE_VENV = Path(sys.prefix).parent / ".venv-duckdb-s3"  # beside the project's .venv
BASELINE_PACKAGES = ["duckdb==1.5.5", "duckdb-extension-httpfs==1.5.5", f"pyarrow=={pa.__version__}"]


def baseline_python() -> Path:
    """The baseline environment's Python, made (once) from this Python."""
    python = BASELINE_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BASELINE_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *BASELINE_PACKAGES], check=True)
    return python


def _quoted(text: str) -> str:
    return text.replace("'", "''")
