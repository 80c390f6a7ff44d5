"""The differential suite, group APIs: the error code a client gets for each wrong request.

Each test runs once against kgroup's broker and once against Apache Kafka 4.4.0 (the ``target``
fixture) and asserts Kafka's answer; the ``[apache]`` run proves that the expected values are Kafka's.
Requests are raw (``wire.Raw``) because no client library sends a made-up member id, a stale
generation or an empty group id on purpose.

Normalized: member ids are compared as ``<client or instance id>-<uuid>`` (the UUID is random on both
brokers). Nothing else is: error codes, states, protocol names and generations are compared as sent.
"""

from __future__ import annotations

import time

from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import (
    RANGE,
    Raw,
    commit,
    create_topic,
    describe,
    find_coordinator,
    heartbeat,
    join,
    leave,
    member_id_shape,
    stable_member,
    sync,
)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82


def coordinator(target: Target, group_id: str) -> Raw:
    return Raw(find_coordinator(target.bootstrap_servers, group_id))


def test_wrong_requests_to_a_stable_group(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
    with coordinator(target, group) as raw:
        member, gen = stable_member(raw, group)
        seen = {
            "heartbeat": heartbeat(raw, group, gen, member),
            "heartbeat, unknown member": heartbeat(raw, group, gen, "stranger"),
            "heartbeat, illegal generation": heartbeat(raw, group, gen + 5, member),
            "sync, unknown member": sync(raw, group, gen, "stranger")["error_code"],
            "sync, illegal generation": sync(raw, group, gen + 1, member)["error_code"],
            "sync, wrong protocol type": sync(raw, group, gen, member, protocol_type="connect")["error_code"],
            "sync, wrong protocol name": sync(raw, group, gen, member, protocol_name="roundrobin")[
                "error_code"
            ],
            "commit, unknown member": commit(raw, group, gen, "stranger", {(topic, 0): (5, "m")}),
            "commit, illegal generation": commit(raw, group, gen + 3, member, {(topic, 0): (5, "m")}),
            "commit, no generation to an active group": commit(raw, group, -1, "", {(topic, 0): (5, "m")}),
            "commit, unknown topic": commit(raw, group, gen, member, {(f"{names}-none", 0): (5, "m")}),
            "commit, unknown partition": commit(
                raw, group, gen, member, {(topic, 7): (5, "m"), (topic, 1): (6, "")}
            ),
            "join, unknown member": join(raw, group, "stranger")["error_code"],
            "join, wrong protocol type": join(raw, group, member, protocol_type="connect")["error_code"],
            "join, no common protocol": join(raw, group, member, protocols=[{"name": "x", "metadata": b""}])[
                "error_code"
            ],
            "join, new member, wrong protocol type": join(raw, group, protocol_type="connect")["error_code"],
            "join, session timeout below group.min.session.timeout.ms": join(
                raw, group, member, session_timeout_ms=10
            )["error_code"],
            "join, session timeout above group.max.session.timeout.ms": join(
                raw, group, member, session_timeout_ms=10_000_000
            )["error_code"],
            "leave, unknown member (v5)": leave(raw, group, "stranger"),
            "leave, unknown member (v2)": raw.call(
                "LeaveGroup", 2, {"group_id": group, "member_id": "stranger"}
            ),
            "still stable": describe(raw, group)["group_state"],
        }
    assert seen == {
        "heartbeat": NONE,
        "heartbeat, unknown member": UNKNOWN_MEMBER_ID,
        "heartbeat, illegal generation": ILLEGAL_GENERATION,
        "sync, unknown member": UNKNOWN_MEMBER_ID,
        "sync, illegal generation": ILLEGAL_GENERATION,
        "sync, wrong protocol type": INCONSISTENT_GROUP_PROTOCOL,
        "sync, wrong protocol name": INCONSISTENT_GROUP_PROTOCOL,
        "commit, unknown member": {(topic, 0): UNKNOWN_MEMBER_ID},
        "commit, illegal generation": {(topic, 0): ILLEGAL_GENERATION},
        "commit, no generation to an active group": {(topic, 0): UNKNOWN_MEMBER_ID},
        "commit, unknown topic": {(f"{names}-none", 0): UNKNOWN_TOPIC_OR_PARTITION},
        "commit, unknown partition": {(topic, 7): UNKNOWN_TOPIC_OR_PARTITION, (topic, 1): NONE},
        "join, unknown member": UNKNOWN_MEMBER_ID,
        "join, wrong protocol type": INCONSISTENT_GROUP_PROTOCOL,
        "join, no common protocol": INCONSISTENT_GROUP_PROTOCOL,
        "join, new member, wrong protocol type": INCONSISTENT_GROUP_PROTOCOL,
        "join, session timeout below group.min.session.timeout.ms": INVALID_SESSION_TIMEOUT,
        "join, session timeout above group.max.session.timeout.ms": INVALID_SESSION_TIMEOUT,
        "leave, unknown member (v5)": {
            "throttle_time": 0,
            "error_code": NONE,
            "members": [
                {"member_id": "stranger", "group_instance_id": None, "error_code": UNKNOWN_MEMBER_ID}
            ],
        },
        "leave, unknown member (v2)": {"throttle_time": 0, "error_code": UNKNOWN_MEMBER_ID},
        "still stable": "Stable",
    }


def test_a_fenced_static_member(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    with coordinator(target, group) as raw:
        old, gen = stable_member(raw, group, instance_id="i1")
        # the same instance id joins again without a member id: it replaces the old member (KIP-345)
        again = join(raw, group, instance_id="i1")
        new = again["member_id"]
        seen = {
            "rejoin": (
                again["error_code"],
                again["generation_id"] - gen,
                again["leader"] == new,
                member_id_shape(new),
                again["skip_assignment"],
                [member_id_shape(m["member_id"]) for m in again["members"]],
            ),
            "heartbeat": heartbeat(raw, group, gen, old, "i1"),
            "sync": sync(raw, group, gen, old, instance_id="i1")["error_code"],
            "commit": commit(raw, group, gen, old, {(topic, 0): (1, None)}, "i1"),
            "join": join(raw, group, old, instance_id="i1")["error_code"],
            "leave": [
                (member_id_shape(m["member_id"]), m["error_code"])
                for m in leave(raw, group, old, "i1")["members"]
            ],
            "heartbeat, unknown instance id": heartbeat(raw, group, gen, new, "i9"),
            "heartbeat, no instance id": heartbeat(raw, group, gen, new, None),
            "heartbeat, the new member": heartbeat(raw, group, gen, new, "i1"),
        }
    assert old != new
    assert seen == {
        # a returning static leader keeps the generation and gets skip_assignment (KIP-814) with
        # the members' metadata, so it can send its assignment again
        "rejoin": (NONE, 0, True, "i1-<uuid>", True, ["i1-<uuid>"]),
        "heartbeat": FENCED_INSTANCE_ID,
        "sync": FENCED_INSTANCE_ID,
        "commit": {(topic, 0): FENCED_INSTANCE_ID},
        "join": FENCED_INSTANCE_ID,
        "leave": [("i1-<uuid>", FENCED_INSTANCE_ID)],
        "heartbeat, unknown instance id": UNKNOWN_MEMBER_ID,
        "heartbeat, no instance id": NONE,
        "heartbeat, the new member": NONE,
    }


def test_requests_during_a_rebalance(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    address = find_coordinator(target.bootstrap_servers, group)
    with Raw(address) as first, Raw(address) as second:
        member, gen = stable_member(first, group)
        asked = join(second, group)
        newcomer = asked["member_id"]
        # the second JoinGroup is held until the first member rejoins: PreparingRebalance
        second.send(
            "JoinGroup",
            9,
            {
                "group_id": group,
                "session_timeout": 10_000,
                "rebalance_timeout": 10_000,
                "member_id": newcomer,
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": RANGE,
                "reason": None,
            },
        )
        deadline = time.monotonic() + 10
        while describe(first, group)["group_state"] != "PreparingRebalance":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        preparing = {
            "heartbeat": heartbeat(first, group, gen, member),
            "commit with the current generation": commit(first, group, gen, member, {(topic, 0): (3, None)}),
            "sync": sync(first, group, gen, member)["error_code"],
        }
        rejoined = join(first, group, member)
        held = second.receive()
        leader, follower = (member, newcomer) if rejoined["leader"] == member else (newcomer, member)
        gen2 = rejoined["generation_id"]
        follower_connection = first if follower == member else second
        completing = {
            "heartbeat": heartbeat(follower_connection, group, gen2, follower),
            "heartbeat, the old generation": heartbeat(follower_connection, group, gen, follower),
            "commit": commit(follower_connection, group, gen2, follower, {(topic, 0): (4, None)}),
            "state": describe(first, group)["group_state"],
        }
    assert (asked["error_code"], rejoined["error_code"], held["error_code"]) == (
        MEMBER_ID_REQUIRED,
        NONE,
        NONE,
    )
    assert (gen2 - gen, held["generation_id"] - gen, rejoined["leader"] == held["leader"]) == (1, 1, True)
    assert leader in (member, newcomer)
    assert preparing == {
        "heartbeat": REBALANCE_IN_PROGRESS,
        # a member of the current generation may still commit while the group prepares
        "commit with the current generation": {(topic, 0): NONE},
        "sync": REBALANCE_IN_PROGRESS,
    }
    assert completing == {
        "heartbeat": NONE,
        "heartbeat, the old generation": ILLEGAL_GENERATION,
        "commit": {(topic, 0): REBALANCE_IN_PROGRESS},
        "state": "CompletingRebalance",
    }


def test_requests_for_a_group_that_does_not_exist(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    with coordinator(target, group) as raw:
        seen = {
            "heartbeat": heartbeat(raw, group, 1, "m"),
            "sync": sync(raw, group, 1, "m")["error_code"],
            "commit with a generation": commit(raw, group, 1, "m", {(topic, 0): (1, None)}),
            "join with a member id": join(raw, group, "m")["error_code"],
            "describe": describe(raw, group),
            "leave (v2)": raw.call("LeaveGroup", 2, {"group_id": group, "member_id": "m"})["error_code"],
        }
        leave_v5 = leave(raw, group, "m")
    assert seen == {
        "heartbeat": UNKNOWN_MEMBER_ID,
        "sync": UNKNOWN_MEMBER_ID,
        "commit with a generation": {(topic, 0): GROUP_ID_NOT_FOUND},
        "join with a member id": UNKNOWN_MEMBER_ID,
        "describe": {
            "error_code": NONE,
            "group_id": group,
            "group_state": "Dead",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": -(2**31),
        },
        "leave (v2)": UNKNOWN_MEMBER_ID,
    }
    assert leave_v5 == {
        "throttle_time": 0,
        "error_code": NONE,
        "members": [{"member_id": "m", "group_instance_id": None, "error_code": UNKNOWN_MEMBER_ID}],
    }


def test_a_long_group_id(target: Target, names: str) -> None:
    group, topic = f"{names}-" + "x" * 300, f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    with coordinator(target, group) as raw:
        member, gen = stable_member(raw, group)
        assert commit(raw, group, gen, member, {(topic, 0): (9, "long")}) == {(topic, 0): NONE}
        assert describe(raw, group)["group_state"] == "Stable"
        assert heartbeat(raw, group, gen, member) == NONE


def test_an_empty_group_id(target: Target, names: str) -> None:
    topic = f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
    with coordinator(target, "") as raw:
        refused = {
            "join": join(raw, "")["error_code"],
            "heartbeat": heartbeat(raw, "", 1, "m"),
            "sync": sync(raw, "", 1, "m")["error_code"],
        }
        assert refused == {"join": INVALID_GROUP_ID, "heartbeat": INVALID_GROUP_ID, "sync": INVALID_GROUP_ID}
        committed = commit(raw, "", -1, "", {(topic, 0): (5, "simple")})
        fetched = raw.call(
            "OffsetFetch",
            7,
            {"group_id": "", "topics": [{"name": topic, "partition_indexes": [0]}], "require_stable": False},
        )
        assert (
            committed,
            fetched["error_code"],
            fetched["topics"][0]["partitions"][0]["committed_offset"],
        ) == (
            {(topic, 0): NONE},
            NONE,
            5,
        )
        assert describe(raw, "")["group_state"] == "Empty"
