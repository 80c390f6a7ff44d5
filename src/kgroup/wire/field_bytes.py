"""Field encodings the hand-written answers (:mod:`.fetch_response`, :mod:`.metadata_response`) share,
byte for byte kio's: a duration in milliseconds, a topic id's 16 bytes, a compact (flexible) string."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kgroup.wire.varint import encode_uvarint

__all__ = ["compact_string", "millis", "uuid_bytes"]


def millis(value: Any) -> int:
    """Milliseconds of a ``timedelta`` (rounded) or of a plain number."""
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def uuid_bytes(value: Any) -> bytes:
    """A topic id's 16 bytes (None, as kio writes it, is the all-zero id)."""
    if value is None:
        return bytes(16)
    if isinstance(value, int):
        return value.to_bytes(16, "big")
    assert isinstance(value, uuid.UUID)
    return value.bytes


def compact_string(value: str | None) -> bytes:
    """A flexible version's (nullable) string: its length + 1 as an unsigned varint, 0 for null."""
    if value is None:
        return b"\x00"
    raw = value.encode()
    return encode_uvarint(len(raw) + 1) + raw
