"""The Flight SQL protocol's messages this server speaks (Arrow's
format/FlightSql.proto, package arrow.flight.protocol.sql), built from their
descriptors at import: the same names, field numbers and wire format as the
generated code, without a protobuf compiler. Commands travel packed in a
google.protobuf.Any; pack and unpack convert."""

from __future__ import annotations

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError, Message

from skyhook.errors import InvalidRequestError

PACKAGE = "arrow.flight.protocol.sql"
_F = descriptor_pb2.FieldDescriptorProto
_STRING, _BYTES, _BOOL, _UINT32, _INT64 = _F.TYPE_STRING, _F.TYPE_BYTES, _F.TYPE_BOOL, _F.TYPE_UINT32, _F.TYPE_INT64
_ENUM = _F.TYPE_INT32  # an enum's wire format: its number as a varint
#: Fields that hold a message: (message, field) -> the message type.
_NESTED = {("CommandStatementIngest", "table_definition_options"): "TableDefinitionOptions"}
_REPEATED = "repeated"
_OPTIONAL = "optional"

#: message -> [(field, number, type, label)]: the fields of FlightSql.proto used here.
_MESSAGES: dict[str, list[tuple[str, int, int, str]]] = {
    "CommandGetSqlInfo": [("info", 1, _UINT32, _REPEATED)],
    "CommandGetCatalogs": [],
    "CommandGetDbSchemas": [("catalog", 1, _STRING, _OPTIONAL), ("db_schema_filter_pattern", 2, _STRING, _OPTIONAL)],
    "CommandGetTables": [
        ("catalog", 1, _STRING, _OPTIONAL),
        ("db_schema_filter_pattern", 2, _STRING, _OPTIONAL),
        ("table_name_filter_pattern", 3, _STRING, _OPTIONAL),
        ("table_types", 4, _STRING, _REPEATED),
        ("include_schema", 5, _BOOL, ""),
    ],
    "CommandGetTableTypes": [],
    "CommandStatementQuery": [("query", 1, _STRING, ""), ("transaction_id", 2, _BYTES, _OPTIONAL)],
    "CommandStatementUpdate": [("query", 1, _STRING, ""), ("transaction_id", 2, _BYTES, _OPTIONAL)],
    "TicketStatementQuery": [("statement_handle", 1, _BYTES, "")],
    "CommandPreparedStatementQuery": [("prepared_statement_handle", 1, _BYTES, "")],
    "CommandPreparedStatementUpdate": [("prepared_statement_handle", 1, _BYTES, "")],
    "ActionCreatePreparedStatementRequest": [("query", 1, _STRING, ""), ("transaction_id", 2, _BYTES, _OPTIONAL)],
    "ActionCreatePreparedStatementResult": [
        ("prepared_statement_handle", 1, _BYTES, ""),
        ("dataset_schema", 2, _BYTES, ""),
        ("parameter_schema", 3, _BYTES, ""),
    ],
    "ActionClosePreparedStatementRequest": [("prepared_statement_handle", 1, _BYTES, "")],
    "DoPutUpdateResult": [("record_count", 1, _INT64, "")],
    # CommandStatementIngest.TableDefinitionOptions (declared at the top: the wire does not carry names).
    "TableDefinitionOptions": [("if_not_exist", 1, _ENUM, ""), ("if_exists", 2, _ENUM, "")],
    "CommandStatementIngest": [
        ("table_definition_options", 1, _F.TYPE_MESSAGE, ""),
        ("table", 2, _STRING, ""),
        ("schema", 3, _STRING, _OPTIONAL),
        ("catalog", 4, _STRING, _OPTIONAL),
        ("temporary", 5, _BOOL, ""),
        ("transaction_id", 6, _BYTES, _OPTIONAL),
    ],
    "DoPutPreparedStatementResult": [("prepared_statement_handle", 1, _BYTES, _OPTIONAL)],
}


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="skyhook_flight_sql.proto", package=PACKAGE, syntax="proto3")
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field, number, kind, label in fields:
            added = message.field.add(name=field, number=number, type=kind, json_name=field)
            if (name, field) in _NESTED:
                added.type_name = f".{PACKAGE}.{_NESTED[name, field]}"
            added.label = _F.LABEL_REPEATED if label == _REPEATED else _F.LABEL_OPTIONAL
            if label == _OPTIONAL:  # proto3 "optional": presence, through a synthetic one-of
                added.proto3_optional = True
                added.oneof_index = len(message.oneof_decl)
                message.oneof_decl.add(name=f"_{field}")
    return proto


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
#: The message classes, by name.
CLASSES: dict[str, type[Message]] = {
    name: message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{PACKAGE}.{name}")) for name in _MESSAGES
}


def make(name: str, **fields: object) -> Message:
    return CLASSES[name](**fields)


def pack(message: Message) -> bytes:
    """message in an Any, serialised (what descriptors, tickets and action bodies carry)."""
    wrapped = any_pb2.Any()
    wrapped.Pack(message)
    return wrapped.SerializeToString()


def unpack(data: bytes) -> Message:
    """The Flight SQL message data packs; InvalidRequestError for anything else."""
    wrapped = any_pb2.Any()
    try:
        wrapped.ParseFromString(data)
    except DecodeError:
        raise InvalidRequestError("not a Flight SQL command (no protobuf Any)") from None
    prefix = f"type.googleapis.com/{PACKAGE}."
    name = wrapped.type_url[len(prefix) :] if wrapped.type_url.startswith(prefix) else ""
    if name not in CLASSES:
        raise InvalidRequestError(f"unsupported Flight SQL command {wrapped.type_url[:120]!r}")
    message = CLASSES[name]()
    try:
        message.ParseFromString(wrapped.value)
    except DecodeError:
        raise InvalidRequestError(f"a malformed Flight SQL {name}") from None
    return message


def unpack_as(data: bytes, name: str) -> Message:
    """The message data packs, which must be a name; InvalidRequestError otherwise."""
    message = unpack(data)
    if name_of(message) != name:
        raise InvalidRequestError(f"expected a Flight SQL {name}, not {name_of(message)}")
    return message


def name_of(message: Message) -> str:
    return message.DESCRIPTOR.name
