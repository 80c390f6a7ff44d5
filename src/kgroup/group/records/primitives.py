"""Kafka's primitive types for the coordinator's records, both ways: the fixed-width and int16-length
forms the classic records use and the flexible (compact, varint, tagged-field) forms of KIP-848's
records. One writer and one reader, used by :mod:`.serde` and :mod:`.consumer_serde`; a reader refuses
bytes that end early, overrun, or are not what the field says with a :class:`~kgroup.model.PeerError`."""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Mapping, Sequence
from itertools import chain, repeat
from typing import TypeVar

from kgroup.model import PeerError, TopicId
from kgroup.wire.varint import encode_uvarint

__all__ = ["I8", "I16", "I32", "I64", "MAX_STRING_BYTES", "Reader", "Writer"]

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")
I64 = struct.Struct(">q")
#: Short.MAX_VALUE: Kafka refuses longer strings both ways
MAX_STRING_BYTES = 0x7FFF
#: the one-byte unsigned varints (0-127)
_ONE_BYTE_VARINT = tuple(bytes((i,)) for i in range(0x80))

T = TypeVar("T")


class Writer:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i8(self, v: int) -> None:
        self.parts.append(I8.pack(v))

    def i16(self, v: int) -> None:
        self.parts.append(I16.pack(v))

    def i32(self, v: int) -> None:
        self.parts.append(I32.pack(v))

    def i64(self, v: int) -> None:
        self.parts.append(I64.pack(v))

    def boolean(self, v: bool) -> None:
        self.i8(1 if v else 0)

    def uvarint(self, v: int) -> None:
        if not 0 <= v <= 0xFFFFFFFF:
            raise ValueError(f"{v} does not fit an unsigned varint")
        self.parts.append(encode_uvarint(v))

    @staticmethod
    def _utf8(v: str) -> bytes:
        data = v.encode("utf-8")
        if len(data) > MAX_STRING_BYTES:
            raise ValueError(f"string of {len(data)} bytes is longer than Kafka's {MAX_STRING_BYTES}")
        return data

    def string(self, v: str | None) -> None:
        """A non-flexible string: int16 length (-1 for null)."""
        if v is None:
            self.i16(-1)
            return
        data = self._utf8(v)
        self.i16(len(data))
        self.parts.append(data)

    def raw(self, v: bytes | None) -> None:
        """Non-flexible bytes: int32 length (-1 for null)."""
        if v is None:
            self.i32(-1)
            return
        self.i32(len(v))
        self.parts.append(bytes(v))

    def optional_i64(self, v: int | None) -> None:
        self.boolean(v is not None)
        if v is not None:
            self.i64(v)

    def strings(self, values: tuple[str, ...]) -> None:
        self.i32(len(values))
        for v in values:
            self.string(v)

    def compact_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        data = self._utf8(v)
        self.uvarint(len(data) + 1)
        self.parts.append(data)

    def compact_strings(self, values: Sequence[str]) -> None:
        """A compact array of compact strings (non-null). Names shorter than 127 bytes — every topic
        name — are written without a Python step per string: a 100,000-name subscription is one
        record of 0.7 MB, written in milliseconds."""
        self.uvarint(len(values) + 1)
        encoded = list(map(str.encode, values))
        lengths = list(map(len, encoded))
        if not lengths:
            return
        if max(lengths) < 0x7F:
            prefixes = map(_ONE_BYTE_VARINT.__getitem__, map(operator.add, lengths, repeat(1)))
            self.parts.append(b"".join(chain.from_iterable(zip(prefixes, encoded, strict=True))))
            return
        for value in values:
            self.compact_string(value)

    def compact_bytes(self, v: bytes) -> None:
        self.uvarint(len(v) + 1)
        self.parts.append(bytes(v))

    def uuid(self, v: TopicId) -> None:
        self.parts.append(v.to_int().to_bytes(16, "big"))

    def int32s(self, values: tuple[int, ...] | list[int]) -> None:
        """A compact array of int32."""
        self.uvarint(len(values) + 1)
        self.parts.extend(I32.pack(v) for v in values)

    def tag(self, tag: int, body: bytes) -> None:
        self.uvarint(tag)
        self.uvarint(len(body))
        self.parts.append(body)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str, pos: int = 0) -> None:
        self.data = bytes(data)
        self.pos = pos
        self.what = what

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise PeerError(f"{self.what}: {len(self.data)} bytes end before the record does")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def _unpack(self, fmt: struct.Struct) -> int:
        value: int = fmt.unpack(self.take(fmt.size))[0]
        return value

    def i8(self) -> int:
        return self._unpack(I8)

    def i16(self) -> int:
        return self._unpack(I16)

    def i32(self) -> int:
        return self._unpack(I32)

    def i64(self) -> int:
        return self._unpack(I64)

    def boolean(self) -> bool:
        flag = self.i8()
        if flag not in (0, 1):
            raise PeerError(f"{self.what}: boolean byte {flag} is neither 0 nor 1")
        return flag == 1

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if value > 0x7FFFFFFF:  # Java reads an int: Kafka's lengths never get here
                    raise PeerError(f"{self.what}: varint {value} is larger than a Java int")
                return value
        raise PeerError(f"{self.what}: a varint runs past 5 bytes")

    def _decode(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise PeerError(f"{self.what}: a string is not valid UTF-8") from None

    def nullable_string(self) -> str | None:
        """A non-flexible string: int16 length, -1 for null."""
        n = self.i16()
        if n == -1:
            return None
        return self._decode(self.take(n))

    def string(self) -> str:
        v = self.nullable_string()
        if v is None:
            raise PeerError(f"{self.what}: a non-nullable string is null")
        return v

    def nullable_raw(self) -> bytes | None:
        n = self.i32()
        if n == -1:
            return None
        return self.take(n)

    def raw(self) -> bytes:
        v = self.nullable_raw()
        if v is None:
            raise PeerError(f"{self.what}: non-nullable bytes are null")
        return v

    def optional_i64(self) -> int | None:
        return self.i64() if self.boolean() else None

    def array(self, item: Callable[[], T]) -> tuple[T, ...]:
        """A non-flexible array: int32 length."""
        n = self.i32()
        if n < 0 or n > len(self.data) - self.pos:  # every item takes at least one byte
            raise PeerError(f"{self.what}: array length {n} does not fit the record")
        return tuple(item() for _ in range(n))

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        if n > MAX_STRING_BYTES:
            raise PeerError(f"{self.what}: a string of {n} bytes is longer than Kafka's {MAX_STRING_BYTES}")
        return self._decode(self.take(n))

    def compact_string(self) -> str:
        v = self.compact_nullable_string()
        if v is None:
            raise PeerError(f"{self.what}: a non-nullable string is null")
        return v

    def compact_bytes(self) -> bytes:
        n = self.uvarint() - 1
        if n < 0:
            raise PeerError(f"{self.what}: non-nullable bytes are null")
        return self.take(n)

    def uuid(self) -> TopicId:
        return TopicId.from_int(int.from_bytes(self.take(16), "big"))

    def compact_length(self) -> int | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        if n > len(self.data) - self.pos:  # every item takes at least one byte
            raise PeerError(f"{self.what}: array length {n} does not fit the record")
        return n

    def compact_array(self, item: Callable[[], T]) -> tuple[T, ...]:
        n = self.compact_length()
        if n is None:
            raise PeerError(f"{self.what}: a non-nullable array is null")
        return tuple(item() for _ in range(n))

    def int32s(self) -> tuple[int, ...]:
        return self.compact_array(self.i32)

    def tagged(self, known: Mapping[int, Callable[[Reader], None]]) -> None:
        """A struct's tagged-field section: each known tag read from exactly its bytes (the last of a
        repeated tag wins, as in Kafka); an unknown tag is skipped."""
        count = self.uvarint()
        if count > len(self.data) - self.pos:
            raise PeerError(f"{self.what}: {count} tagged fields do not fit the record")
        for _ in range(count):
            tag = self.uvarint()
            body = self.take(self.uvarint())
            read = known.get(tag)
            if read is not None:
                sub = Reader(body, f"{self.what} tag {tag}")
                read(sub)
                sub.end()

    def end(self) -> None:
        if self.pos != len(self.data):
            raise PeerError(f"{self.what}: {len(self.data) - self.pos} bytes after the end of the record")
