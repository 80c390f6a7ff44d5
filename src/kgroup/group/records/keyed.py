"""Kafka's consumer- and share-group records as bytes, alike for both families: the key is an int16
record type and the strings that say what the record describes, the value an int16 version and the
record's fields (:mod:`.consumer_serde` and :mod:`.share_serde` write and read those fields)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from kgroup.group.records.primitives import Reader, Writer
from kgroup.model import PeerError

__all__ = ["decode_keyed_record", "encode_keyed_record"]

_R = TypeVar("_R")


def encode_keyed_record(
    kind: int,
    key_strings: Iterable[str],
    value_version: int,
    record: _R,
    write_value: Callable[[Writer, _R], None],
) -> tuple[bytes, bytes | None]:
    """The key (``kind``, then ``key_strings``) and the value (``value_version``, then what
    ``write_value`` writes; ``None``: a tombstone, when ``record.value`` is ``None``) Kafka writes for a
    consumer- or share-group record."""
    key = Writer()
    key.i16(kind)
    for text in key_strings:
        key.string(text)
    if record.value is None:  # type: ignore[attr-defined]
        return key.bytes(), None
    value = Writer()
    value.i16(value_version)
    write_value(value, record)
    return key.bytes(), value.bytes()


def decode_keyed_record(
    key: bytes,
    value: bytes | None,
    *,
    family: str,
    key_string_counts: Mapping[int, int],
    value_version: int,
    tombstone: Callable[[int, tuple[str, ...]], _R],
    read_value: Callable[[int, tuple[str, ...], Reader], _R],
) -> _R:
    """The record of a key whose int16 type is one of ``key_string_counts``' (type -> its key's string
    count), and of its value (``None``: a tombstone); :class:`PeerError` when the bytes are corrupt."""
    k = Reader(bytes(key), "record key")
    kind = k.i16()
    count = key_string_counts.get(kind)
    if count is None:
        raise PeerError(f"record key: type {kind} is not a {family} record")
    strings = tuple(k.string() for _ in range(count))
    k.end()
    if value is None:
        return tombstone(kind, strings)
    r = Reader(bytes(value), f"{family} record type {kind}")
    version = r.i16()
    if version != value_version:
        raise PeerError(
            f"{r.what}: unsupported value version {version}; Kafka 4.4 writes and reads {value_version}"
        )
    record = read_value(kind, strings, r)
    r.end()
    return record
