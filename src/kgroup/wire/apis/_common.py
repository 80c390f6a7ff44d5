"""Helpers of the per-API translations."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any, TypeVar

from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import request_class, response_class

__all__ = ["by_topic", "ms", "request_entity", "response_entity"]

T = TypeVar("T")


def ms(value: Any) -> int:
    """Milliseconds of a kio duration (a ``timedelta``) or of a plain number."""
    if isinstance(value, datetime.timedelta):
        return int(value / datetime.timedelta(milliseconds=1))
    return int(value)


def request_entity(api_key: ApiKey, version: int) -> type[Any]:
    cls = request_class(api_key, version)
    if cls is None:
        raise ValueError(f"{api_key.title} v{version} has no request schema")
    return cls


def response_entity(api_key: ApiKey, version: int) -> type[Any]:
    cls = response_class(api_key, version)
    if cls is None:
        raise ValueError(f"{api_key.title} v{version} has no response schema")
    return cls


def by_topic(items: Iterable[tuple[str, T]]) -> dict[str, list[T]]:
    """Items grouped by topic name, topics in the order they first appear (the wire's shape)."""
    grouped: dict[str, list[T]] = {}
    for topic, item in items:
        grouped.setdefault(topic, []).append(item)
    return grouped
