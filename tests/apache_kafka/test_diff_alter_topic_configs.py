"""Differential: IncrementalAlterConfigs of topics — sent raw to kgroup and to Apache Kafka 4.4.0 (the
``target`` fixture): the operations (SET, DELETE, APPEND and SUBTRACT on a list, from its default when
there is no override), the refusals before the controller (a resource named twice, a config named twice,
null values) and its own (Kafka's ``LogConfig`` messages, a list operation on a config that is not one,
an unknown topic after its configs are checked), ``validate_only``, DescribeConfigs afterwards, and the
change acted on: a smaller ``max.message.bytes`` refuses a batch it let in before.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_transactions import _produce
from tests.apache_kafka.wire import Raw, create_topic
from tests.log.batches import kio_batch

pytestmark = pytest.mark.apache_kafka

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
INVALID_REQUEST, INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE = 42, 40, 3, 10


def _alter(
    raw: Raw, resources: list[tuple[str, list[tuple[str, int, str | None]]]], validate_only: bool = False
) -> list[tuple[str, int, str | None]]:
    answer = raw.call(
        "IncrementalAlterConfigs",
        1,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": name,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
                }
                for name, ops in resources
            ],
            "validate_only": validate_only,
        },
    )
    return [(r["resource_name"], r["error_code"], r["error_message"]) for r in answer["responses"]]


def _overrides(raw: Raw, topic: str) -> dict[str, str]:
    answer = raw.call(
        "DescribeConfigs",
        4,
        {
            "resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    return {c["name"]: c["value"] for c in answer["results"][0]["configs"] if c["config_source"] == 1}


def _settled(read: Any, want: Any) -> Any:
    """Apache Kafka's broker takes a config change from its controller a moment later: read again
    (bounded) until it shows."""
    deadline = time.monotonic() + 15
    while (got := read()) != want and time.monotonic() < deadline:
        time.sleep(0.1)
    return got


def test_operations_and_refusals(target: Target, names: str) -> None:
    topic, nope = f"{names}-t", f"{names}-nope"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        seen: dict[str, Any] = {}
        seen["set"] = _alter(
            raw, [(topic, [("retention.ms", SET, "60000"), ("cleanup.policy", SET, "compact")])]
        )
        seen["after set"] = _settled(
            lambda: _overrides(raw, topic), {"retention.ms": "60000", "cleanup.policy": "compact"}
        )
        seen["append"] = _alter(raw, [(topic, [("cleanup.policy", APPEND, "delete")])])
        seen["after append"] = _settled(
            lambda: _overrides(raw, topic), {"retention.ms": "60000", "cleanup.policy": "compact,delete"}
        )
        seen["subtract and delete"] = _alter(
            raw, [(topic, [("cleanup.policy", SUBTRACT, "compact"), ("retention.ms", DELETE, None)])]
        )
        seen["after subtract"] = _settled(lambda: _overrides(raw, topic), {"cleanup.policy": "delete"})
        seen["validate only"] = _alter(raw, [(topic, [("retention.ms", SET, "5")])], validate_only=True)
        seen["after validate only"] = _overrides(raw, topic)
        seen["refused"] = _alter(
            raw,
            [
                (topic, [("retention.ms", APPEND, "5")]),
                (f"{names}-u", [("zzz.unknown", SET, "1")]),
                (
                    nope,
                    [("retention.ms", SET, "x")],
                ),  # (its configs are checked before the topic is looked for)
                (f"{nope}2", [("retention.ms", SET, "5")]),
                (f"{names}-d", [("retention.ms", SET, "5"), ("retention.ms", DELETE, None)]),
                (
                    f"{names}-n",
                    [("retention.ms", SET, None), ("segment.ms", APPEND, None), ("x", DELETE, None)],
                ),
                (f"{names}-s", [("segment.bytes", SET, "100")]),
                (f"{names}-s", [("segment.bytes", SET, "100")]),
            ],
        )
        seen["unknown topic"] = _alter(raw, [(nope, [("retention.ms", SET, "5")])])
    assert seen["set"] == [(topic, 0, None)]
    assert seen["after set"] == {"retention.ms": "60000", "cleanup.policy": "compact"}
    assert seen["append"] == [(topic, 0, None)]
    assert seen["after append"] == {"retention.ms": "60000", "cleanup.policy": "compact,delete"}
    assert seen["subtract and delete"] == [(topic, 0, None)]
    assert seen["after subtract"] == {"cleanup.policy": "delete"}
    assert seen["validate only"] == [(topic, 0, None)]
    assert seen["after validate only"] == {"cleanup.policy": "delete"}
    assert seen["refused"] == [
        (topic, INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."),
        (f"{names}-u", INVALID_CONFIG, "Unknown topic config name: zzz.unknown"),
        (nope, INVALID_CONFIG, "Invalid value x for configuration retention.ms: Not a number of type LONG"),
        (f"{nope}2", UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{nope}2' does not exist."),
        (f"{names}-d", INVALID_REQUEST, "Error due to duplicate config keys"),
        (f"{names}-n", INVALID_REQUEST, "Null value not supported for : retention.ms, segment.ms"),
        (f"{names}-s", INVALID_REQUEST, "Each resource must appear at most once."),
        (f"{names}-s", INVALID_REQUEST, "Each resource must appear at most once."),
    ]
    assert seen["unknown topic"] == [
        (nope, UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{nope}' does not exist.")
    ]


def test_a_list_from_its_default(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        appended = _alter(raw, [(topic, [("cleanup.policy", APPEND, "compact")])])
        after = _settled(lambda: _overrides(raw, topic), {"cleanup.policy": "delete,compact"})
    assert appended == [(topic, 0, None)]
    assert after == {"cleanup.policy": "delete,compact"}


def test_the_change_is_acted_on(target: Target, names: str) -> None:
    topic = f"{names}-t"
    batch = kio_batch([b"x" * 300])
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        before = _produce(raw, 9, None, topic, 0, batch)[0]
        altered = _alter(raw, [(topic, [("max.message.bytes", SET, "200")])])
        after = _settled(lambda: _produce(raw, 9, None, topic, 0, batch)[0], MESSAGE_TOO_LARGE)
    assert (before, altered, after) == (0, [(topic, 0, None)], MESSAGE_TOO_LARGE)
