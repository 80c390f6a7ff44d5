"""Differential: DescribeConfigs' refusals and the resources kgroup describes as Kafka does — sent raw
to kgroup and to Apache Kafka 4.4.0 (the ``target`` fixture). ``ConfigHelper``: a resource type Kafka
does not know refuses the whole request; a broker's name is read as ``Integer.parseInt`` reads it and
must be this broker's id (an empty one: the cluster-wide dynamic defaults); a broker-logger resource
must name this broker; a client-metrics subscription or a group must have a name; a topic's name is
checked as ``Topic.validate`` checks it (CreateTopics answers the same messages: kgroup's
``topic_name_error``, which the ``[apache]`` run holds to Kafka's); an empty list of
keys asks for every config. What kgroup describes beyond or short of Kafka (a broker's own configs,
its loggers' names) is checked for its shape only.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata

from kgroup.broker.cluster import topic_name_error
from kgroup.broker.handlers_describe_configs import INVALID_REQUEST_MESSAGE

pytestmark = pytest.mark.apache_kafka

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
INVALID_TOPIC_EXCEPTION, INVALID_REQUEST = 17, 42
BAD_NAMES = ("", ".", "..", "a" * 250, "bad name!", "x\n")


def _describe(
    raw: Raw,
    resources: list[tuple[int, str, list[str] | None]],
    *,
    synonyms: bool = False,
    documentation: bool = False,
) -> list[dict[str, Any]]:
    answer = raw.call(
        "DescribeConfigs",
        4,
        {
            "resources": [
                {"resource_type": t, "resource_name": n, "configuration_keys": k} for t, n, k in resources
            ],
            "include_synonyms": synonyms,
            "include_documentation": documentation,
        },
    )
    return list(answer["results"])


def _refusal(result: dict[str, Any]) -> tuple[int, str | None, int]:
    return (result["error_code"], result["error_message"], len(result["configs"]))


def test_an_unknown_resource_type_refuses_the_whole_request(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        for unknown in (0, 99):
            results = _describe(raw, [(TOPIC, topic, None), (unknown, "y", None), (GROUP, "g", None)])
            assert [(r["resource_type"], r["resource_name"], *_refusal(r)) for r in results] == [
                (TOPIC, topic, INVALID_REQUEST, INVALID_REQUEST_MESSAGE, 0),
                (unknown, "y", INVALID_REQUEST, INVALID_REQUEST_MESSAGE, 0),
                (GROUP, "g", INVALID_REQUEST, INVALID_REQUEST_MESSAGE, 0),
            ]


def test_topic_names_and_keys(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        invalid = _describe(raw, [(TOPIC, n, None) for n in BAD_NAMES])
        created = raw.call(
            "CreateTopics",
            7,
            {
                "topics": [
                    {
                        "name": n,
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    for n in BAD_NAMES
                ],
                "timeout": 30_000,
                "validate_only": True,
            },
        )
        every, none_asked, one = _describe(
            raw, [(TOPIC, topic, None), (TOPIC, topic, []), (TOPIC, topic, ["cleanup.policy"])]
        )
    assert [_refusal(r) for r in invalid] == [
        (INVALID_TOPIC_EXCEPTION, topic_name_error(n), 0) for n in BAD_NAMES
    ]
    assert sorted((t["name"], t["error_code"], t["error_message"]) for t in created["topics"]) == sorted(
        (n, INVALID_TOPIC_EXCEPTION, topic_name_error(n)) for n in BAD_NAMES
    )
    assert none_asked["configs"] == every["configs"] and len(every["configs"]) >= 8  # [] asks for every one
    assert [(c["name"], c["value"], c["config_source"]) for c in one["configs"]] == [
        ("cleanup.policy", "delete", 5)
    ]


def test_brokers_and_their_loggers(target: Target) -> None:
    with Raw(target.bootstrap_servers) as raw:
        nodes = [b["node_id"] for b in metadata(raw, [], auto_create=False)["brokers"]]
        by_id = _describe(raw, [(BROKER, str(n), ["num.partitions"]) for n in nodes])
        (own,) = [n for n, r in zip(nodes, by_id, strict=True) if r["error_code"] == 0]
        other = max(nodes) + 76
        described = {
            name: _refusal(r)
            for name, r in zip(
                ("x", " 1", "99999999999", str(other), f"+{own}", f"0{own}"),
                _describe(
                    raw,
                    [
                        (BROKER, n, ["num.partitions"])
                        for n in ("x", " 1", "99999999999", str(other), f"+{own}", f"0{own}")
                    ],
                ),
                strict=True,
            )
        }
        defaults = _describe(raw, [(BROKER, "", None)]) + _describe(raw, [(BROKER, "", None)], synonyms=True)
        loggers = _describe(
            raw,
            [(BROKER_LOGGER, n, ["root"]) for n in ("", "x", str(other), str(own))],
        )
    for node, result in zip(nodes, by_id, strict=True):
        if node != own:  # (a cluster of several: the others' ids are refused too)
            message = f"Unexpected broker id, expected {own} or empty string, but received {node}"
            assert _refusal(result) == (INVALID_REQUEST, message, 0)
    assert described == {
        "x": (INVALID_REQUEST, "Broker id must be an integer, but it is: x", 0),
        " 1": (INVALID_REQUEST, "Broker id must be an integer, but it is:  1", 0),
        "99999999999": (INVALID_REQUEST, "Broker id must be an integer, but it is: 99999999999", 0),
        str(other): (
            INVALID_REQUEST,
            f"Unexpected broker id, expected {own} or empty string, but received {other}",
            0,
        ),
        f"+{own}": (0, "", 1),
        f"0{own}": (0, "", 1),
    }
    # the cluster-wide dynamic defaults: min.insync.replicas, written as a config record on a 4.4.0 cluster
    entry = {
        "name": "min.insync.replicas",
        "value": "1",
        "read_only": False,
        "config_source": 3,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": 3,
        "documentation": None,
    }
    assert [r["configs"] for r in defaults] == [
        [entry],
        [{**entry, "synonyms": [{"name": "min.insync.replicas", "value": "1", "source": 3}]}],
    ]
    assert [_refusal(r) for r in loggers[:3]] == [
        (INVALID_REQUEST, "Broker id must not be empty", 0),
        (INVALID_REQUEST, "Broker id must be an integer, but it is: x", 0),
        (INVALID_REQUEST, f"Unexpected broker id, expected {own} but received {other}", 0),
    ]
    (root,) = loggers[3]["configs"]  # (the level is each broker's own)
    assert root["value"] in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")
    assert {**root, "value": "INFO"} == {
        "name": "root",
        "value": "INFO",
        "read_only": False,
        "config_source": 6,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": 0,
        "documentation": "",
    }


def test_client_metrics_and_groups(target: Target, names: str) -> None:
    with Raw(target.bootstrap_servers) as raw:
        refused = _describe(raw, [(CLIENT_METRICS, "", None), (GROUP, "", None)])
        plain, documented = (
            _describe(raw, [(CLIENT_METRICS, f"{names}-cm", None)], documentation=d)[0] for d in (False, True)
        )
        keyed = _describe(raw, [(CLIENT_METRICS, f"{names}-cm", ["match"])])[0]
    assert [_refusal(r) for r in refused] == [
        (INVALID_REQUEST, "Client metrics subscription name must not be empty", 0),
        (INVALID_REQUEST, "Group name must not be empty", 0),
    ]

    def entry(name: str, value: str, config_type: int, doc: str | None) -> dict[str, Any]:
        return {
            "name": name,
            "value": value,
            "read_only": False,
            "config_source": 5,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": config_type,
            "documentation": doc,
        }

    assert plain["configs"] == [
        entry("interval.ms", "300000", 3, None),
        entry("match", "", 7, None),
        entry("metrics", "", 7, None),
    ]
    assert documented["configs"] == [
        entry("interval.ms", "300000", 3, "Metrics push interval in milliseconds"),
        entry("match", "", 7, "Client match criteria"),
        entry("metrics", "", 7, "Telemetry metric name prefix list"),
    ]
    assert keyed["configs"] == [entry("match", "", 7, None)]
