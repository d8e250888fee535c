"""Flight SQL bulk ingestion (CommandStatementIngest, what ADBC's adbc_ingest
sends): a DoPut stream of record batches loaded into a dataset, created,
appended to or replaced as the command's table options say, in one commit
(readers see all of the load or none of it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.flight as flight
from google.protobuf.message import Message

from skyhook.errors import DatasetExistsError, DatasetNotFoundError, InvalidRequestError
from skyhook.store import Store

# CommandStatementIngest.TableDefinitionOptions' enums.
_CREATE, _FAIL_IF_MISSING = 1, 2
_FAIL_IF_EXISTS, _APPEND, _REPLACE = 1, 2, 3


def ingest(
    store: Store, command: Message, reader: flight.MetadataRecordBatchReader, cancelled: Callable[[], bool]
) -> int:
    """Loads reader's rows as command says; returns how many. A client that
    goes away ends the stream as if it were complete: cancelled() tells, and
    then nothing is committed."""
    if command.temporary or command.HasField("transaction_id"):
        raise InvalidRequestError("ingestion into temporary tables or transactions is not supported")
    if (command.HasField("catalog") and command.catalog) or (
        command.HasField("schema") and command.schema not in ("", "main")
    ):
        raise InvalidRequestError("datasets have no catalog and one schema, main")
    options = command.table_definition_options
    exists = command.table in store.list_datasets()
    counted = [0]

    def batches() -> Iterator[pa.RecordBatch]:
        for chunk in reader:
            if chunk.data is not None:
                counted[0] += chunk.data.num_rows
                yield chunk.data
        if cancelled():  # before the commit, which follows the last batch
            raise InvalidRequestError("the client went away before the end of its data: nothing was loaded")

    rows = pa.RecordBatchReader.from_batches(reader.schema, batches())
    if exists:
        if options.if_exists == _APPEND:
            store.dataset(command.table).append(rows)
        elif options.if_exists == _REPLACE:
            store.write_dataset(command.table, rows, mode="overwrite")
        else:
            raise DatasetExistsError(f"dataset {command.table!r} exists (ingest with append or replace)")
    elif options.if_not_exist == _CREATE:
        store.write_dataset(command.table, rows)
    else:
        raise DatasetNotFoundError(f"no dataset named {command.table!r} (ingest with create)")
    return counted[0]
