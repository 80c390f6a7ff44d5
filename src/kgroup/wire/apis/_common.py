"""Helpers of the per-API translations."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import request_class, response_class

__all__ = ["ZERO_UUID", "TopicIds", "by_topic", "ms", "need_topic_ids", "request_entity", "response_entity"]

ZERO_UUID = uuid.UUID(int=0)
#: the name an unknown topic id stands under in the typed messages: '?' is in no legal topic name, so
#: it never meets a real topic, and the answer names the id the request named (Kafka echoes it)
_UNKNOWN_ID_PREFIX = "?"


@dataclass(frozen=True, slots=True)
class TopicIds:
    """Topic names and ids as one side knows them: what the versions that address topics by id
    (OffsetCommit v10, OffsetFetch v10) translate through. An id the side does not know becomes a
    name no topic has (:meth:`is_unknown`), which turns back into the same id."""

    name_of_id: Callable[[uuid.UUID], str | None]
    id_of_name: Callable[[str], uuid.UUID | None]

    def name(self, topic_id: uuid.UUID | None) -> str:
        topic_id = topic_id or ZERO_UUID
        name = self.name_of_id(topic_id) if topic_id != ZERO_UUID else None
        return f"{_UNKNOWN_ID_PREFIX}{topic_id}" if name is None else name

    def id(self, name: str) -> uuid.UUID:
        if name.startswith(_UNKNOWN_ID_PREFIX):
            return uuid.UUID(name[len(_UNKNOWN_ID_PREFIX) :])
        return self.id_of_name(name) or ZERO_UUID

    @staticmethod
    def is_unknown(name: str) -> bool:
        """Whether ``name`` stands for a topic id the side did not know."""
        return name.startswith(_UNKNOWN_ID_PREFIX)


def need_topic_ids(api_key: ApiKey, version: int, topic_ids: TopicIds | None) -> TopicIds:
    if topic_ids is None:
        raise ValueError(f"{api_key.title} v{version} addresses topics by id: pass topic_ids")
    return topic_ids


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
