"""kgroup.broker.group_configs: the checks with the broker's own bounds, the store's file, the
DescribeConfigs entries (the answers themselves are compared with Apache Kafka 4.4.0 in
tests/apache_kafka/test_diff_group_configs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.broker.config import BrokerConfig
from kgroup.broker.group_configs import (
    GROUP_CONFIG_NAMES,
    GroupConfigError,
    GroupConfigStore,
    broker_bounds,
    describe_group_configs,
    group_config_defaults,
    validate_group_config,
)

pytestmark = pytest.mark.share_groups


def test_consumer_bounds_follow_the_brokers_settings() -> None:
    config = BrokerConfig(
        group_consumer_session_timeout_ms=1000,
        group_consumer_min_session_timeout_ms=1000,
        group_consumer_heartbeat_interval_ms=300,
        group_consumer_min_heartbeat_interval_ms=300,
    )
    bounds = broker_bounds(config)
    validate_group_config("consumer.session.timeout.ms", "2000", bounds)  # Kafka's default bounds refuse it
    with pytest.raises(GroupConfigError, match=r"^consumer\.session\.timeout\.ms must be in the range 45000"):
        validate_group_config("consumer.session.timeout.ms", "2000")
    with pytest.raises(GroupConfigError) as refused:
        validate_group_config("consumer.heartbeat.interval.ms", "200", bounds)
    assert (refused.value.code, refused.value.message) == (
        40,
        "consumer.heartbeat.interval.ms must be in the range 300 to 15000 inclusive.",
    )


def test_store_writes_its_file_and_reads_it_back(tmp_path: Path) -> None:
    store = GroupConfigStore(tmp_path)
    store.put("workers", {"share.delivery.count.limit": "3"})
    store.put("idle", {"share.isolation.level": "read_committed"})
    store.put("idle", {})  # every config deleted: the group leaves the file
    again = GroupConfigStore(tmp_path)
    assert again.get("workers") == {"share.delivery.count.limit": "3"}
    assert again.get("idle") == {} and again.value("workers", "share.delivery.count.limit") == "3"
    assert not (tmp_path / "group-configs.json.tmp").exists()


def test_entries_take_the_brokers_defaults_and_the_groups_values() -> None:
    defaults = group_config_defaults(
        {"group.share.record.lock.duration.ms": 20_000, "share.auto.offset.reset": "earliest"}
    )
    entries = describe_group_configs({"share.delivery.count.limit": "3"}, defaults, None, synonyms=True)
    assert [e["name"] for e in entries] == list(GROUP_CONFIG_NAMES)
    by_name = {e["name"]: e for e in entries}
    assert (
        by_name["share.record.lock.duration.ms"]["value"],
        by_name["share.auto.offset.reset"]["value"],
    ) == (
        "20000",
        "earliest",
    )
    assert by_name["share.delivery.count.limit"]["synonyms"] == [
        {"name": "share.delivery.count.limit", "value": "3", "source": 8},
        {"name": "group.share.delivery.count.limit", "value": "5", "source": 5},
    ]
    named = describe_group_configs({}, defaults, ["share.isolation.level", "nope"], synonyms=False)
    assert [(e["name"], e["value"], e["config_source"], e["synonyms"]) for e in named] == [
        ("share.isolation.level", "read_uncommitted", 5, [])
    ]
