"""Requests in, responses out: Kafka's request header (v1/v2), request bodies and responses on ``kio``.

The request header version follows from the API key and version (Kafka's
``ApiKeys.requestHeaderVersion``): v2 (with tagged fields) for a flexible version, v1 otherwise.
The response header is v1 for a flexible version and v0 otherwise — except ApiVersions, whose
response header is always v0 so that a client can read it before it knows the broker's versions.

:func:`build` makes a ``kio`` entity of one version from version-free plain data (dicts, lists and
ints): fields the version does not have are dropped (a key no version has is refused), nested
entities are built recursively, millisecond ints become ``timedelta`` and error numbers become
``ErrorCode``. Handlers thus write one answer for every version of their API, as Kafka's
``*ResponseData`` classes do.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import threading
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader as _kio_entity_reader
from kio.serial import entity_writer as _kio_entity_writer
from kio.serial.errors import SerialError
from kio.static.constants import EntityType

from kgroup.model import ErrorCode, PeerError
from kgroup.wire.api_keys import ApiKey, api_name
from kgroup.wire.framing import Frame
from kgroup.wire.guard import check_body
from kgroup.wire.newer_schemas import entities_of, schema_class
from kgroup.wire.piecewise import read_piecewise
from kgroup.wire.varint import VarintError, read_uvarint

__all__ = [
    "BodyReader",
    "DecodedRequest",
    "RequestHeader",
    "build",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "entity_reader",
    "entity_writer",
    "error_from_wire",
    "error_to_wire",
    "has_schemas",
    "request_class",
    "response_class",
]

_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id: the first fields of every header
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INVALID_REQUEST = ErrorCode.INVALID_REQUEST
_CORRUPT_MESSAGE = ErrorCode.CORRUPT_MESSAGE


# --- error codes: kgroup's enum (kgroup.model.ErrorCode) is the one kgroup's code names; kio's
# enum is what kio's entities hold, and these two functions are the only crossing between them


def error_from_wire(code: int) -> ErrorCode:
    """kgroup's error of a code read from the wire; a code kgroup does not know reads as
    ``UNKNOWN_SERVER_ERROR`` (Kafka's ``Errors.forCode`` does the same)."""
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def error_to_wire(code: int) -> KioErrorCode:
    """The kio error of a code (kgroup's enum or a bare int) for a kio entity's ``error_code``."""
    return code if isinstance(code, KioErrorCode) else KioErrorCode(int(code))


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The fields of Kafka's ``RequestHeader`` (a null client id reads as ``""``, as in Kafka)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    size: int  # header bytes, so the body starts at this offset of the frame


@dataclass(frozen=True, slots=True)
class DecodedRequest:
    header: RequestHeader
    body: Any  # a kio request entity of ``header.api_version``


#: one import of kio's schema modules at a time: the broker's codec warm-up thread and its loop import
#: them side by side, and two threads importing a package and its submodule at once can end in Python's
#: import ``_DeadlockError`` (seen once at a broker's start: the warm-up thread died)
_IMPORTING = threading.Lock()


def _load(name: str, version: int, kind: EntityType) -> type[Any] | None:
    try:
        path = schema_name_map[name][version][kind]  # type: ignore[index]
    except KeyError:
        return schema_class(name, version, kind)  # a Kafka 4.4.0 version kio lacks, or None
    module_name, _, attr = path.partition(":")
    with _IMPORTING:
        module = __import__(module_name, fromlist=[attr])
    cls: type[Any] = getattr(module, attr)
    return cls


def has_schemas(api_key: int, version: int) -> bool:
    """Whether kio has both a request and a response schema of an API key and version: read from
    kio's index, without importing the schemas' modules (``request_class`` imports them on first use),
    or :mod:`kgroup.wire.newer_schemas` has them."""
    name = api_key_map.get(api_key)
    if name is None:
        return False
    if schema_class(name, version, EntityType.request) is not None:
        return True
    kinds = schema_name_map.get(name, {}).get(version, {})
    return EntityType.request in kinds and EntityType.response in kinds


@cache
def request_class(api_key: int, version: int) -> type[Any] | None:
    """The ``kio`` request entity of an API key and version, or ``None`` if kio has no such version."""
    name = api_key_map.get(api_key)
    return None if name is None else _load(name, version, EntityType.request)


@cache
def response_class(api_key: int, version: int) -> type[Any] | None:
    name = api_key_map.get(api_key)
    return None if name is None else _load(name, version, EntityType.response)


_READERS: dict[type[Any], Callable[[Frame, int], tuple[Any, int]]] = {}
_WRITERS: dict[type[Any], Callable[[Any, Any], None]] = {}
_HINTS: dict[type[Any], dict[str, Any]] = {}
_FIELDS: dict[type[Any], tuple[dataclasses.Field[Any], ...]] = {}


def entity_reader(cls: type[Any]) -> Callable[[Frame, int], tuple[Any, int]]:
    """kio's reader of entity ``cls``, made once per class (the one cache of them in kgroup)."""
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = _kio_entity_reader(cls)
    return reader


def entity_writer(cls: type[Any]) -> Callable[[Any, Any], None]:
    """kio's writer of entity ``cls``, made once per class."""
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = _kio_entity_writer(cls)
    return writer


def _read_varint(frame: Frame, offset: int) -> tuple[int, int]:
    try:
        return read_uvarint(frame, offset, len(frame))
    except VarintError as exc:
        what = "truncated unsigned varint" if exc.truncated else "unsigned varint longer than 5 bytes"
        raise PeerError(f"request header: {what}", _INVALID_REQUEST) from None


def _skip_tagged_fields(frame: Frame, offset: int) -> int:
    count, offset = _read_varint(frame, offset)
    for _ in range(count):
        _tag, offset = _read_varint(frame, offset)
        size, offset = _read_varint(frame, offset)
        offset += size
        if offset > len(frame):
            raise PeerError("request header: tagged field runs past the end of the frame", _INVALID_REQUEST)
    return offset


def _is_flexible(api_key: int, version: int) -> bool:
    cls = request_class(api_key, version)
    if cls is not None:
        return bool(cls.__flexible__)
    # A version kio does not know (only ApiVersions is answered at such a version): Kafka parses
    # the header of an unknown-but-newer version as flexible (ApiVersions v3+ is flexible).
    return api_key == ApiKey.API_VERSIONS and version >= 3


def decode_request_header(frame: Frame) -> RequestHeader:
    """Kafka's ``RequestHeader.parse``; :class:`PeerError` (INVALID_REQUEST) if it cannot be read."""
    if len(frame) < _PREFIX.size + 2:
        raise PeerError(f"request header: {len(frame)} bytes is too short", _INVALID_REQUEST)
    api_key, api_version, correlation_id = _PREFIX.unpack_from(frame, 0)
    offset = _PREFIX.size
    (length,) = _INT16.unpack_from(frame, offset)
    offset += 2
    client_id = ""
    if length >= 0:
        raw = frame[offset : offset + length]
        if len(raw) != length:
            raise PeerError("request header: client id runs past the end of the frame", _INVALID_REQUEST)
        try:
            client_id = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise PeerError("request header: client id is not UTF-8", _INVALID_REQUEST) from None
        offset += length
    if _is_flexible(api_key, api_version):
        offset = _skip_tagged_fields(frame, offset)
    return RequestHeader(api_key, api_version, correlation_id, client_id, offset)


#: an API's own reader of a request body: (frame, body offset, version) -> the request, as kio's
#: entity reads it (``ValueError`` for what kio refuses); the guard has checked the body first
BodyReader = Callable[[Frame, int, int], Any]


def decode_request(
    frame: Frame,
    header: RequestHeader,
    *,
    max_elements: int | None = None,
    piecewise: bool = False,
    read_body: BodyReader | None = None,
) -> DecodedRequest:
    """Read the body of a request whose version is supported; :class:`PeerError` if malformed.

    ``max_elements`` refuses a body whose arrays hold more elements in all (a limit of the broker's);
    ``piecewise`` reads it with many short native calls instead of one (:mod:`kgroup.wire.piecewise`:
    for a large body read in a worker thread, so that the GIL is handed back between elements);
    ``read_body`` reads it instead of kio, after the same guard (the Produce request, whose records
    it leaves in the frame: :mod:`kgroup.wire.produce_request`).
    """
    cls = request_class(header.api_key, header.api_version)
    if cls is None:
        raise PeerError(f"no schema for api key {header.api_key} v{header.api_version}", _INVALID_REQUEST)
    # kio's native reader must never see an implausible length
    check_body(cls, frame, header.size, max_elements=max_elements)
    try:
        if read_body is not None:
            body = read_body(frame, header.size, header.api_version)
        elif piecewise:
            body = read_piecewise(cls, frame, header.size)
        else:
            body, _size = entity_reader(cls)(frame, header.size)
    except (
        SerialError,
        ValueError,
        TypeError,
        UnicodeDecodeError,
        OverflowError,
        IndexError,
        KeyError,
    ) as exc:
        # KeyError: kio refuses a tagged field it does not know (Kafka would skip it)
        name = api_name(header.api_key)
        raise PeerError(f"malformed {name} v{header.api_version} request: {exc}", _INVALID_REQUEST) from None
    return DecodedRequest(header, body)


def encode_response(correlation_id: int, response: Any) -> bytes:
    """Header (v0 or v1, as the response's schema says) + body, without the size prefix."""
    buffer = io.BytesIO()
    buffer.write(_INT32.pack(correlation_id))
    if response.__header_schema__.__flexible__:
        buffer.write(b"\x00")  # no tagged fields in the response header
    entity_writer(type(response))(buffer, response)
    return buffer.getvalue()


# --- building responses from version-free data -------------------------------------------------


def _hints(cls: type[Any]) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _fields(cls: type[Any]) -> tuple[dataclasses.Field[Any], ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = dataclasses.fields(cls)
    return fields


def _identity(value: Any) -> Any:
    return value


@cache
def _converter(hint: Any) -> Callable[[Any], Any]:
    """The conversion of plain data to a field of type ``hint`` (``None`` stays ``None``), made once
    per type: a response of a million entries is converted without inspecting a type a million times."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _converter(args[0])
    if origin is tuple or origin is frozenset:
        item = _converter(typing.get_args(hint)[0])
        container = tuple if origin is tuple else frozenset
        if item is _identity:
            return lambda value: None if value is None else container(value)
        return lambda value: None if value is None else container([item(v) for v in value])
    if isinstance(hint, type):
        if dataclasses.is_dataclass(hint):
            entity: type[Any] = hint
            return lambda value: build(entity, value) if isinstance(value, Mapping) else value
        if issubclass(hint, KioErrorCode):
            return lambda value: None if value is None else error_to_wire(value)
        if issubclass(hint, datetime.timedelta):
            return lambda value: (
                value
                if value is None or isinstance(value, datetime.timedelta)
                else datetime.timedelta(milliseconds=int(value))
            )
        if issubclass(hint, datetime.datetime):
            return lambda value: (
                datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
                if isinstance(value, int)
                else value
            )
        if issubclass(hint, uuid.UUID):
            return lambda value: uuid.UUID(int=int(value)) if isinstance(value, int) else value
        if issubclass(hint, bytes):
            return lambda value: bytes(value) if isinstance(value, bytearray | memoryview) else value
    return _identity


_BUILDERS: dict[type[Any], tuple[tuple[str, Callable[[Any], Any], bool], ...]] = {}


def _builder(cls: type[Any]) -> tuple[tuple[str, Callable[[Any], Any], bool], ...]:
    """(name, conversion, required) of each field of ``cls``."""
    fields = _BUILDERS.get(cls)
    if fields is None:
        hints = _hints(cls)
        fields = _BUILDERS[cls] = tuple(
            (
                field.name,
                _converter(hints[field.name]),
                field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING,
            )
            for field in _fields(cls)
        )
    return fields


_KNOWN_FIELDS: dict[type[Any], frozenset[str]] = {}


def _known_fields(cls: type[Any]) -> frozenset[str]:
    """The field names of ``cls`` in any version of its API: the entity of the same name in every
    version's module (``kio.schema.<api>.v<N>.<request|response>``) and in
    :mod:`kgroup.wire.newer_schemas` (the versions kio lacks)."""
    known = _KNOWN_FIELDS.get(cls)
    if known is not None:
        return known
    names = {field.name for field in _fields(cls)}
    package, _, kind = cls.__module__.rpartition(".")
    api_package = package.rpartition(".")[0]
    name: str | None = None
    if api_package.startswith("kio.schema."):
        name = api_package.rpartition(".")[2]
    elif hasattr(cls, "__api_key__"):  # a class of kgroup.wire.newer_schemas
        name = api_key_map.get(cls.__api_key__)
        if name is not None:
            kind = "request" if cls in set(entities_of(name, "request")) else "response"
            api_package = f"kio.schema.{name}"
    if name is not None:
        for version in schema_name_map.get(name, {}):
            try:
                module = __import__(f"{api_package}.v{version}.{kind}", fromlist=[cls.__name__])
            except ImportError:
                continue
            other = getattr(module, cls.__name__, None)
            if isinstance(other, type) and dataclasses.is_dataclass(other):
                names.update(field.name for field in dataclasses.fields(other))
        for other in entities_of(name, kind):
            if other.__name__ == cls.__name__:
                names.update(field.name for field in dataclasses.fields(other))
    known = _KNOWN_FIELDS[cls] = frozenset(names)
    return known


def build(cls: type[Any], data: Mapping[str, Any]) -> Any:
    """The ``kio`` entity ``cls`` from plain data.

    A key of a field that another version of the API has is dropped (one answer serves every
    version); a key no version has is a bug in the caller — a typo would otherwise send the field's
    default — and raises :class:`KeyError`, as does a required field missing from ``data``.
    """
    kwargs: dict[str, Any] = {}
    for name, convert, required in _builder(cls):
        if name in data:
            value = data[name]
            kwargs[name] = None if value is None else convert(value)
        elif required:
            raise KeyError(f"{cls.__module__}.{cls.__qualname__}: no value for required field {name!r}")
    if len(kwargs) < len(data):
        unknown = sorted(set(data) - _known_fields(cls))
        if unknown:
            raise KeyError(
                f"{cls.__module__}.{cls.__qualname__}: no version of it has field(s) {', '.join(unknown)}"
            )
    return cls(**kwargs)


# --- the client side (tests, benchmarks, kgroup's own client) ----------------------------------


def encode_request(request: Any, correlation_id: int, client_id: str | None = "kgroup") -> bytes:
    """Request header (v1, or v2 for a flexible version) + body, without the size prefix."""
    buffer = io.BytesIO()
    buffer.write(_PREFIX.pack(int(request.__api_key__), int(request.__version__), correlation_id))
    if client_id is None:
        buffer.write(_INT16.pack(-1))
    else:
        raw = client_id.encode("utf-8")
        buffer.write(_INT16.pack(len(raw)) + raw)
    if request.__flexible__:
        buffer.write(b"\x00")
    entity_writer(type(request))(buffer, request)
    return buffer.getvalue()


def decode_response(frame: bytes, response_type: type[Any]) -> tuple[int, Any]:
    """(correlation id, response) of a response frame; :class:`PeerError` if malformed."""
    if len(frame) < 4:
        raise PeerError("response: shorter than a correlation id", _CORRUPT_MESSAGE)
    (correlation_id,) = _INT32.unpack_from(frame, 0)
    offset = 4
    if response_type.__header_schema__.__flexible__:
        offset = _skip_tagged_fields(frame, offset)
    try:
        body, _size = entity_reader(response_type)(frame, offset)
    except (SerialError, ValueError, TypeError, UnicodeDecodeError, OverflowError, IndexError) as exc:
        raise PeerError(f"malformed {response_type.__qualname__}: {exc}", _CORRUPT_MESSAGE) from None
    return correlation_id, body
