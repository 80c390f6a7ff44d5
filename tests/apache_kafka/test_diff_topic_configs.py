"""Differential: the topic configs CreateTopics takes and refuses — sent raw to kgroup and to Apache
Kafka 4.4.0 (the ``target`` fixture), each answer held to ``kgroup.topic_configs``' model (Kafka's
``LogConfig``: a null value, then an unknown name, then each value parsed and validated in the order the
config def defines them) so the ``[apache]`` run proves the model is Kafka's. Also: the refusal comes
before the partition and replica checks (after the name's and the topic's existence); a created topic's
answer lists the request's configs as given (DYNAMIC_TOPIC_CONFIG), and DescribeConfigs then shows
them as Kafka writes them back (``ConfigDef.convertToString``).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata

from kgroup.topic_configs import topic_config_error

pytestmark = pytest.mark.apache_kafka

INVALID_CONFIG, TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION = 40, 36, 17

CASES: list[list[tuple[str, str | None]]] = [
    [("retention.ms", "x")],
    [("retention.ms", "-2")],
    [("retention.ms", " 5")],
    [("retention.ms", "+5")],
    [("retention.ms", "9223372036854775808")],
    [("retention.bytes", "-3")],
    [("segment.bytes", "100")],
    [("segment.bytes", "999999999999999")],
    [("segment.ms", "0")],
    [("segment.index.bytes", "3")],
    [("flush.messages", "0")],
    [("max.message.bytes", "-5")],
    [("max.message.bytes", "\u0661\u0662")],
    [("max.decompressed.message.bytes", "0")],
    [("max.compaction.lag.ms", "0")],
    [("min.cleanable.dirty.ratio", "1.5")],
    [("min.cleanable.dirty.ratio", "999999999999999")],
    [("min.cleanable.dirty.ratio", "-3")],
    [("min.cleanable.dirty.ratio", "5e-1")],
    [("min.cleanable.dirty.ratio", "0.5d")],
    [("min.cleanable.dirty.ratio", "NaN")],
    [("min.cleanable.dirty.ratio", "x")],
    [("cleanup.policy", "bogus")],
    [("cleanup.policy", "compact,x")],
    [("cleanup.policy", "compact,")],
    [("cleanup.policy", "")],
    [("cleanup.policy", " compact , delete ")],
    [("unclean.leader.election.enable", "yes")],
    [("preallocate", "TRUE")],
    [("preallocate", " 5")],
    [("min.insync.replicas", "0")],
    [("compression.type", "lz5")],
    [("compression.type", "GZIP")],
    [("compression.type", " zstd ")],
    [("compression.gzip.level", "0")],
    [("compression.gzip.level", "-1")],
    [("compression.lz4.level", "18")],
    [("compression.zstd.level", "-131073")],
    [("compression.zstd.level", "23")],
    [("message.timestamp.type", "createtime")],
    [("message.timestamp.before.max.ms", "-1")],
    [("leader.replication.throttled.replicas", "*")],
    [("leader.replication.throttled.replicas", "0:1, 1:2")],
    [("follower.replication.throttled.replicas", "0:1,x")],
    [("local.retention.ms", "-3")],
    [("remote.copy.lag.bytes", "-2")],
    [("remote.storage.enable", "true")],
    [("errors.deadletterqueue.group.enable", "1")],
    [("internal.segment.bytes", "1000")],
    [("message.format.version", "3.0")],  # removed in Kafka 4
    [("message.downconversion.enable", "true")],  # removed in Kafka 4
    [("zzz.unknown", "1"), ("retention.ms", "x")],
    [("retention.ms", "x"), ("zzz.unknown", "1")],
    [("zzz.unknown", "1"), ("retention.ms", None)],
    [("retention.ms", "x"), ("segment.bytes", "1")],  # the config def's order, not the request's
    [("retention.ms", "5"), ("retention.ms", "x")],  # the last value counts
    [("min.compaction.lag.ms", "10"), ("max.compaction.lag.ms", "5")],
]


def _create(
    raw: Raw, name: str, configs: list[tuple[str, str | None]], *, validate_only: bool = True, **fields: Any
) -> Any:
    body = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], **fields}
    answer = raw.call(
        "CreateTopics",
        7,
        {
            "topics": [{**body, "configs": [{"name": k, "value": v} for k, v in configs]}],
            "timeout": 30_000,
            "validate_only": validate_only,
        },
    )
    (topic,) = answer["topics"]
    return topic


def test_the_configs_create_topics_refuses(target: Target, names: str) -> None:
    with Raw(target.bootstrap_servers) as raw:
        answers = [_create(raw, f"{names}-c{i}", configs) for i, configs in enumerate(CASES)]
    for configs, topic in zip(CASES, answers, strict=True):
        expected = topic_config_error(configs)
        got = (topic["error_code"], topic["error_message"])
        assert got == ((INVALID_CONFIG, expected) if expected is not None else (0, None)), configs
    assert sum(topic_config_error(c) is None for c in CASES) >= 12  # (accepted ones too, not only refusals)


def test_the_configs_are_checked_before_the_partitions(target: Target, names: str) -> None:
    bad = [("retention.ms", "x")]
    message = "Invalid value x for configuration retention.ms: Not a number of type LONG"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, f"{names}-exists", 1)
        answers = {
            "no partitions": _create(raw, f"{names}-a", bad, num_partitions=0),
            "no replicas": _create(raw, f"{names}-b", bad, replication_factor=0),
            "too many replicas": _create(raw, f"{names}-c", bad, replication_factor=9),
            "exists": _create(raw, f"{names}-exists", bad),
            "bad name": _create(raw, "bad name", [("retention.ms", None)]),
        }
    codes = {k: (a["error_code"], a["error_message"]) for k, a in answers.items()}
    assert codes == {
        "no partitions": (INVALID_CONFIG, message),
        "no replicas": (INVALID_CONFIG, message),
        "too many replicas": (INVALID_CONFIG, message),
        "exists": (TOPIC_ALREADY_EXISTS, f"Topic '{names}-exists' already exists."),
        "bad name": (
            INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'bad name' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        ),
    }


def test_a_created_topics_configs_as_given_and_as_described(target: Target, names: str) -> None:
    topic, refused = f"{names}-made", f"{names}-refused"
    given = [
        ("retention.ms", " 5"),
        ("cleanup.policy", " compact , delete "),
        ("preallocate", "TRUE"),
        ("min.cleanable.dirty.ratio", "5e-1"),
        ("max.message.bytes", "+2048"),
    ]
    with Raw(target.bootstrap_servers) as raw:
        made = _create(raw, topic, given, validate_only=False)
        not_made = _create(raw, refused, [("retention.ms", "x")], validate_only=False)
        described = raw.call(
            "DescribeConfigs",
            4,
            {
                "resources": [
                    {"resource_type": 2, "resource_name": topic, "configuration_keys": [n for n, _ in given]}
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )
        (missing,) = metadata(raw, [refused], auto_create=False)["topics"]
    assert made["error_code"] == 0
    listed = {c["name"]: (c["value"], c["config_source"]) for c in made["configs"]}
    assert {n: listed[n] for n, _ in given} == {n: (v, 1) for n, v in given}
    assert listed["min.insync.replicas"] == ("1", 3)
    assert sorted(
        (c["name"], c["value"], c["config_source"]) for c in described["results"][0]["configs"]
    ) == [
        ("cleanup.policy", "compact,delete", 1),
        ("max.message.bytes", "2048", 1),
        ("min.cleanable.dirty.ratio", "0.5", 1),
        ("preallocate", "true", 1),
        ("retention.ms", "5", 1),
    ]
    assert not_made["error_code"] == INVALID_CONFIG
    assert missing["error_code"] == 3  # nothing was created
