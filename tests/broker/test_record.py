"""`--record DIR`: a real group's rebalances in the simulator's JSON shape, drawn by `kgroup report DIR`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from tests.broker.groupclients import Owned, Runner, confluent_consumer, wait_until

from kgroup.cli import main
from kgroup.testing import KafkaBroker


def test_recorded_group_is_drawn_by_kgroup_report(tmp_path: Path) -> None:
    """An eager (range) group that two members join, committing what they read: the recording has
    the members as Kafka's describe shows them, their commits, and the eager rebalance's unowned
    window (every member holds nothing from the join phase's end to the assignment); `kgroup
    report` draws and explains it."""
    from confluent_kafka import Producer

    record = tmp_path / "rec"
    path = record / "rec-group" / "result.json"
    auto_commit = {"auto.commit.interval.ms": 200}
    with KafkaBroker(topics={"rec": 4}, record_dir=record) as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        for n in range(40):
            producer.produce("rec", value=b"x", partition=n % 4)
        assert producer.flush(10) == 0
        owned = Owned()
        first = confluent_consumer(
            kafka.bootstrap_servers, "rec-group", "rec", owned, "one", **{"client.id": "one"}, **auto_commit
        )
        first.start()
        try:
            wait_until(
                lambda: owned.snapshot().get("one") == frozenset(range(4)), 60, "one member owning all"
            )
            second = confluent_consumer(
                kafka.bootstrap_servers,
                "rec-group",
                "rec",
                owned,
                "two",
                **{"client.id": "two"},
                **auto_commit,
            )
            second.start()
            try:
                wait_until(lambda: len(owned.snapshot().get("two", ())) == 2, 60, "two members sharing")
                wait_until(
                    lambda: path.exists() and json.loads(path.read_text())["metrics"]["offset_commits"] > 0,
                    30,
                    "an auto-commit recorded",
                )
            finally:
                second.join_checked()
        finally:
            first.join_checked()
    data = json.loads(path.read_text())
    assert set(data) >= {"scenario", "metrics", "ownership", "events", "members", "commits"}
    assert data["recording"]["recorded_by"] == "kgroup serve --record"
    states = [e["state"] for e in data["events"] if e["kind"] == "group_state"]
    assert states.count("Stable") >= 2 and "PreparingRebalance" in states
    assert data["metrics"]["generation"] >= 2
    assigned = {p for o in data["ownership"] for p in o["assigned"]}
    assert assigned == {f"rec-{p}" for p in range(4)}
    assert data["recording"]["partitions"] == [f"rec-{p}" for p in range(4)]
    assert data["recording"]["intervals"]
    # the members as Kafka's describe shows them: client id and host
    assert sorted((m["client_id"], m["client_host"]) for m in data["members"]) == [
        ("one", "/127.0.0.1"),
        ("two", "/127.0.0.1"),
    ]
    # the eager rebalance: at the end of the second join phase, "one" revokes all four partitions
    one = next(m["member_id"] for m in data["members"] if m["client_id"] == "one")
    completing = [e["t_ms"] for e in data["events"] if e.get("state") == "CompletingRebalance"]
    assert any(
        o["member"] == one and o["t_ms"] in completing and len(o["revoked"]) == 4 for o in data["ownership"]
    ), data["ownership"]
    assert data["metrics"]["unowned_partition_ms"] == sum(data["recording"]["unowned_ms"])
    # what the members read was committed: at most the 10 records of each partition
    progress = {p: points[-1][1] for p, points in data["commits"].items()}
    assert progress and all(0 < offset <= 10 for offset in progress.values()), data["commits"]
    assert data["metrics"]["offset_commits"] == sum(len(points) for points in data["commits"].values())
    try:
        main(["report", str(record)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    html = (record / "rec-group" / "index.html").read_text()
    assert "Partition owners over time" in html and "<img" in html
    assert "recorded by kgroup serve --record" in html
    assert "What the rebalances cost" in html and "Unowned partition-time" in html
    assert "Committed-offset progress" in html and 'id="rec-progress"' in html
    # the interactive timeline beside it, linked from the page, with every member's bars
    assert "Explore this timeline: timeline.html" in html and 'href="timeline.html"' in html
    page = (record / "rec-group" / "timeline.html").read_text()
    assert all(f'"name":"{m["member_id"]}"' in page for m in data["members"])


def test_recording_of_a_cooperative_group_left_and_static_rejoin(tmp_path: Path) -> None:
    """A member that sends LeaveGroup revoked its partitions (not lost); a static member that
    rejoins under a new member id continues under the new id; the final protocol survives Empty."""
    record = tmp_path / "rec"
    coop = {"partition.assignment.strategy": "cooperative-sticky"}
    static = {**coop, "group.instance.id": "a-inst"}
    with KafkaBroker(topics={"coop": 4}, record_dir=record) as kafka:
        owned = Owned()
        a = confluent_consumer(kafka.bootstrap_servers, "coop-group", "coop", owned, "a", **static)
        a.start()
        wait_until(lambda: owned.snapshot().get("a") == frozenset(range(4)), 60, "a owning all")
        b = confluent_consumer(kafka.bootstrap_servers, "coop-group", "coop", owned, "b", **coop)
        b.start()
        try:
            wait_until(lambda: len(owned.snapshot().get("b", ())) == 2, 60, "b owning two")
        finally:
            b.join_checked()  # close(): LeaveGroup
        wait_until(lambda: owned.snapshot().get("a") == frozenset(range(4)), 60, "a owning all again")
        a.join_checked()  # a static member's close sends no LeaveGroup: it stays in the group
        again = confluent_consumer(kafka.bootstrap_servers, "coop-group", "coop", owned, "a2", **static)
        again.start()
        try:
            wait_until(lambda: owned.snapshot().get("a2") == frozenset(range(4)), 60, "a2 owning all")
        finally:
            again.join_checked()
        # a dynamic cooperative group whose only member leaves: it ends Empty
        solo = confluent_consumer(kafka.bootstrap_servers, "solo-group", "coop", owned, "s", **coop)
        solo.start()
        try:
            wait_until(lambda: owned.snapshot().get("s") == frozenset(range(4)), 60, "s owning all")
        finally:
            solo.join_checked()
        wait_until(
            lambda: '"Empty"' in (record / "solo-group" / "result.json").read_text(), 30, "solo group Empty"
        )
    data = json.loads((record / "coop-group" / "result.json").read_text())
    assert data["metrics"]["final_protocol"] == "cooperative-sticky"
    joined = [e for e in data["events"] if e["kind"] == "joined_group"]
    first_a = joined[0]["member_id"]
    b_id = joined[1]["member_id"]
    assert joined[0]["group_instance_id"] == "a-inst" and joined[1]["group_instance_id"] is None
    left = [e for e in data["events"] if e["kind"] == "left_group"]
    assert [(e["member_id"], e["reason"]) for e in left] == [(b_id, "leave_group")]
    b_release = [o for o in data["ownership"] if o["member"] == b_id and o["t_ms"] == left[0]["t_ms"]]
    assert len(b_release) == 1 and b_release[0]["lost"] == [] and len(b_release[0]["revoked"]) == 2
    rejoin = joined[2]
    assert rejoin["group_instance_id"] == "a-inst" and rejoin["replaces"] == first_a
    new_a = rejoin["member_id"]
    assert new_a != first_a
    rec = data["recording"]
    assert new_a in rec["consumers"]
    # from the replacement on, every partition is owned by the new id, none by the old
    after = [(p, m) for p, m, s, e in rec["intervals"] if e > rejoin["t_ms"] or s >= rejoin["t_ms"]]
    assert sorted(p for p, _ in after) == [0, 1, 2, 3] and {m for _, m in after} == {new_a}
    assert all(e <= rejoin["t_ms"] for _, m, _, e in rec["intervals"] if m == first_a)
    solo_data = json.loads((record / "solo-group" / "result.json").read_text())
    assert solo_data["events"][-1]["state"] == "Empty"
    assert solo_data["metrics"]["final_protocol"] == "cooperative-sticky"
    try:
        main(["report", str(record)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    html = (record / "coop-group" / "index.html").read_text()
    assert "left_group (LeaveGroup)" in html and f"replaces {first_a}" in html


def test_a_member_whose_session_expires_is_recorded_as_lost(tmp_path: Path) -> None:
    """A static member's close sends no LeaveGroup: the coordinator removes it when its session
    (6 s) expires, and the recording says so (reason expired, its partitions lost)."""
    record = tmp_path / "rec"
    path = record / "expiry-group" / "result.json"
    with KafkaBroker(topics={"expiry": 2}, record_dir=record) as kafka:
        owned = Owned()
        config = {"group.instance.id": "gone", "session.timeout.ms": 6000}
        member = confluent_consumer(kafka.bootstrap_servers, "expiry-group", "expiry", owned, "m", **config)
        member.start()
        try:
            wait_until(lambda: owned.snapshot().get("m") == frozenset(range(2)), 60, "m owning both")
        finally:
            member.join_checked()
        wait_until(lambda: '"left_group"' in path.read_text(), 30, "the session to expire")
    data = json.loads(path.read_text())
    (left,) = [e for e in data["events"] if e["kind"] == "left_group"]
    assert left["reason"] == "expired"
    (released,) = [
        o for o in data["ownership"] if o["member"] == left["member_id"] and o["t_ms"] == left["t_ms"]
    ]
    assert released["lost"] == ["expiry-0", "expiry-1"] and released["revoked"] == []


def _consumer_protocol_consumer(bootstrap: str, group: str, topic: str, owned: Owned, name: str) -> Runner:
    """A librdkafka consumer of KIP-848's consumer protocol (the broker assigns; no client assignor)."""

    def body(stop: threading.Event) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                consumer.poll(0.2)
                owned.set(name, {tp.partition for tp in consumer.assignment()})
        finally:
            consumer.close()  # leaves the group: a ConsumerGroupHeartbeat of epoch -1

    return Runner(name, body)


@pytest.mark.recording
def test_a_consumer_protocol_group_is_recorded_and_drawn(tmp_path: Path) -> None:
    """`serve --record` records a KIP-848 group (group.protocol=consumer) through the builder
    `kgroup record` uses: epochs, acknowledged ownership under the topic's name, a member that
    leaves revoking (not losing) its partitions, and `kgroup report` draws it."""
    record = tmp_path / "rec"
    with KafkaBroker(
        topics={"kip848": 4},
        record_dir=record,
        group_consumer_heartbeat_interval_ms=500,
        group_consumer_min_heartbeat_interval_ms=500,
    ) as kafka:
        owned = Owned()
        first = _consumer_protocol_consumer(kafka.bootstrap_servers, "kip848-group", "kip848", owned, "one")
        first.start()
        try:
            wait_until(
                lambda: owned.snapshot().get("one") == frozenset(range(4)), 60, "one member owning all"
            )
            second = _consumer_protocol_consumer(
                kafka.bootstrap_servers, "kip848-group", "kip848", owned, "two"
            )
            second.start()
            try:
                wait_until(lambda: len(owned.snapshot().get("two", ())) == 2, 60, "two members sharing")
            finally:
                second.join_checked()
            wait_until(lambda: owned.snapshot().get("one") == frozenset(range(4)), 60, "one owning all again")
        finally:
            first.join_checked()
    data = json.loads((record / "kip848-group" / "result.json").read_text())
    metrics = data["metrics"]
    assert metrics["group_protocol"] == "consumer" and metrics["protocol_type"] == "consumer"
    # no member names a group.remote.assignor: the broker's default assigns, and the report says so
    assert metrics["final_protocol"].startswith("the broker's default")
    assert [(m["client_host"], bool(m["client_id"])) for m in data["members"]] == [("/127.0.0.1", True)] * 2
    assert metrics["members_seen"] == 2 and metrics["rebalances"] >= 3  # join, join, leave
    epochs = [e["generation"] for e in data["events"] if e["kind"] == "group_epoch"]
    assert epochs == sorted(epochs) and len(epochs) == metrics["rebalances"]
    states = [e["state"] for e in data["events"] if e["kind"] == "group_state"]
    assert states.count("Stable") >= 2 and "Reconciling" in states
    # ownership is named by topic (the broker's topic ids resolved), never a bare topic id
    assert data["recording"]["partitions"] == [f"kip848-{p}" for p in range(4)]
    joined = [e["member_id"] for e in data["events"] if e["kind"] == "joined_group"]
    left = [e for e in data["events"] if e["kind"] == "left_group"]
    assert len(joined) == 2 and [e["member_id"] for e in left] == [joined[1], joined[0]]
    assert all(e["reason"] == "leave_group" for e in left)
    second_owned = [o for o in data["ownership"] if o["member"] == joined[1]]
    assert max(len(o["assigned"]) for o in second_owned) == 2
    assert all(o["lost"] == [] for o in data["ownership"])
    assert {p for o in second_owned for p in o["revoked"]} == {p for o in second_owned for p in o["assigned"]}
    try:
        main(["report", str(record)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    html = (record / "kip848-group" / "index.html").read_text()
    assert "Partition owners over time" in html and "<img" in html
    assert "What the rebalances cost" in html and "/127.0.0.1" in html
