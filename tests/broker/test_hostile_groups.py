"""Hostile group requests (issue 17): nothing is applied that cannot be persisted, and the answers are
Apache Kafka 4.4's (each compared by hand against a Kafka 4.4 broker, see docs/broker.md).

* an OffsetCommit whose group id is longer than 0x7fff bytes cannot be parsed by Kafka, which closes
  the connection; so does kgroup, before the coordinator sees it (it used to apply the commit in
  memory, fail to encode its record, and lose it at restart);
* a JoinGroup whose new member id (client id or instance id + "-" + UUID) cannot fit a record's
  int16 string is answered UNKNOWN_SERVER_ERROR with an empty member id, and no group is made;
* a commit whose offset records exceed the offsets topic's ``max.message.bytes`` (Kafka's coordinator
  batch) is answered UNKNOWN_SERVER_ERROR for every partition and nothing is committed: 15,315 offsets
  of topic "t" for a 6-character group fit, 15,316 do not, on Kafka 4.4 and on kgroup;
* partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION and never reach the coordinator;
* a record that cannot be encoded even so (a request from inside the process) is rolled back before
  anything else runs, and answered UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode as WireError
from tests.broker.rawclient import RawClient

from kgroup.group.records.serde import offset_commit_batch_bytes
from kgroup.messages import Envelope, OffsetCommitPartition, OffsetCommitRequest, OffsetCommitResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, decode_response, encode_request, request_class, response_class


def _commit(group_id: str, offsets: list[tuple[str, int, int]], version: int = 8) -> Any:
    return build(
        request_class(8, version),
        {
            "group_id": group_id,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": partition,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": "",
                        }
                    ],
                }
                for topic, partition, offset in offsets
            ],
        },
    )


def _codes(answer: Any) -> list[tuple[str, int, int]]:
    return [(t.name, int(p.partition_index), int(p.error_code)) for t in answer.topics for p in t.partitions]


def _fetched(client: RawClient, group_id: str) -> list[tuple[str, int, int]]:
    request = build(request_class(9, 8), {"groups": [{"group_id": group_id, "topics": None}]})
    answer = client.request(request)
    return [
        (t.name, int(p.partition_index), int(p.committed_offset))
        for g in answer.groups
        for t in g.topics
        for p in t.partitions
    ]


def test_a_group_id_longer_than_kafka_reads_closes_the_connection_and_commits_nothing(tmp_path: Path) -> None:
    with KafkaBroker(topics={"t": 1}, data_dir=tmp_path) as kafka:
        with RawClient(kafka.bootstrap_servers, timeout_s=10) as client:
            client.send_frame(encode_request(_commit("g" * 100_000, [("t", 0, 5)]), 1))
            assert client.is_closed_by_peer()
        assert kafka.group("g" * 100_000) is None  # nothing was applied in memory
        with RawClient(kafka.bootstrap_servers) as client:
            longest = "h" * 0x7FFF  # the longest group id Kafka reads: committed and kept
            assert _codes(client.request(_commit(longest, [("t", 0, 7)]))) == [("t", 0, 0)]
    with KafkaBroker(data_dir=tmp_path) as kafka, RawClient(kafka.bootstrap_servers) as client:
        assert _fetched(client, longest) == [("t", 0, 7)]
        assert kafka.group("g" * 100_000) is None


def _join(client: RawClient, client_id: str, instance: str | None = None) -> Any:
    request = build(
        request_class(11, 9),
        {
            "group_id": "jg",
            "session_timeout": 10_000,
            "rebalance_timeout": 10_000,
            "member_id": "",
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"x"}],
            "reason": None,
        },
    )
    client.send_frame(encode_request(request, 3, client_id=client_id))
    _, answer = decode_response(client.read_frame(), response_class(11, 9))
    return answer


def test_a_member_id_too_long_for_a_record_is_refused_as_kafka_does(tmp_path: Path) -> None:
    with KafkaBroker(data_dir=tmp_path) as kafka, RawClient(kafka.bootstrap_servers) as client:
        for client_id, instance in (("c" * 0x7FFF, None), ("c", "i" * 0x7FFF)):
            answer = _join(client, client_id, instance)
            assert (answer.error_code, answer.member_id) == (WireError.unknown_server_error, "")
        assert kafka.group("jg") is None
        # one byte shorter fits a record: the join proceeds (MEMBER_ID_REQUIRED, then a member id)
        answer = _join(client, "c" * (0x7FFF - 37))
        assert answer.error_code == WireError.member_id_required
        assert len(answer.member_id.encode()) == 0x7FFF


def test_a_commit_larger_than_the_coordinator_batch_is_refused_whole() -> None:
    # The same bisection as against Kafka 4.4: one partition committed N times in one request
    assert offset_commit_batch_bytes("x15315", [("t", "")] * 15_315) == 1_048_540
    assert offset_commit_batch_bytes("x15316", [("t", "")] * 15_316) == 1_048_609
    with KafkaBroker(topics={"t": 1}) as kafka, RawClient(kafka.bootstrap_servers, timeout_s=60) as client:
        for count, expected in ((15_315, 0), (15_316, -1)):
            group = f"x{count:05d}"
            answer = client.request(_commit(group, [("t", 0, i) for i in range(count)]))
            codes = _codes(answer)
            assert len(codes) == count
            assert {code for _, _, code in codes} == {expected}
            assert _fetched(client, group) == ([("t", 0, count - 1)] if expected == 0 else [])
        assert kafka.group("x15316") is None


def test_partitions_of_unknown_topics_are_answered_without_the_coordinator() -> None:
    with KafkaBroker(topics={"t": 1}, auto_create_topics=False) as kafka:
        with RawClient(kafka.bootstrap_servers) as client:
            answer = client.request(_commit("u", [("nosuch", 0, 1), ("t", 0, 2), ("t", 1, 3)]))
            # KafkaApis' layout: the refused partitions collected by topic, the coordinator's answer
            # for t-0 merged into t's entry after t-1's refusal (test_diff_commit_layout.py)
            assert _codes(answer) == [("nosuch", 0, 3), ("t", 1, 3), ("t", 0, 0)]
            assert _fetched(client, "u") == [("t", 0, 2)]
            answer = client.request(_commit("only-unknown", [("nosuch", 0, 1)]))
            assert _codes(answer) == [("nosuch", 0, 3)]
        assert kafka.group("only-unknown") is None  # Kafka does not ask its coordinator either


def test_a_record_that_cannot_be_encoded_is_rolled_back_before_anything_sees_it(tmp_path: Path) -> None:
    """From inside the process (the wire refuses such strings), a topic name of 40,000 bytes."""
    with KafkaBroker(data_dir=tmp_path) as kafka:
        coordinators = kafka.broker.coordinators
        body = OffsetCommitRequest(
            group_id="inside",
            generation_id=-1,
            member_id="",
            offsets=(OffsetCommitPartition(TopicPartition("t" * 40_000, 0), 9, "", -1),),
        )

        async def commit() -> Any:
            return await coordinators.call(0, Envelope("test", 1, body, "c", "/127.0.0.1", 8))

        answer = kafka.run_in_loop(commit())
        assert isinstance(answer, OffsetCommitResponse)
        assert [code for _, code in answer.results] == [ErrorCode.UNKNOWN_SERVER_ERROR]
        assert kafka.group("inside") is None  # rolled back: not even the group the commit made
        assert kafka.run_in_loop(coordinators.inspect(lambda host: list(host.coordinator_log.replay()))) == []
    with KafkaBroker(data_dir=tmp_path) as kafka:
        assert kafka.group("inside") is None


def _failing_after_applying(original: Any) -> Any:
    """A handler that does its work — records applied to the coordinator's memory — then fails, as
    a bug would: the coordinator is ahead of its log."""

    def handler(txn: Any, groups: Any, envelope: Any, body: Any) -> None:
        original(txn, groups, envelope, body)
        assert txn.records, "the failing handler must have applied records to be a rollback test"
        raise RuntimeError("a bug in a handler, after it applied records")

    return handler


def test_a_coordinator_failure_after_applying_records_is_undone_and_answered(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Issue 35, item 7: any exception rolls the coordinator back to its log (it rolled back only on
    PeerError, and left a waiter forever otherwise), the request is answered UNKNOWN_SERVER_ERROR as
    Kafka answers an unexpected error, and the broker goes on serving — here the very next commit."""
    from kgroup.group.classic import kind as classic_kind
    from kgroup.messages import OffsetCommitRequest as TypedCommit

    handlers = dict(classic_kind.HANDLERS)
    with KafkaBroker(topics={"t": 1}, data_dir=tmp_path) as kafka:
        with RawClient(kafka.bootstrap_servers) as client:
            assert _codes(client.request(_commit("before", [("t", 0, 5)]))) == [("t", 0, 0)]
            monkeypatch.setitem(
                classic_kind.HANDLERS, TypedCommit, _failing_after_applying(handlers[TypedCommit])
            )
            failed = client.request(_commit("broken", [("t", 0, 7)]))
            assert _codes(failed) == [("t", 0, int(ErrorCode.UNKNOWN_SERVER_ERROR))]
            assert kafka.group("broken") is None  # undone: not even the group the commit made
            monkeypatch.setitem(classic_kind.HANDLERS, TypedCommit, handlers[TypedCommit])
            assert _codes(client.request(_commit("after", [("t", 0, 9)]))) == [("t", 0, 0)]
            assert _fetched(client, "before") == [("t", 0, 5)]
        rollbacks = kafka.run_in_loop(kafka.broker.coordinators.inspect(lambda host: host.rollbacks))
        assert rollbacks == 1
    with KafkaBroker(data_dir=tmp_path) as kafka:  # and the log agrees after a restart
        assert kafka.group("broken") is None
        assert [o.offset for _, o in kafka.group("after").offsets] == [9]


def test_a_coordinator_timer_that_fails_is_undone_and_tried_again_later(monkeypatch: Any) -> None:
    """A timer whose work fails (a bug) is undone by replaying the log and fires again after a pause
    (not in a loop: the undone timer is armed again); once the work succeeds the member expires."""
    import itertools
    import time

    from tests.apache_kafka.wire import Raw, join, sync

    from kgroup.group.classic import kind as classic_kind

    original = classic_kind.expire_heartbeat
    calls: list[float] = []

    def failing(txn: Any, group: Any, member_id: str) -> None:
        calls.append(time.monotonic())
        original(txn, group, member_id)
        raise RuntimeError("a bug in the session expiry, after it removed the member")

    with KafkaBroker(group_min_session_timeout_ms=500) as kafka, Raw(kafka.bootstrap_servers) as raw:
        member = join(raw, "tg", session_timeout_ms=500)["member_id"]
        joined = join(raw, "tg", member, session_timeout_ms=500)
        assert sync(raw, "tg", joined["generation_id"], member)["error_code"] == 0
        monkeypatch.setattr(classic_kind, "expire_heartbeat", failing)
        deadline = time.monotonic() + 30
        while len(calls) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(calls) >= 3
        assert [m.member_id for m in kafka.group("tg").members] == [member]  # every expiry undone
        assert all(b - a >= 0.4 for a, b in itertools.pairwise(calls))  # paused between tries
        monkeypatch.setattr(classic_kind, "expire_heartbeat", original)
        while kafka.group("tg").members and time.monotonic() < deadline:
            time.sleep(0.1)
        assert kafka.group("tg").members == ()
