"""Share groups (KIP-932) in recordings (issue 36 item 6) and a transaction's offsets in `kgroup serve
--record` (issue 33).

* the counts of :mod:`kgroup.record.share` follow a real (pure) share partition: acquisitions,
  acknowledgements, a lock timeout, archives at the delivery-count limit;
* `kgroup record` (:class:`GroupHistory`, from ``__consumer_offsets``) follows a share group's records
  as Kafka 4.4 writes them: members, the group epoch, each partition's sharers;
* `kgroup serve --record` of a real share group (two confluent-kafka ShareConsumers): the recorded
  deliveries, redeliveries, releases, acceptances and the archive equal what the consumers saw and
  did, and `kgroup report` draws them;
* `kgroup serve --record` of a transactional producer's ``send_offsets_to_transaction``: a committed
  transaction's offsets are in the recording when it commits, an aborted one's never.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kgroup.group.records.share import (
    ShareCurrentAssignmentValue,
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareMemberMetadataValue,
)
from kgroup.group.records.share_serde import encode_share_group_record
from kgroup.model import TopicId
from kgroup.record import GroupHistory, OffsetsEntry
from kgroup.record.builder import RecordingBuilder
from kgroup.record.share import ACKNOWLEDGED, ACQUIRED, LOCK_TIMEOUT, MEMBER_RELEASED, ShareEvent
from kgroup.share import (
    AcknowledgementBatch,
    FetchedBatch,
    PersistedPartitionState,
    ScheduleLockTimer,
    SharePartition,
    SharePartitionConfig,
)

pytestmark = pytest.mark.recording


def _event(kind: str, member: str, *, acquired: Any = (), acks: Any = (), write: Any = None) -> ShareEvent:
    return ShareEvent(
        0, "g", "t", 0, kind, member, tuple(acquired), tuple(acks), () if write is None else write.batches
    )


def test_counts_follow_a_share_partition() -> None:
    """Ten records: 5 accepted, one released, one rejected, three left to their lock; then the
    released and timed-out ones come again (delivery count 2 = the limit) and are released / time
    out again: archived."""
    sp = SharePartition("g", "t", 0, SharePartitionConfig(max_delivery_count=2, record_lock_duration_ms=1000))
    assert sp.initialize(PersistedPartitionState(), 0) is None
    built = RecordingBuilder("g")
    log = [FetchedBatch(0, 9)]

    first = sp.acquire("m1", 0, sp.next_fetch_offset(), log, max_fetch_records=100)
    built.share_event(0, _event(ACQUIRED, "m1", acquired=first.acquired))
    acks = [
        AcknowledgementBatch(0, 4, (1,)),  # ACCEPT
        AcknowledgementBatch(5, 5, (2,)),  # RELEASE
        AcknowledgementBatch(6, 6, (3,)),  # REJECT
    ]
    acked = sp.acknowledge("m1", 10, acks)
    assert acked.error is None
    built.share_event(10, _event(ACKNOWLEDGED, "m1", acks=acks, write=acked.write))
    for key, deadline in sorted(sp.locks().items(), key=lambda item: item[0].lock_id):  # 7..9 come back
        timed_out = sp.on_lock_timeout(deadline, key)
        built.share_event(1000, _event(LOCK_TIMEOUT, "", write=timed_out.write))

    locks: list[ScheduleLockTimer] = []
    again_acquired = []
    for _ in range(4):  # one acquisition per run of available records
        second = sp.acquire("m2", 1100, sp.next_fetch_offset(), log, max_fetch_records=100)
        if not second.acquired:
            break
        built.share_event(1100, _event(ACQUIRED, "m2", acquired=second.acquired))
        again_acquired += [(a.first_offset, a.last_offset, a.delivery_count) for a in second.acquired]
        locks += [e for e in second.effects if isinstance(e, ScheduleLockTimer)]
    assert sorted(again_acquired) == [(5, 5, 2), (7, 9, 2)]
    again = [AcknowledgementBatch(5, 5, (2,))]  # released at the limit: archived
    acked = sp.acknowledge("m2", 1200, again)
    assert acked.error is None
    built.share_event(1200, _event(ACKNOWLEDGED, "m2", acks=again, write=acked.write))
    assert locks
    for key, deadline in sorted(sp.locks().items(), key=lambda item: item[0].lock_id):
        result = sp.on_lock_timeout(deadline, key)
        built.share_event(2100, _event(LOCK_TIMEOUT, "", write=result.write))

    # two more records; m3 holds them when its share session closes: they go back (count 1 < limit)
    more = sp.acquire("m3", 3000, sp.next_fetch_offset(), [*log, FetchedBatch(10, 11)], max_fetch_records=100)
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in more.acquired] == [(10, 11, 1)]
    built.share_event(3000, _event(ACQUIRED, "m3", acquired=more.acquired))
    gone = sp.release_acquired_records("m3")
    built.share_event(3100, _event(MEMBER_RELEASED, "m3", write=gone.write))

    assert built.share is not None
    document = built.share.document()
    assert document["totals"] == {
        "deliveries": 16,
        "redeliveries": 4,
        "accepted": 5,
        "released": 2,
        "rejected": 1,
        "lock_timeouts": 6,
        "released_on_leave": 2,
        "archived": 4,
    }
    series = document["series"]
    assert series["t_ms"] == [0, 1000, 2000, 3000]
    assert series["deliveries"] == [10, 4, 0, 2] and series["archived"] == [0, 1, 3, 0]
    assert document["partitions"]["t-0"]["series"]["totals"] == document["totals"]


def test_kgroup_record_follows_a_share_groups_records() -> None:
    """A share group's records as Kafka 4.4 writes them to __consumer_offsets: two members join, both
    share the topic's two partitions, one leaves; the recording has the members over time, each
    partition's sharers and the group epochs."""
    topic = TopicId.from_int(0x1234)
    records: list[Any] = []

    def member(member_id: str, client: str) -> None:
        records.append(
            ShareGroupMemberMetadata(
                "sg", member_id, ShareMemberMetadataValue(None, client, "/10.0.0.1", ("t",))
            )
        )

    def assigned(member_id: str, epoch: int, partitions: tuple[int, ...]) -> None:
        value = ShareCurrentAssignmentValue(epoch, epoch - 1, 0, {topic: partitions})
        records.append(ShareGroupCurrentMemberAssignment("sg", member_id, value))

    member("a", "one")
    records.append(ShareGroupMetadata("sg", (1, 0)))
    assigned("a", 1, (0, 1))
    member("b", "two")
    records.append(ShareGroupMetadata("sg", (2, 0)))
    assigned("a", 2, (0, 1))
    assigned("b", 2, (0, 1))
    records.append(ShareGroupMemberMetadata("sg", "a", None))  # a leaves
    records.append(ShareGroupMetadata("sg", (3, 0)))
    history = GroupHistory("sg", topic_names={topic: "t"})
    for offset, record in enumerate(records):
        key, value = encode_share_group_record(record)
        assert history.add(OffsetsEntry(offset, 1_000 + 100 * offset, key, value))
    # another group's record is not this one's
    key, value = encode_share_group_record(ShareGroupMetadata("other", (1, 0)))
    assert not history.add(OffsetsEntry(99, 5_000, key, value))
    document = history.document()
    assert document["metrics"]["group_protocol"] == "share"
    assert document["metrics"]["rebalances"] == 3
    assert document["metrics"]["generation"] == 3
    share = document["share"]
    assert share["members_over_time"] == [[0, 1], [300, 2], [700, 1]]
    assert share["partitions"]["t-0"]["sharers"] == [[200, ["a"]], [600, ["a", "b"]], [700, ["b"]]]
    assert share["partitions"]["t-1"]["sharers"] == share["partitions"]["t-0"]["sharers"]
    assert share["totals"]["deliveries"] == 0  # not in __consumer_offsets
    assert sorted((m["member_id"], m["client_id"], m["left_ms"]) for m in document["members"]) == [
        ("a", "one", 700),
        ("b", "two", None),
    ]
    assert document["recording"]["group_type"] == "share"
    assert document["recording"]["partitions"] == ["t-0", "t-1"]


class _Sharer:
    """A confluent-kafka ShareConsumer in a thread: RELEASEs the record ``release`` every time it gets
    it, ACCEPTs every other, ``commit_sync`` after each poll; keeps what it saw and did."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, release: tuple[int, int], client_id: str = "rdkafka"
    ) -> None:
        from confluent_kafka import ShareConsumer

        self.consumer = ShareConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": client_id,
                "share.acknowledgement.mode": "explicit",
            }
        )
        self.consumer.subscribe([topic])
        self.delivered: list[tuple[int, int, int]] = []  # partition, offset, delivery count
        self.accepted: list[tuple[int, int]] = []
        self.released: list[tuple[int, int]] = []
        self.errors: list[str] = []
        self._release = release
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from confluent_kafka import AcknowledgeType

        while not self._stop.is_set():
            try:
                messages = self.consumer.poll(0.2)
                if not len(messages):
                    continue
                done: list[tuple[str, tuple[int, int]]] = []
                seen = []
                for m in messages:
                    if m.error() is not None:
                        self.errors.append(str(m.error()))
                        continue
                    where = (m.partition(), m.offset())
                    seen.append((*where, int(m.delivery_count() or -1)))
                    kind = "released" if where == self._release else "accepted"
                    ack = AcknowledgeType.RELEASE if kind == "released" else AcknowledgeType.ACCEPT
                    self.consumer.acknowledge(m, ack)
                    done.append((kind, where))
                self.consumer.commit_sync()
                with self._lock:
                    self.delivered.extend(seen)
                    for kind, where in done:
                        getattr(self, kind).append(where)
            except Exception as exc:  # kept: the test reports it
                self.errors.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.2)

    def snapshot(self) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
        with self._lock:
            return list(self.delivered), list(self.accepted), list(self.released)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.consumer.close()


def _wait(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def test_serve_record_draws_a_real_share_group(tmp_path: Path) -> None:
    """Two confluent-kafka share consumers read 20 records of two partitions; the record at partition
    0, offset 0 is released each time it comes (delivery count limit 2): delivered, released,
    delivered again (a redelivery), released again and archived. The recording's counts are what the
    consumers saw and did; `kgroup report` draws them."""
    from confluent_kafka import Producer

    from kgroup.cli import main
    from kgroup.cli.report import write_recording_report
    from kgroup.testing import KafkaBroker

    record = tmp_path / "rec"
    special = (0, 0)
    with KafkaBroker(
        topics={"sh": 2},
        record_dir=record,
        share_auto_offset_reset="earliest",
        group_share_delivery_count_limit=2,
    ) as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        for n in range(20):
            producer.produce("sh", value=b"v%d" % n, partition=n % 2)
        assert producer.flush(10) == 0
        sharers = [_Sharer(kafka.bootstrap_servers, "sg", "sh", special) for _ in range(2)]
        try:

            def finished() -> bool:
                snaps = [s.snapshot() for s in sharers]
                accepted = {w for _, a, _ in snaps for w in a}
                released = [w for _, _, r in snaps for w in r]
                return len(accepted) == 19 and len(released) == 2

            _wait(finished, 90, "19 records accepted and the special one released twice")
            time.sleep(0.5)  # nothing more comes (the archived record is not delivered again)
        finally:
            for s in sharers:
                s.close()
        # `kgroup record` reads the same group from kgroup serve's __consumer_offsets
        with pytest.raises(SystemExit) as done:
            main(
                ["record", "-b", kafka.bootstrap_servers, "-g", "sg", "-o", str(tmp_path / "read"), "--json"]
            )
        assert done.value.code == 0
    assert [e for s in sharers for e in s.errors] == []
    delivered = [d for s in sharers for d in s.delivered]
    accepted = [a for s in sharers for a in s.accepted]
    released = [r for s in sharers for r in s.released]
    assert sorted(d[2] for d in delivered if d[:2] == special) == [1, 2]
    path = record / "sg" / "result.json"
    data = json.loads(path.read_text())
    totals = data["share"]["totals"]
    assert totals["deliveries"] == len(delivered) == 21
    assert totals["redeliveries"] == sum(1 for d in delivered if d[2] > 1) == 1
    assert totals["accepted"] == len(accepted) == 19
    assert totals["released"] == len(released) == 2
    assert totals["archived"] == 1
    assert totals["rejected"] == totals["lock_timeouts"] == 0
    assert data["metrics"]["group_protocol"] == "share"
    assert data["metrics"]["share_deliveries"] == 21
    per_partition = data["share"]["partitions"]
    assert set(per_partition) == {"sh-0", "sh-1"}
    assert per_partition["sh-0"]["series"]["totals"]["deliveries"] == 11
    assert per_partition["sh-1"]["series"]["totals"]["deliveries"] == 10
    assert sum(per_partition["sh-0"]["series"]["deliveries"]) == 11  # the time series add up
    members = [n for _, n in data["share"]["members_over_time"]]
    assert max(members) == 2 and members[-1] == 0  # both joined, both left at close
    member_ids = {m["member_id"] for m in data["members"]}
    assert len(member_ids) == 2
    for info in per_partition.values():  # sharers are members, and someone shared each partition
        assert info["sharers"] and any(ms for _, ms in info["sharers"])
        assert {m for _, ms in info["sharers"] for m in ms} <= member_ids
    assert info["sharers"][-1][1] == []
    read = json.loads((tmp_path / "read" / "sg" / "result.json").read_text())
    assert read["metrics"]["group_protocol"] == "share"
    assert [n for _, n in read["share"]["members_over_time"]] == members
    assert {m["member_id"] for m in read["members"]} == member_ids
    for p, info in per_partition.items():  # the same sharers in the same order (the times are the records')
        assert [ms for _, ms in read["share"]["partitions"][p]["sharers"]] == [
            ms for _, ms in info["sharers"]
        ]
    assert read["share"]["totals"]["deliveries"] == 0  # not in __consumer_offsets
    page = write_recording_report(path)
    html = page.read_text()
    for title in (
        "What the share partitions delivered",
        "Members and sharers over time",
        "Deliveries, redeliveries and archives over time",
    ):
        assert title in html
    assert 'id="share-sharers-chart"' in html and 'id="share-deliveries-chart"' in html
    assert "archived at the limit" in html
    assert not (page.parent / "timeline.html").exists()  # no owner timeline for a share group


def test_serve_record_follows_a_transactions_offsets(tmp_path: Path) -> None:
    """send_offsets_to_transaction in a committed transaction, then in an aborted one: the recording
    has the committed offset (when the transaction committed), never the aborted one's."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    from kgroup.testing import KafkaBroker

    record = tmp_path / "rec"
    path = record / "txg" / "result.json"
    with KafkaBroker(topics={"tx": 1, "out": 1}, record_dir=record) as kafka:
        bootstrap = kafka.bootstrap_servers
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txg", "enable.auto.commit": False})
        assigned = threading.Event()
        consumer.subscribe(["tx"], on_assign=lambda c, ps: assigned.set())
        try:
            deadline = time.monotonic() + 60
            while not assigned.is_set() and time.monotonic() < deadline:
                consumer.poll(0.1)
            assert assigned.is_set(), "the consumer was never assigned"
            producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "txr"})
            producer.init_transactions(30)
            producer.begin_transaction()
            producer.produce("out", b"a")
            producer.send_offsets_to_transaction(
                [TopicPartition("tx", 0, 5)], consumer.consumer_group_metadata(), 30
            )
            pending = json.loads(path.read_text())
            assert "tx-0" not in pending["commits"]  # pending: not committed yet
            producer.commit_transaction(30)
            _wait(
                lambda: "tx-0" in json.loads(path.read_text())["commits"], 30, "the committed offset recorded"
            )
            producer.begin_transaction()
            producer.produce("out", b"b")
            producer.send_offsets_to_transaction(
                [TopicPartition("tx", 0, 9)], consumer.consumer_group_metadata(), 30
            )
            producer.abort_transaction(30)
            # a plain commit after the abort: once it is recorded, the abort's end is too
            consumer.commit(offsets=[TopicPartition("tx", 0, 7)], asynchronous=False)
            _wait(
                lambda: [o for _, o in json.loads(path.read_text())["commits"]["tx-0"]][-1:] == [7],
                30,
                "the plain commit recorded",
            )
        finally:
            consumer.close()
    offsets = [o for _, o in json.loads(path.read_text())["commits"]["tx-0"]]
    assert offsets == [5, 7]


def test_kgroup_record_reads_a_share_group_from_apache_kafka(apache_kafka: Any, tmp_path: Path) -> None:
    """Two confluent-kafka share consumers read 10 records on Apache Kafka 4.4.0 and close; `kgroup
    record` reads the group's records from Apache Kafka's __consumer_offsets: both members with their
    client ids, joined then left, each partition shared by members of the group, the group epochs."""
    from confluent_kafka import Producer
    from tests.apache_kafka.wire import API, Raw, create_topic

    from kgroup.cli import main

    API.setdefault("IncrementalAlterConfigs", 44)
    bootstrap = apache_kafka.bootstrap_servers
    group, topic = f"rec-share-{time.monotonic_ns()}", f"rec-share-t-{time.monotonic_ns()}"
    with Raw(bootstrap) as raw:
        create_topic(raw, topic, 2)
        answer = raw.call(
            "IncrementalAlterConfigs",
            1,
            {
                "resources": [
                    {
                        "resource_type": 32,  # GROUP
                        "resource_name": group,
                        "configs": [
                            {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
        assert [r["error_code"] for r in answer["responses"]] == [0], answer
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(10):
        producer.produce(topic, value=b"v%d" % n, partition=n % 2)
    assert producer.flush(10) == 0
    sharers = [_Sharer(bootstrap, group, topic, (-1, -1), client_id=f"c{i}") for i in range(2)]
    try:
        _wait(lambda: len({w for s in sharers for w in s.snapshot()[1]}) == 10, 90, "10 records accepted")
    finally:
        for s in sharers:
            s.close()
    assert [e for s in sharers for e in s.errors] == []
    out = tmp_path / "read"
    # the members' leaving is written when their last heartbeat (epoch -1) is handled: read until then
    deadline = time.monotonic() + 30
    while True:
        with pytest.raises(SystemExit) as done:
            main(["record", "-b", bootstrap, "-g", group, "-o", str(out), "--json"])
        assert done.value.code == 0
        data = json.loads((out / group / "result.json").read_text())
        members = [n for _, n in data["share"]["members_over_time"]]
        if (members and members[-1] == 0) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert data["metrics"]["group_protocol"] == "share"
    assert max(members) == 2 and members[-1] == 0
    assert sorted(m["client_id"] for m in data["members"]) == ["c0", "c1"]
    assert all(m["left_ms"] is not None for m in data["members"])
    assert data["metrics"]["rebalances"] >= 2 and data["metrics"]["generation"] >= 2
    member_ids = {m["member_id"] for m in data["members"]}
    partitions = data["share"]["partitions"]
    assert set(partitions) == {f"{topic}-0", f"{topic}-1"}
    for info in partitions.values():
        assert any(ms for _, ms in info["sharers"]) and info["sharers"][-1][1] == []
        assert {m for _, ms in info["sharers"] for m in ms} <= member_ids
