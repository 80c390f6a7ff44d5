"""AlterShareGroupOffsets and DeleteShareGroupOffsets on ``kgroup serve`` survive ``kill -9``: the new
start offset (a ``ShareSnapshot``) and the deletion (a tombstone) are in ``__share_group_state``, and
the group's initialised topics in ``__consumer_offsets``, before the request is answered.

A member reads nothing and leaves; Alter moves partition 0 of ``jobs`` to 6, a group config is set
(``share.delivery.count.limit``, kept in ``group-configs.json``) and the broker is killed:
after the restart DescribeShareGroupOffsets says 6 (lag 4 of 10 records), and a new member gets
records 6-9 at delivery count 1. Then Delete, kill -9 again: after the restart the group has no
offsets and describing all of them names none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.apache_kafka.test_diff_group_configs import _alter as _alter_configs
from tests.apache_kafka.test_diff_group_configs import _describe as _describe_configs
from tests.apache_kafka.test_diff_share_fetch import _fetch, _part, _topic_id
from tests.apache_kafka.test_diff_share_offsets import _alter, _delete, _describe
from tests.apache_kafka.wire import Raw, find_coordinator
from tests.broker.procs import BrokerProcess
from tests.broker.test_share_durability import _acquired, _join

pytestmark = pytest.mark.share_groups

NONE = 0


def _leave(bootstrap: str, group: str, member: str) -> None:
    from tests.apache_kafka.test_diff_share_group import _heartbeat

    with Raw(find_coordinator(bootstrap, group)) as raw:
        left = _heartbeat(raw, group_id=group, member_id=member, member_epoch=-1)
        assert left["error_code"] == NONE, left


def _partitions(described: Any) -> list[tuple[int, int, int]]:
    return [
        (p["partition_index"], p["start_offset"], p["lag"])
        for t in described[0]["topics"]
        for p in t["partitions"]
    ]


def test_alter_and_delete_survive_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, "--topic", "jobs:1")
    try:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all"})
        for i in range(10):
            producer.produce("jobs", value=f"job-{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        del producer
        member = _join(broker.bootstrap_servers, "workers", "jobs")
        _leave(broker.bootstrap_servers, "workers", member)
        with Raw(find_coordinator(broker.bootstrap_servers, "workers")) as raw:
            altered = _alter(raw, "workers", {"jobs": [(0, 6)]})
        assert altered["error_code"] == NONE, altered
        assert [p["error_code"] for t in altered["responses"] for p in t["partitions"]] == [NONE]
        with Raw(broker.bootstrap_servers) as raw:  # a group config, kept in group-configs.json
            assert _alter_configs(raw, "workers", [("share.delivery.count.limit", 0, "3")]) == (NONE, None)
    finally:
        broker.kill()  # kill -9: no flush, no close

    restarted = BrokerProcess(data)
    try:
        bootstrap = restarted.bootstrap_servers
        with Raw(bootstrap) as raw:
            kept = _describe_configs(raw, "workers", ["share.delivery.count.limit"], synonyms=False)
        assert [(c["value"], c["config_source"]) for c in kept["configs"]] == [("3", 8)]
        with Raw(find_coordinator(bootstrap, "workers")) as raw:
            assert _partitions(_describe(raw, 1, "workers", {"jobs": [0]})) == [(0, 6, 4)]
            assert _partitions(_describe(raw, 1, "workers", None)) == [(0, 6, 4)]
        member = _join(bootstrap, "workers", "jobs")
        with Raw(bootstrap) as raw:
            topic_id = _topic_id(raw, "jobs")
            got = _fetch(
                raw,
                group_id="workers",
                member_id=member,
                topics=[{"topic_id": topic_id, "partitions": [_part(0)]}],
            )
            assert _acquired(got) == [(6, 9, 1)]
            _fetch(raw, group_id="workers", member_id=member, share_session_epoch=-1)
        _leave(bootstrap, "workers", member)
        with Raw(find_coordinator(bootstrap, "workers")) as raw:
            deleted = _delete(raw, "workers", ["jobs"])
        assert (deleted["error_code"], [t["error_code"] for t in deleted["responses"]]) == (NONE, [NONE])
    finally:
        restarted.kill()

    again = BrokerProcess(data)
    try:
        with Raw(find_coordinator(again.bootstrap_servers, "workers")) as raw:
            assert _partitions(_describe(raw, 1, "workers", {"jobs": [0]})) == [(0, -1, -1)]
            assert _describe(raw, 1, "workers", None)[0]["topics"] == []
    finally:
        again.kill()
