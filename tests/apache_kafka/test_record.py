"""``kgroup record`` against Apache Kafka: real clients rebalance, the recording agrees with them.

confluent-kafka consumers join and leave a group (one of them a separate process that is killed:
a crash, found by the session timeout); at every settled point the test notes the time and what
each client holds (its ``on_assign`` / ``on_revoke`` callbacks). Then ``kgroup record`` reads the
cluster's ``__consumer_offsets`` and the recording must say the same: at each noted time, each
partition's owner in the recording is the member whose client held it, the generations list the
members that were in the group, the commits are the clients' commits, and ``kgroup report`` draws it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from tests.apache_kafka.conftest import Target

from kgroup.testing.apache_kafka import ApacheKafka

TIMEOUT_S = 45.0
SETTLED_S = 1.5
PARTITIONS = 6
_SRC = str(Path(__file__).resolve().parents[2] / "src")

_CRASHER = """
import json, sys, time
from confluent_kafka import Consumer
conf = json.loads(sys.argv[1])
owned = set()
consumer = Consumer(conf)
def on_assign(c, parts):
    owned.clear(); owned.update(p.partition for p in parts)
    print(json.dumps({"member": c.memberid(), "owned": sorted(owned)}), flush=True)
def on_revoke(c, parts):
    owned.clear()
consumer.subscribe([sys.argv[2]], on_assign=on_assign, on_revoke=on_revoke)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    consumer.poll(0.1)
"""


class Group:
    """Consumers of one group, polled in turn from this thread; each one's partitions as its callbacks
    say (eager: ``on_assign`` is the whole assignment; the consumer protocol: increments)."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        self.bootstrap, self.group, self.topic, self.protocol = bootstrap, group, topic, protocol
        self.consumers: dict[str, Consumer] = {}
        self.owned: dict[str, set[int]] = {}
        self.crasher: subprocess.Popen[str] | None = None
        self.crasher_seen: dict[str, Any] = {}

    def conf(self, name: str) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": name,
            "enable.auto.commit": False,
            "log_level": 3,
        }
        if self.protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf.update(
                {
                    "partition.assignment.strategy": "range",
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 500,
                }
            )
        return conf

    def add(self, name: str) -> None:
        consumer = Consumer(self.conf(name))
        self.owned[name] = set()
        eager = self.protocol != "consumer"

        def on_assign(c: Any, parts: list[TopicPartition]) -> None:
            if eager:
                self.owned[name] = set()
            self.owned[name] |= {p.partition for p in parts}

        def on_revoke(c: Any, parts: list[TopicPartition]) -> None:
            self.owned[name] -= {p.partition for p in parts}

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        self.consumers[name] = consumer

    def start_crasher(self, name: str) -> None:
        env = dict(os.environ, PYTHONPATH=_SRC)
        self.crasher = subprocess.Popen(
            [sys.executable, "-c", _CRASHER, json.dumps(self.conf(name)), self.topic],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        os.set_blocking(self.crasher.stdout.fileno(), False)  # type: ignore[union-attr]

    def _read_crasher(self) -> None:
        if self.crasher is None or self.crasher.stdout is None:
            return
        while line := self.crasher.stdout.readline():
            self.crasher_seen = json.loads(line)

    def kill_crasher(self) -> None:
        assert self.crasher is not None
        self.crasher.send_signal(signal.SIGKILL)
        self.crasher.wait(10)
        if self.crasher.stdout is not None:
            self.crasher.stdout.close()
        self.crasher = None

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()
        del self.owned[name]

    def member_ids(self) -> dict[str, str]:
        ids = {name: c.memberid() for name, c in self.consumers.items()}
        if self.crasher is not None and self.crasher_seen:
            ids["crasher"] = self.crasher_seen["member"]
        return ids

    def holdings(self) -> dict[str, set[int]]:
        out = {name: set(parts) for name, parts in self.owned.items()}
        if self.crasher is not None:
            out["crasher"] = set(self.crasher_seen.get("owned", ()))
        return out

    def settle(self) -> tuple[int, dict[str, set[str]]]:
        """Poll until every member holds a share, the shares cover the topic once and nothing changed
        for SETTLED_S; then (epoch ms in the middle of that window, member id -> its partitions as
        "topic-p")."""
        deadline = time.monotonic() + TIMEOUT_S
        last: Any = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            for consumer in self.consumers.values():
                consumer.poll(0.05)
            self._read_crasher()
            holdings = self.holdings()
            ids = self.member_ids()
            covered = sorted(p for parts in holdings.values() for p in parts)
            snapshot = (json.dumps({n: sorted(v) for n, v in holdings.items()}), json.dumps(ids))
            good = (
                covered == list(range(PARTITIONS))
                and all(holdings.values())
                and len(ids) == len(holdings)
                and all(ids.values())
            )
            if snapshot != last or not good:
                last, since = snapshot, time.monotonic()
            elif (held_s := time.monotonic() - since) >= SETTLED_S:
                # the middle of the window the clients held this: its ends race the records of the
                # actions around it (the next close's leave lands within a millisecond of now)
                at_ms = int(time.time() * 1000 - held_s * 500)
                return at_ms, {ids[n]: {f"{self.topic}-{p}" for p in parts} for n, parts in holdings.items()}
        raise AssertionError(f"the group did not settle within {TIMEOUT_S:.0f} s: {self.holdings()}")

    def commit(self, name: str, offset: int) -> None:
        consumer = self.consumers[name]
        parts = [TopicPartition(self.topic, p, offset) for p in sorted(self.owned[name])]
        consumer.commit(offsets=parts, asynchronous=False)

    def shutdown(self) -> None:
        for name in list(self.consumers):
            self.close(name)
        if self.crasher is not None:
            self.kill_crasher()


def _kgroup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgroup", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=_SRC),
        check=False,
    )


def _owners_at(document: dict[str, Any], t_ms: int) -> dict[str, set[str]]:
    rec = document["recording"]
    out: dict[str, set[str]] = {}
    for index, member, start, end in rec["intervals"]:
        if start <= t_ms < end:
            out.setdefault(member, set()).add(rec["partitions"][index])
    return out


def _record(bootstrap: str, group: str, out: Path) -> dict[str, Any]:
    done = _kgroup("record", "--bootstrap-servers", bootstrap, "--group", group, "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    document: dict[str, Any] = json.loads(Path(summary["recording"]).read_text())
    assert summary["records"] == document["source"]["records"] > 0
    return document


def _check_snapshots(document: dict[str, Any], snapshots: list[tuple[int, dict[str, set[str]]]]) -> None:
    start = document["source"]["start_epoch_ms"]
    for at_ms, expected in snapshots:
        assert _owners_at(document, at_ms - start) == expected, f"at {at_ms - start} ms"


def test_classic_group_recording_agrees_with_the_clients(target: Target, names: str, tmp_path: Path) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, PARTITIONS)
    members = Group(target.bootstrap_servers, group, topic, "classic")
    snapshots: list[tuple[int, dict[str, set[str]]]] = []
    memberships: list[set[str]] = []
    try:
        members.add("a")
        snapshots.append(members.settle())
        members.commit("a", 5)
        members.add("b")
        snapshots.append(members.settle())
        members.start_crasher("crasher")
        snapshots.append(members.settle())
        crashed = members.member_ids()["crasher"]
        b_partitions = {f"{topic}-{p}" for p in members.owned["b"]}
        members.commit("b", 7)
        members.add("c")
        snapshots.append(members.settle())
        members.close("b")  # a clean leave
        snapshots.append(members.settle())
        members.kill_crasher()  # the crash: removed after its session timeout (6 s)
        snapshots.append(members.settle())
        memberships = [set(owners) for _, owners in snapshots]
    finally:
        members.shutdown()

    document = _record(target.bootstrap_servers, group, tmp_path / "rec")
    _check_snapshots(document, snapshots)
    generations = [set(e["members"]) for e in document["events"] if e["kind"] == "generation"]
    # every settled membership is a generation, in order (a join while another rebalance runs can
    # add one in between, never drop one)
    it = iter(generations)
    assert all(any(g == m for g in it) for m in memberships), (generations, memberships)
    assert document["metrics"]["rebalances"] == len(generations) >= len(memberships)
    left = {e["member_id"] for e in document["events"] if e["kind"] == "left_group"}
    assert crashed in left and set().union(*memberships) <= left  # everyone ended: the group is Empty
    assert document["metrics"]["state"] == "Empty"
    # a committed 5 on every partition, then b 7 on its own
    committed = {p: [offset for _, offset in points] for p, points in document["commits"].items()}
    assert committed == {
        f"{topic}-{p}": [5, 7] if f"{topic}-{p}" in b_partitions else [5] for p in range(PARTITIONS)
    }
    assert document["metrics"]["offset_commits"] == PARTITIONS + len(b_partitions)
    assert document["metrics"]["committed_progress_records"] == (7 - 5) * len(b_partitions)
    # what Kafka's describe shows of each member: its client id and host
    clients = {m["member_id"]: (m["client_id"], m["client_host"]) for m in document["members"]}
    assert clients[crashed] == ("crasher", "/127.0.0.1")
    assert sorted(clients.values()) == sorted((name, "/127.0.0.1") for name in ("a", "b", "c", "crasher"))
    assert document["metrics"]["final_protocol"] == "range"
    # range is eager: every member holds nothing from a join phase's end (the record's
    # currentStateTimestamp) until the generation's assignment is stored; every generation assigns
    # all the partitions, so each later generation adds its sync window on each of them
    start = document["source"]["start_epoch_ms"]
    windows, previous = 0, None
    for event in (e for e in document["events"] if e["kind"] == "generation"):
        if previous is not None:
            joined = min(event["t_ms"], max(previous, event["join_completed_epoch_ms"] - start))
            windows += event["t_ms"] - joined
        previous = event["t_ms"]
    assert document["metrics"]["unowned_partition_ms"] == PARTITIONS * windows
    report = _kgroup("report", str(tmp_path / "rec"))
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "rec" / group / "index.html").read_text()
    assert len(html) > 10_000
    assert "recorded by kgroup record" in html and "kgroup serve --record" not in html
    assert "Unowned partition-time" in html and "Committed-offset progress" in html and "crasher" in html


def test_consumer_protocol_group_recording_agrees_with_the_clients(
    target: Target, names: str, tmp_path: Path
) -> None:
    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, PARTITIONS)
    members = Group(target.bootstrap_servers, group, topic, "consumer")
    snapshots: list[tuple[int, dict[str, set[str]]]] = []
    try:
        members.add("a")
        snapshots.append(members.settle())
        members.add("b")
        snapshots.append(members.settle())
        members.add("c")
        snapshots.append(members.settle())
        members.close("a")
        snapshots.append(members.settle())
    finally:
        members.shutdown()

    document = _record(target.bootstrap_servers, group, tmp_path / "rec")
    _check_snapshots(document, snapshots)
    assert document["metrics"]["group_protocol"] == "consumer"
    assert document["metrics"]["state"] == "Empty"
    # a partition moving between members is revoked first: drawn as "revoking" at its old owner
    assert any(status == "revoking" for _, status, _, _ in document["recording"]["handover_intervals"])
    states = [e["state"] for e in document["events"] if e["kind"] == "group_state"]
    assert states.count("Stable") >= len(snapshots)
    # client id and host as Kafka's describe shows them; no member names a remote assignor
    assert sorted((m["client_id"], m["client_host"]) for m in document["members"]) == [
        (name, "/127.0.0.1") for name in ("a", "b", "c")
    ]
    assert document["metrics"]["final_protocol"].startswith("the broker's default")
    # a moved partition waits for its new owner's next heartbeat after the old one released it
    assert document["metrics"]["unowned_partition_ms"] == sum(document["recording"]["unowned_ms"]) > 0


def _wait_for_generations(path: Path, count: int, until_ms: int = 0) -> dict[str, Any]:
    """The live recording once it has ``count`` generations and reaches ``until_ms`` (epoch ms)."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists():
            document: dict[str, Any] = json.loads(path.read_text())
            reaches = document["source"]["start_epoch_ms"] + document["recording"]["duration_ms"] > until_ms
            if sum(e["kind"] == "generation" for e in document["events"]) >= count and reaches:
                return document
        time.sleep(0.2)
    raise AssertionError(f"the live recording did not reach {count} generations in {TIMEOUT_S:.0f} s")


def test_follow_records_live_until_ctrl_c(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    topic, group = f"rec-{os.getpid()}-follow", f"rec-{os.getpid()}-follow-g"
    apache_kafka.create_topic(topic, PARTITIONS)
    members = Group(apache_kafka.bootstrap_servers, group, topic, "classic")
    out = tmp_path / "live"
    recorder: subprocess.Popen[str] | None = None
    snapshots: list[tuple[int, dict[str, set[str]]]] = []
    try:
        members.add("a")
        snapshots.append(members.settle())
        recorder = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kgroup",
                "record",
                "-b",
                apache_kafka.bootstrap_servers,
                "-g",
                group,
                "-o",
                str(out),
                "--follow",
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=_SRC),
        )
        path = out / group / "result.json"
        _wait_for_generations(path, 1)
        members.add("b")
        snapshots.append(members.settle())
        live = _wait_for_generations(path, 2, snapshots[-1][0])  # rewritten while the group runs
        _check_snapshots(live, snapshots)
        recorder.send_signal(signal.SIGINT)  # Ctrl-C: the recording is finished, exit 0
        stdout, stderr = recorder.communicate(timeout=30)
        assert recorder.returncode == 0, stderr
        assert json.loads(stdout)["recording"] == str(path)
        recorder = None
    finally:
        members.shutdown()
        if recorder is not None:
            recorder.kill()
            recorder.communicate(timeout=10)
    final = json.loads(path.read_text())
    _check_snapshots(final, snapshots)
    assert [set(e["members"]) for e in final["events"] if e["kind"] == "generation"] == [
        set(owners) for _, owners in snapshots
    ]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--group", "g", "--bootstrap-servers", "127.0.0.1:1"], "--bootstrap-servers"),
        (["--group", "g", "--bootstrap-servers", "nohost"], "--bootstrap-servers"),
        (["--group", "g", "--bootstrap-servers", "127.0.0.1:9092", "--since", "yesterday"], "--since"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(args: list[str], field: str, tmp_path: Path) -> None:
    done = _kgroup("record", "--out", str(tmp_path / "o"), "--timeout", "2", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kgroup: error: {field}:"), done.stderr


def test_unknown_group_is_one_line_naming_the_group(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    done = _kgroup(
        "record",
        "--bootstrap-servers",
        apache_kafka.bootstrap_servers,
        "--group",
        f"nobody-{os.getpid()}",
        "--out",
        str(tmp_path / "o"),
    )
    assert done.returncode == 2
    assert done.stderr.startswith("kgroup: error: --group: no record of group")
    assert done.stderr.count("\n") == 1


def test_the_offsets_topic_is_internal_readable_and_refuses_produce(target: Target, names: str) -> None:
    """Once a group commits, ``__consumer_offsets`` is in Metadata as Kafka lists it (internal, 50
    partitions), its group partition holds the commit in Kafka's format, and a client's Produce to it
    is refused with the same error on both brokers."""
    from tests.apache_kafka.wire import Raw, metadata

    from kgroup.broker.internal_topic import record_batch
    from kgroup.group.records.offsets_topic import OffsetCommit, decode_offsets_record

    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, 1)
    consumer = Consumer({"bootstrap.servers": target.bootstrap_servers, "group.id": group, "log_level": 3})
    try:
        deadline = time.monotonic() + 20
        while True:  # Apache Kafka answers NOT_COORDINATOR while it creates the offsets topic
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 42)], asynchronous=False)
                break
            except KafkaException:
                assert time.monotonic() < deadline, "no commit within 20 s"
                time.sleep(0.3)
    finally:
        consumer.close()
    with Raw(target.bootstrap_servers) as raw:
        deadline = time.monotonic() + 10
        while (found := metadata(raw, ["__consumer_offsets"], auto_create=False)["topics"][0])["error_code"]:
            assert time.monotonic() < deadline, found
            time.sleep(0.2)
        assert (found["is_internal"], len(found["partitions"])) == (True, 50)
        answer = raw.call(
            "Produce",
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 10_000,
                "topic_data": [
                    {
                        "name": "__consumer_offsets",
                        "partition_data": [{"index": 0, "records": record_batch([(b"k", b"v")], 0)}],
                    }
                ],
            },
        )
    (entry,) = answer["responses"][0]["partition_responses"]
    assert entry["error_code"] == 17  # INVALID_TOPIC_EXCEPTION: "Cannot append to internal topic"
    from kgroup.group.discovery import coordinator_partition
    from kgroup.model import TopicPartition as KTopicPartition

    reader = Consumer(
        {"bootstrap.servers": target.bootstrap_servers, "group.id": f"{group}-reader", "log_level": 3}
    )
    try:
        partition = coordinator_partition(group, 50)
        reader.assign([TopicPartition("__consumer_offsets", partition, 0)])
        commits = []
        deadline = time.monotonic() + 20
        while not commits and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is None or message.error() is not None:
                continue
            record = decode_offsets_record(message.key(), message.value())
            if getattr(record, "group_id", None) == group:  # a group made by a commit: no GroupMetadata
                assert isinstance(record, OffsetCommit), record
                commits.append(record)
    finally:
        reader.close()
    assert [(c.partition, c.offset) for c in commits] == [(KTopicPartition(topic, 0), 42)]


def test_a_cluster_without_an_offsets_topic_yet_is_one_line(tmp_path: Path) -> None:
    """Before any group has used it there is no ``__consumer_offsets`` (kgroup creates it with the
    coordinator's first record): a one-line error, exit 2."""
    from kgroup.testing import KafkaBroker

    with KafkaBroker(topics={"t": 2}) as broker:
        done = _kgroup("record", "-b", broker.bootstrap_servers, "-g", "g", "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("kgroup: error: --group: the cluster at ")
    assert "has no __consumer_offsets topic yet" in done.stderr


def _group_metadata_records(bootstrap: str, group: str) -> list[Any]:
    """Every GroupMetadata value of ``group`` in its ``__consumer_offsets`` partition, in order."""
    from kgroup.group.discovery import coordinator_partition
    from kgroup.group.records.offsets_topic import GroupMetadata, decode_offsets_record

    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{group}-reader",
            "log_level": 3,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    out: list[Any] = []
    try:
        reader.assign([TopicPartition("__consumer_offsets", coordinator_partition(group, 50), 0)])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    break
                continue
            record = decode_offsets_record(message.key(), message.value())
            if isinstance(record, GroupMetadata) and record.group_id == group:
                out.append(record.value)
    finally:
        reader.close()
    return out


def test_classic_group_metadata_records_are_kafkas(target: Target, names: str) -> None:
    """The GroupMetadata records a classic group leaves in ``__consumer_offsets`` — when, and what they
    hold — are the same on both brokers (member ids normalized to the clients' ids)."""
    from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription

    topic, group = f"{names}-t", f"{names}-g"
    target.create_topic(topic, PARTITIONS)
    members = Group(target.bootstrap_servers, group, topic, "classic")
    ids: dict[str, str] = {}
    try:
        members.add("a")
        members.settle()
        members.add("b")
        members.settle()
        ids = {member: name for name, member in members.member_ids().items()}
        members.close("b")
        members.settle()
    finally:
        members.shutdown()
    values = _group_metadata_records(target.bootstrap_servers, group)

    def shape(v: Any) -> tuple[Any, ...]:
        return (
            v.protocol_type,
            v.generation,
            v.protocol,
            ids.get(v.leader, v.leader),
            v.current_state_timestamp_ms > 0,
            sorted(  # Kafka's HashMap order of the (random) member ids: the same rule, not the same ids
                (
                    ids[m.member_id],
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    decode_subscription(m.subscription).topics,
                    sorted(tp.partition for tp in decode_assignment(m.assignment).partitions),
                )
                for m in v.members
            ),
        )

    host = "/127.0.0.1"
    assert [shape(v) for v in values] == [
        ("", 0, None, None, True, []),  # created
        (
            "consumer",
            1,
            "range",
            "a",
            True,
            [("a", None, "a", host, 300_000, 6000, (topic,), [0, 1, 2, 3, 4, 5])],
        ),
        (
            "consumer",
            2,
            "range",
            "a",
            True,
            [
                ("a", None, "a", host, 300_000, 6000, (topic,), [0, 1, 2]),
                ("b", None, "b", host, 300_000, 6000, (topic,), [3, 4, 5]),
            ],
        ),
        (
            "consumer",
            3,
            "range",
            "a",
            True,
            [("a", None, "a", host, 300_000, 6000, (topic,), [0, 1, 2, 3, 4, 5])],
        ),
        ("consumer", 4, None, None, True, []),  # the last member left: Empty
    ]
