"""The workload log: one small record per scan or aggregate (columns read,
per-column predicate ranges, observed selectivity, bytes read, time, objects
touched), kept in the store as a bounded ring per dataset (the object
``_skyhook.workload.<dataset>``, the last N records).

A query only queues its record: a background thread of the process appends
each dataset's queued records together, at most once a second, by one
compare-and-swap on the ring object, or its exclusive creation (retried a
few times; two creators make one an append), so no query waits
for the log and the ring is rewritten once per batch, not once per query.
Reading the log, closing the store and leaving the process flush the queue.
A batch that still loses the race, or any failure of the log, is dropped:
the log never fails a query. Off with ``SKYHOOK_WORKLOAD_LOG=0`` or ``skyhook.connect(uri,
workload_log=0)``; a number sets N."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field, fields

import pyarrow as pa
import pyarrow.compute as pc

from skyhook import stored_json
from skyhook.backends.base import Backend
from skyhook.backends.object_store import ObjectStore
from skyhook.errors import ObjectNotFoundError
from skyhook.plan.predicate_ranges import ColumnRange, column_ranges

PREFIX = "_skyhook.workload."
ENVIRONMENT = "SKYHOOK_WORKLOAD_LOG"
DEFAULT_RECORDS = 200
_ATTEMPTS = 3
#: Seconds between the background thread's appends.
FLUSH_INTERVAL = 1.0


@dataclass(frozen=True)
class QueryRecord:
    kind: str  # "scan" or "aggregate"
    at: float  # unix time the query finished
    columns: list[str]  # columns read (the filter's included)
    predicates: list[ColumnRange]
    rows_scanned: int
    rows_returned: int | None  # None for aggregates (rows passing the filter are not counted)
    bytes_read: int  # bytes read in storage
    wall_s: float
    objects: list[str] = field(default_factory=list)  # objects scanned (not pruned)
    #: The filter, projection and aggregate ran in storage at every object scanned (None: not recorded).
    in_storage: bool | None = None

    @property
    def selectivity(self) -> float | None:
        """Rows returned / rows scanned, as observed."""
        if self.rows_returned is None or not self.rows_scanned:
            return None
        return self.rows_returned / self.rows_scanned

    def to_json(self) -> dict:
        # Shallow: asdict's deep copies were most of the background thread's time.
        return {**vars(self), "predicates": [asdict(p) for p in self.predicates]}

    @staticmethod
    def from_json(value: object) -> QueryRecord:
        """A stored record, checked field by field (any writer of the namespace can
        store the log): ValueError if it is not one this module writes."""
        if not (isinstance(value, dict) and value.keys() in (_RECORD_FIELDS, _RECORD_FIELDS - {"in_storage"})):
            raise ValueError("not a query record")
        numbers = [value[key] for key in ("at", "rows_scanned", "bytes_read", "wall_s")]
        if not (
            value["kind"] in ("scan", "aggregate")
            and all(_is_number(number) for number in numbers)
            and (value["rows_returned"] is None or _is_number(value["rows_returned"]))
            and _is_names(value["columns"])
            and _is_names(value["objects"])
            and isinstance(value["predicates"], list)
            and value.get("in_storage") in (None, True, False)
        ):
            raise ValueError("malformed query record")
        return QueryRecord(**{**value, "predicates": [_column_range(p) for p in value["predicates"]]})


_RECORD_FIELDS = {item.name for item in fields(QueryRecord)}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_names(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def _column_range(value: object) -> ColumnRange:
    if not (
        isinstance(value, dict)
        and value.keys() == {"column", "kind", "low", "high"}
        and isinstance(value["column"], str)
        and value["kind"] in ("eq", "in", "range")
        and all(bound is None or isinstance(bound, (bool, int, float, str)) for bound in (value["low"], value["high"]))
    ):
        raise ValueError("malformed predicate range")
    return ColumnRange(**value)


def log_object(dataset: str) -> str:
    return f"{PREFIX}{dataset}"


def capacity(store: Backend) -> int:
    """Records kept per dataset: the connection's setting, else the environment's; 0 is off."""
    if store.workload_log_records is not None:
        return store.workload_log_records
    value = os.environ.get(ENVIRONMENT, "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return 0
    return int(value) if value.isdigit() else DEFAULT_RECORDS


def record_query(
    store: Backend,
    dataset: str,
    schema: pa.Schema,
    kind: str,
    columns: list[str] | None,
    filter: pc.Expression | None,
    statistics: dict,
    objects: list[str],
) -> None:
    """Queues one record of a finished query (never raises). statistics:
    rows_scanned, rows_returned, bytes_read, wall_s, in_storage."""
    try:
        limit = capacity(store)
        if limit <= 0:
            return
        entry = QueryRecord(
            kind=kind,
            at=time.time(),
            columns=list(schema.names if columns is None else columns),
            predicates=column_ranges(filter, schema),
            objects=objects,
            **statistics,
        )
        _queue.add(store, log_object(dataset), entry, limit)
    except Exception:  # noqa: BLE001 - the log must never fail a query
        return


@dataclass
class _Batch:
    store: ObjectStore
    name: str
    limit: int
    entries: list[QueryRecord] = field(default_factory=list)


class _Queue:
    """Records waiting for the background thread, one batch per (store, ring object)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Held while a flush takes batches and appends them: a flush returns
        # only once every batch taken before it (by the thread, say) is stored.
        self._appending = threading.Lock()
        self._batches: dict[tuple[int, str], _Batch] = {}
        self._thread: threading.Thread | None = None

    def add(self, store: ObjectStore, name: str, entry: QueryRecord, limit: int) -> None:
        with self._lock:
            self._batches.setdefault((id(store), name), _Batch(store, name, limit)).entries.append(entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="skyhook-workload-log", daemon=True)
                self._thread.start()

    def flush(self, store: ObjectStore | None = None) -> None:
        """Appends what is queued (for store, or for every store) now."""
        with self._appending:
            with self._lock:
                keys = [key for key, batch in self._batches.items() if store is None or batch.store is store]
                batches = [self._batches.pop(key) for key in keys]
            for batch in batches:
                try:
                    _append(batch.store, batch.name, batch.entries, batch.limit)
                except Exception:  # noqa: BLE001 - a lost batch of the log is no one's error
                    pass

    def forget(self) -> None:
        """After a fork: the parent's queue and thread are not the child's."""
        self._lock = threading.Lock()
        self._appending = threading.Lock()
        self._batches = {}
        self._thread = None

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_INTERVAL)
            self.flush()
            with self._lock:
                if not self._batches:
                    self._thread = None
                    return


_queue = _Queue()
os.register_at_fork(after_in_child=_queue.forget)


def flush(store: ObjectStore) -> None:
    """Appends the records this process queued for store (before it closes;
    skyhook.Store also calls it at exit, before its backend closes)."""
    _queue.flush(store)


#: Per log object, the bytes this process wrote last and their records: a log
#: appended to once a second would otherwise be decoded whole each time
#: (~17 ms for 200 records). Equal bytes decode to equal records, whichever
#: store they came from.
_last_written: dict[str, tuple[bytes, list[QueryRecord]]] = {}


def _append(store: ObjectStore, name: str, entries: list[QueryRecord], limit: int) -> None:
    for _ in range(_ATTEMPTS):
        try:
            stored = store.read_versioned_object(name)
        except ObjectNotFoundError:
            # Created exclusively: a process that created it meanwhile makes this an append.
            if store.create_object(name, _encode(entries[-limit:])):
                return
            continue
        data = stored.data.to_pybytes()
        last = _last_written.get(name)
        # Unchanged since this process wrote it: its records, without decoding them again.
        records = [*(last[1] if last is not None and last[0] == data else _decode(data)), *entries][-limit:]
        encoded = _encode(records)
        if store.replace_object_at(name, encoded, {}, stored.version):
            _last_written[name] = (encoded, records)
            return


def read_log(store: ObjectStore, dataset: str) -> list[QueryRecord]:
    """The dataset's recorded queries, oldest first (empty if none), with
    those this process has queued."""
    _queue.flush(store)
    try:
        return _decode(store.read_versioned_object(log_object(dataset)).data.to_pybytes())
    except ObjectNotFoundError:
        return []


def clear_log(store: ObjectStore, dataset: str) -> None:
    _queue.flush(store)
    store.delete_object(log_object(dataset))


def _encode(records: list[QueryRecord]) -> bytes:
    return json.dumps([record.to_json() for record in records], separators=(",", ":")).encode()


def _decode(data: bytes) -> list[QueryRecord]:
    """The stored records; a damaged log starts again (it is advice, never an answer)."""
    try:
        values = stored_json.load(data)
        return [QueryRecord.from_json(value) for value in values] if isinstance(values, list) else []
    except ValueError:
        return []
