"""The user's entry point: a store of datasets over one storage backend."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from urllib.parse import parse_qs, unquote, urlparse

import pyarrow as pa

from skyhook.backends.base import Backend
from skyhook.dataset import Dataset
from skyhook.errors import DatasetExistsError, DatasetNotFoundError, InvalidRequestError
from skyhook.manifest import Manifest, Partition, statistics_type
from skyhook.protocol import decode_reply, encode_request
from skyhook.writer import FORMATS, DataSource, encode_partition, open_source, split_partitions

_DATASET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,127}$")
FORMAT_ATTRIBUTE = "skyhook.format"

DEFAULT_TARGET_OBJECT_SIZE = 32 << 20
DEFAULT_ROW_GROUP_SIZE = 64 * 1024


def connect(uri: str) -> Store:
    """Open a store: ``file:///abs/path`` (or a plain path) for the embedded store,
    ``ceph://POOL?conf=/path/ceph.conf[&namespace=NS][&user=NAME][&keyring=/path]`` for RADOS."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        from skyhook.backends.embedded import EmbeddedBackend
        return Store(EmbeddedBackend(unquote(parsed.path) if parsed.scheme else uri))
    if parsed.scheme == "ceph":
        from skyhook.backends.rados import RadosBackend
        options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
        unknown = set(options) - {"conf", "namespace", "user", "keyring"}
        if not parsed.netloc or "conf" not in options or unknown:
            raise InvalidRequestError(f"invalid Ceph URI {uri!r}: expected ceph://POOL?conf=/path/ceph.conf"
                                      "[&namespace=NS][&user=NAME][&keyring=/path]")
        return Store(RadosBackend(parsed.netloc, options.pop("conf"), **options))
    raise InvalidRequestError(f"unsupported store URI {uri!r}: expected file:///path or ceph://POOL?conf=...")


class Store:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def uri(self) -> str:
        return self.backend.uri

    def __repr__(self) -> str:
        return f"skyhook.Store({self.uri!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.backend.close()

    def list_datasets(self) -> list[str]:
        return self.backend.dataset_names()

    def dataset(self, name: str) -> Dataset:
        return Dataset(self, self.manifest(name))

    def manifest(self, name: str) -> Manifest:
        _check_name(name)
        data = self.backend.get_manifest(name)
        if data is None:
            raise DatasetNotFoundError(f"no dataset named {name!r} in {self.uri}")
        return Manifest.from_bytes(data)

    def write_dataset(self, name: str, data: DataSource, *, format: str = "parquet",
                      target_object_size: int = DEFAULT_TARGET_OBJECT_SIZE,
                      rows_per_object: int | None = None,
                      row_group_size: int = DEFAULT_ROW_GROUP_SIZE, compression: str = "zstd",
                      mode: str = "create",
                      progress: Callable[[int, int], None] | None = None) -> Dataset:
        """Split data into partitions, store one object per partition and publish
        the manifest. mode is "create" (fail if the dataset exists) or "overwrite".
        progress, if given, is called with (rows written, bytes written) per object."""
        _check_name(name)
        if format not in FORMATS:
            raise InvalidRequestError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")
        if mode not in ("create", "overwrite"):
            raise InvalidRequestError(f"unknown mode {mode!r}; expected create or overwrite")
        previous = self.backend.get_manifest(name)
        if previous is not None and mode == "create":
            raise DatasetExistsError(f"dataset {name!r} exists; pass mode='overwrite' to replace it")
        reader = open_source(data)
        # A fresh generation names the new objects, so readers of the previous
        # manifest keep reading complete, unchanged objects until it is replaced.
        generation = f"{int(time.time())}{secrets.token_hex(3)}"
        partitions: list[Partition] = []
        statistics: list[pa.StructArray] = []
        try:
            for table in split_partitions(reader, target_object_size, rows_per_object):
                number = len(partitions)
                object_name = f"{name}.{generation}.{number}"
                encoded = encode_partition(table, format, row_group_size, compression)
                self.backend.put_object(object_name, encoded, {FORMAT_ATTRIBUTE: format})
                statistics.append(self._describe(object_name, reader.schema))
                partitions.append(Partition(number, object_name, table.num_rows, encoded.size))
                if progress:
                    progress(table.num_rows, encoded.size)
            manifest = Manifest(name, reader.schema, format, generation, tuple(partitions),
                                _concat(statistics, reader.schema))
            self.backend.put_manifest(name, manifest.to_bytes())
        except BaseException:
            for partition in partitions:
                self.backend.delete_object(partition.object_name)
            raise
        if previous is not None:
            self._delete_objects(Manifest.from_bytes(previous))
        return Dataset(self, manifest)

    def delete_dataset(self, name: str) -> None:
        manifest = self.manifest(name)
        self.backend.delete_manifest(name)
        self._delete_objects(manifest)

    def describe_object(self, object_name: str) -> tuple[pa.StructArray, dict[str, int]]:
        """Per-column statistics of one object ({min, max, null_count} per column,
        a one-row struct array) and the call's statistics, computed in storage."""
        reply = decode_reply(self.backend.call(object_name, "describe", encode_request({"method": "describe"})))
        reply.raise_for_status(f"describing object {object_name}")
        return reply.reader().read_all().to_struct_array().combine_chunks(), reply.statistics

    def _describe(self, object_name: str, schema: pa.Schema) -> pa.StructArray:
        row, _ = self.describe_object(object_name)
        return row.cast(statistics_type(schema))

    def _delete_objects(self, manifest: Manifest) -> None:
        for partition in manifest.partitions:
            self.backend.delete_object(partition.object_name)


def _concat(rows: list[pa.StructArray], schema: pa.Schema) -> pa.StructArray:
    if not rows:
        return pa.array([], statistics_type(schema))
    return pa.concat_arrays(rows)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _DATASET_NAME.match(name):
        raise InvalidRequestError(
            f"invalid dataset name {name!r}: use letters, digits, '_' and '-' (at most 128)")
