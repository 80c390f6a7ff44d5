"""A small request with a large answer is answered from the codec thread, not the event loop.

ConsumerGroupDescribe and ShareGroupDescribe ask for one group in a few bytes; the answer for a group of
5,000 members is some 60 ms of translation and 90 ms of encoding, which on the loop held every other
connection (docs/performance.md: the canary's worst wait and the heartbeats in flight around a
describe of the benchmark's group). From :data:`~kgroup.broker.dispatch.LARGE_RESPONSE_ENTRIES`
members on, the handler returns a :class:`~kgroup.broker.dispatch.LargeAnswer` and both run in the
codec thread. The bound is lowered here so that a three-member group is large: which thread
translated each answer is recorded, and the answers are the same either way.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.apache_kafka.wire import Raw
from tests.broker.rawdata import consumer_join

from kgroup.broker import handlers_group, handlers_share_group
from kgroup.testing import KafkaBroker

NONE = 0


@pytest.fixture
def kafka() -> Iterator[KafkaBroker]:
    with KafkaBroker(topics={"t": 6}) as broker:
        yield broker


def _recording(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[str]:
    """Replace ``module.name`` (a translation) by one that records the thread it ran in."""
    threads: list[str] = []
    translate: Callable[..., Any] = getattr(module, name)

    def recorded(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return translate(*args)

    monkeypatch.setattr(module, name, recorded)
    return threads


def _consumer_members(raw: Raw, group: str, count: int) -> None:
    for n in range(count):
        answer = raw.call("ConsumerGroupHeartbeat", 1, consumer_join(group, f"member-{n}"))
        assert answer["error_code"] == NONE, answer


def _describe(raw: Raw, api: str, group: str) -> Any:
    answer = raw.call(api, 1, {"group_ids": [group], "include_authorized_operations": False})
    (described,) = answer["groups"]
    assert described["error_code"] == NONE, described
    return described


def test_a_large_consumer_group_description_is_made_off_the_event_loop(
    kafka: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = _recording(monkeypatch, handlers_group, "consumer_group_describe_response_to_wire")
    with Raw(kafka.bootstrap_servers) as raw:
        _consumer_members(raw, "g", 3)
        small = _describe(raw, "ConsumerGroupDescribe", "g")
        monkeypatch.setattr(handlers_group, "LARGE_RESPONSE_ENTRIES", 3)
        large = _describe(raw, "ConsumerGroupDescribe", "g")
        monkeypatch.setattr(handlers_group, "LARGE_RESPONSE_ENTRIES", 4)
        below = _describe(raw, "ConsumerGroupDescribe", "g")
    assert len(large["members"]) == 3
    assert large == small == below
    codec = [name.startswith("kgroup-codec") for name in threads]
    assert codec == [False, True, False], threads


def test_a_large_share_group_description_is_made_off_the_event_loop(
    kafka: KafkaBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = _recording(monkeypatch, handlers_share_group, "share_group_describe_response_to_wire")
    with Raw(kafka.bootstrap_servers) as raw:
        for _ in range(3):
            answer = raw.call(
                "ShareGroupHeartbeat",
                1,
                {
                    "group_id": "s",
                    "member_id": str(uuid.uuid4()),
                    "member_epoch": 0,
                    "rack_id": None,
                    "subscribed_topic_names": ["t"],
                },
            )
            assert answer["error_code"] == NONE, answer
        small = _describe(raw, "ShareGroupDescribe", "s")
        monkeypatch.setattr(handlers_group, "LARGE_RESPONSE_ENTRIES", 3)
        large = _describe(raw, "ShareGroupDescribe", "s")
    assert len(large["members"]) == 3
    assert large == small
    codec = [name.startswith("kgroup-codec") for name in threads]
    assert codec == [False, True], threads
