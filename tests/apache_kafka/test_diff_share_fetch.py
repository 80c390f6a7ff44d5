"""The differential suite, share partitions (KIP-932): raw ShareFetch / ShareAcknowledge requests
against kgroup's broker and Apache Kafka 4.4.0 (the ``target`` fixture; the ``[apache]`` run proves the
expected values are Kafka's).

Compared as observed: the whole-request errors of the share sessions (no session, a wrong epoch,
acknowledgements in an opening request, a bad group or member id), the per-partition errors (an
unknown topic id, a malformed acknowledgement batch, acknowledging what the member does not hold:
``INVALID_RECORD_STATE`` with Kafka's message), and one member's records: acquired with delivery count
1, released, acquired again with delivery count 2, accepted through a piggy-backed acknowledgement.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.test_diff_share_group import _heartbeat, _until_assigned
from tests.apache_kafka.wire import API, Raw, create_topic, find_coordinator, metadata

from kgroup.testing import KafkaBroker

pytestmark = pytest.mark.slow

NONE = 0
INVALID_REQUEST = 42
UNKNOWN_TOPIC_ID = 100
INVALID_RECORD_STATE = 121
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
ACCEPT, RELEASE, RENEW = 1, 2, 4
API.setdefault("IncrementalAlterConfigs", 44)


def _fetch(raw: Raw, version: int = 1, **fields: Any) -> Any:
    body: dict[str, Any] = {
        "group_id": "",
        "member_id": "",
        "share_session_epoch": 0,
        "max_wait": 100,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 500,
        "batch_size": 500,
        "topics": [],
        "forgotten_topics_data": [],
    }
    body.update(fields)
    return raw.call("ShareFetch", version, body)


def _acknowledge(raw: Raw, **fields: Any) -> Any:
    body: dict[str, Any] = {"group_id": "", "member_id": "", "share_session_epoch": 1, "topics": []}
    body.update(fields)
    return raw.call("ShareAcknowledge", 1, body)


def _topic_id(raw: Raw, topic: str) -> uuid.UUID:
    answer = metadata(raw, [topic], auto_create=False)
    return uuid.UUID(str(answer["topics"][0]["topic_id"]))


def _part(index: int, *batches: tuple[int, int, int]) -> dict[str, Any]:
    return {
        "partition_index": index,
        "acknowledgement_batches": [
            {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in batches
        ],
    }


def _seen(answer: Any) -> Any:
    """What a ShareFetch / ShareAcknowledge answer says, without what differs by broker (throttle,
    endpoints, the records' bytes: their offsets are in ``acquired_records``)."""
    out: dict[str, Any] = {"error_code": answer["error_code"]}
    if "acquisition_lock_timeout" in answer:
        out["lock_timeout"] = answer["acquisition_lock_timeout"]
    parts = []
    for topic in answer["responses"]:
        for p in topic["partitions"]:
            entry = {k: v for k, v in p.items() if k not in ("records", "current_leader")}
            entry["has_records"] = bool(p.get("records"))
            parts.append(entry)
    out["partitions"] = sorted(parts, key=lambda e: e["partition_index"])
    return out


def test_share_session_errors(target: Target, names: str) -> None:
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    member = str(uuid.uuid4())
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    acking = [{"topic_id": topic_id, "partitions": [_part(0, (0, 0, ACCEPT))]}]
    with Raw(target.bootstrap_servers) as raw:
        seen = {
            "null group id": _fetch(raw, group_id=None, member_id=member, topics=ask),
            "37-character member id": _fetch(raw, group_id=group, member_id="m" * 37, topics=ask),
            "empty member id": _fetch(raw, group_id=group, topics=ask),
            "no session, epoch 3": _fetch(raw, group_id=group, member_id=member, share_session_epoch=3),
            "no session, epoch -1": _fetch(raw, group_id=group, member_id=member, share_session_epoch=-1),
            "opening with acknowledgements": _fetch(raw, group_id=group, member_id=member, topics=acking),
            "acknowledge at epoch 0": _acknowledge(
                raw, group_id=group, member_id=member, share_session_epoch=0, topics=acking
            ),
            "acknowledge, no session": _acknowledge(raw, group_id=group, member_id=member, topics=acking),
        }
        opened = _fetch(raw, group_id=group, member_id=member, topics=ask)
        seen["wrong epoch"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=5)
        seen["acknowledge, wrong epoch"] = _acknowledge(
            raw, group_id=group, member_id=member, share_session_epoch=7, topics=acking
        )
        seen["next epoch"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=1)
        seen["closing"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=-1)
        seen["closed, epoch 2"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=2)
    codes = {what: answer["error_code"] for what, answer in seen.items()}
    assert codes == {
        "null group id": INVALID_REQUEST,
        "37-character member id": INVALID_REQUEST,
        "empty member id": INVALID_REQUEST,
        "no session, epoch 3": SHARE_SESSION_NOT_FOUND,
        "no session, epoch -1": SHARE_SESSION_NOT_FOUND,
        "opening with acknowledgements": INVALID_REQUEST,
        "acknowledge at epoch 0": INVALID_SHARE_SESSION_EPOCH,
        "acknowledge, no session": SHARE_SESSION_NOT_FOUND,
        "wrong epoch": INVALID_SHARE_SESSION_EPOCH,
        "acknowledge, wrong epoch": INVALID_SHARE_SESSION_EPOCH,
        "next epoch": NONE,
        "closing": NONE,
        "closed, epoch 2": SHARE_SESSION_NOT_FOUND,
    }, target.kind
    errors = [answer for answer in seen.values() if answer["error_code"] != NONE]
    # Kafka's getErrorResponse: the code alone, no message, no lock timeout, no partitions
    assert all(a["error_message"] is None and a["responses"] == [] for a in errors), errors
    assert opened["error_code"] == NONE and opened["acquisition_lock_timeout"] == 30000
    # a topic id the broker does not know, in an opening fetch: answered for its partition
    with Raw(target.bootstrap_servers) as raw:
        unknown = _fetch(
            raw,
            group_id=group,
            member_id=str(uuid.uuid4()),
            topics=[{"topic_id": uuid.uuid4(), "partitions": [_part(0), _part(1)]}],
        )
    assert _codes(_seen(unknown)) == [(UNKNOWN_TOPIC_ID, None), (UNKNOWN_TOPIC_ID, None)], target.kind


def test_share_fetch_acquire_release_accept(target: Target, names: str) -> None:
    """One member: records acquired (delivery count 1), released, acquired again (2), accepted
    through the next ShareFetch; acknowledging them again is INVALID_RECORD_STATE; an unknown topic id
    and a malformed batch are answered per partition."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    member = str(uuid.uuid4())
    coordinator = find_coordinator(target.bootstrap_servers, group)
    with Raw(coordinator) as raw:
        joined = _heartbeat(raw, group_id=group, member_id=member, subscribed_topic_names=[topic])
        assert joined["error_code"] == NONE, joined
        _until_assigned(raw, group, member, joined["member_epoch"])
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    stranger = str(uuid.UUID(int=7))
    with Raw(target.bootstrap_servers) as raw:
        # the first fetch makes the share partition: share.auto.offset.reset=latest starts it at the end
        first = _fetch(raw, group_id=group, member_id=member, topics=ask)
        producer = Producer({"bootstrap.servers": target.bootstrap_servers, "acks": "all"})
        for i in range(5):
            producer.produce(topic, value=f"v{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        steps: dict[str, Any] = {"first": first}
        steps["acquired"] = _fetch(
            raw, group_id=group, member_id=member, share_session_epoch=1, max_wait=5000
        )
        steps["stranger opens"] = _fetch(raw, group_id=group, member_id=stranger, topics=ask)
        steps["stranger acknowledges"] = _acknowledge(
            raw,
            group_id=group,
            member_id=stranger,
            share_session_epoch=1,
            topics=[_acks(topic_id, (0, 4, ACCEPT))],
        )
        steps["released"] = _acknowledge(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=2,
            topics=[_acks(topic_id, (0, 4, RELEASE))],
        )
        steps["again"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=3, max_wait=5000)
        steps["accepted with the next fetch"] = _fetch(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=4,
            topics=[_acks(topic_id, (0, 4, ACCEPT))],
        )
        steps["accepted again"] = _acknowledge(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=5,
            topics=[_acks(topic_id, (0, 4, ACCEPT))],
        )
        steps["malformed batch"] = _acknowledge(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=6,
            topics=[_acks(topic_id, (4, 2, ACCEPT))],
        )
        steps["unknown topic id"] = _acknowledge(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=7,
            topics=[_acks(uuid.uuid4(), (0, 0, ACCEPT))],
        )
        steps["nothing left"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=8)
        steps["no batches"] = _acknowledge(
            raw, group_id=group, member_id=member, share_session_epoch=9, topics=[_acks(topic_id)]
        )
        steps["closing"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=-1)
        del producer
    seen = {what: _seen(answer) for what, answer in steps.items()}
    lock = 30000
    assert seen["first"] == {
        "error_code": NONE,
        "lock_timeout": lock,
        "partitions": [_expected(0, has_records=False)],
    }, target.kind
    assert seen["acquired"] == {
        "error_code": NONE,
        "lock_timeout": lock,
        "partitions": [_expected(0, acquired=[(0, 4, 1)])],
    }, target.kind
    assert _codes(seen["stranger acknowledges"]) == [
        (INVALID_RECORD_STATE, "Member is not the owner of batch record")
    ], target.kind
    assert _codes(seen["released"]) == [(NONE, None)], target.kind
    assert seen["again"]["partitions"] == [_expected(0, acquired=[(0, 4, 2)])], target.kind
    accepted = seen["accepted with the next fetch"]["partitions"]
    assert [(p["acknowledge_error_code"], p["acquired_records"]) for p in accepted] == [(NONE, [])], (
        target.kind
    )
    # below the start offset now: nothing to do, no error
    assert _codes(seen["accepted again"]) == [(NONE, None)], target.kind
    assert _codes(seen["malformed batch"]) == [(INVALID_REQUEST, None)], target.kind
    assert _codes(seen["unknown topic id"]) == [(UNKNOWN_TOPIC_ID, None)], target.kind
    # an incremental fetch answers only the partitions with something to say
    assert seen["nothing left"] == {"error_code": NONE, "lock_timeout": lock, "partitions": []}, target.kind
    # a partition with no batches to apply is left out of the answer
    assert _codes(seen["no batches"]) == [], target.kind
    assert seen["closing"] == {"error_code": NONE, "lock_timeout": lock, "partitions": []}, target.kind


def _codes(seen: dict[str, Any]) -> list[tuple[int, str | None]]:
    return [(p["error_code"], p["error_message"]) for p in seen["partitions"]]


def _acks(topic_id: uuid.UUID, *batches: tuple[int, int, int]) -> dict[str, Any]:
    return {"topic_id": topic_id, "partitions": [_part(0, *batches)]}


def _expected(
    index: int, *, acquired: list[tuple[int, int, int]] | None = None, has_records: bool | None = None
) -> dict[str, Any]:
    rows = [{"first_offset": f, "last_offset": last, "delivery_count": c} for f, last, c in acquired or []]
    return {
        "partition_index": index,
        "error_code": NONE,
        "error_message": None,
        "acknowledge_error_code": NONE,
        "acknowledge_error_message": None,
        "acquired_records": rows,
        "has_records": bool(rows) if has_records is None else has_records,
    }


def _joined_member(target: Target, group: str, topic: str) -> str:
    member = str(uuid.uuid4())
    with Raw(find_coordinator(target.bootstrap_servers, group)) as raw:
        joined = _heartbeat(raw, group_id=group, member_id=member, subscribed_topic_names=[topic])
        assert joined["error_code"] == NONE, joined
        _until_assigned(raw, group, member, joined["member_epoch"])
    return member


def _produced(target: Target, topic: str, count: int, per_batch: int) -> None:
    """``count`` records to partition 0, ``per_batch`` to a record batch: a batch goes when it is full
    or at the flush (which ignores ``linger.ms``), never on a timer — with 50 ms a loaded machine once
    split a batch of ten on Apache Kafka's side, which then acquired six records where ten were due."""
    producer = Producer(
        {
            "bootstrap.servers": target.bootstrap_servers,
            "acks": "all",
            "linger.ms": 10_000,
            "batch.num.messages": per_batch,
        }
    )
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
        if (i + 1) % per_batch == 0:
            assert producer.flush(30) == 0
    assert producer.flush(30) == 0


def test_a_partition_not_initialised_or_not_loaded(target: Target, names: str) -> None:
    """A partition no member of the group was ever assigned has no share state: fetching it is
    UNKNOWN_SERVER_ERROR (no message), each time. A partition the broker has not loaded (nothing
    fetched it yet) cannot be acknowledged: UNKNOWN_TOPIC_OR_PARTITION."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    _produced(target, topic, 3, 3)
    stranger = str(uuid.uuid4())
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    with Raw(target.bootstrap_servers) as raw:
        # (the error does not end the wait: each fetch is answered after its max_wait)
        started = time.monotonic()
        opened = _fetch(raw, group_id=f"{group}-none", member_id=stranger, topics=ask, max_wait=3000)
        again = _fetch(
            raw, group_id=f"{group}-none", member_id=stranger, share_session_epoch=1, max_wait=3000
        )
        waited = time.monotonic() - started
    member = _joined_member(target, group, topic)
    with Raw(target.bootstrap_servers) as raw:
        _fetch(raw, group_id=group, member_id=member, topics=[], max_wait=0)
        not_loaded = _acknowledge(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=1,
            topics=[_acks(topic_id, (0, 0, ACCEPT))],
        )
    unknown = [(-1, None)]
    assert (_codes(_seen(opened)), _codes(_seen(again))) == (unknown, unknown), target.kind
    assert waited >= 6, waited
    assert _codes(_seen(not_loaded)) == [(3, "This server does not host this topic-partition.")], target.kind


def test_share_fetch_v2_record_limit(target: Target, names: str) -> None:
    """ShareFetch v2's record-limit mode (``share_acquire_mode`` 1) acquires exactly ``max_records``
    of a ten-record batch; the default mode acquires the whole batch past a soft limit."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    member = _joined_member(target, group, topic)
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    with Raw(target.bootstrap_servers) as raw:
        _fetch(raw, 2, group_id=group, member_id=member, topics=ask)  # the share partition starts at the end
        _produced(target, topic, 20, 10)
        common = {"group_id": group, "member_id": member, "max_wait": 5000}
        limited = _fetch(
            raw, 2, share_session_epoch=1, max_records=3, batch_size=3, share_acquire_mode=1, **common
        )
        batch = _fetch(raw, 2, share_session_epoch=2, max_records=3, batch_size=3, **common)
        # v2's renewing acknowledgements (KIP-1222): the request must ask for nothing, and fetches nothing
        renew_asking = _fetch(
            raw,
            2,
            share_session_epoch=3,
            is_renew_ack=True,
            topics=[_acks(topic_id, (0, 2, RENEW))],
            **common,
        )
        zero = {"max_wait": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0, "batch_size": 0}
        renewed = _fetch(
            raw,
            2,
            group_id=group,
            member_id=member,
            share_session_epoch=3,
            is_renew_ack=True,
            topics=[_acks(topic_id, (0, 2, RENEW))],
            **zero,
        )
        accepted = _fetch(
            raw,
            2,
            group_id=group,
            member_id=member,
            share_session_epoch=4,
            max_wait=0,
            topics=[_acks(topic_id, (0, 9, ACCEPT))],
        )
    assert _seen(limited)["partitions"] == [_expected(0, acquired=[(0, 2, 1)])], target.kind
    assert _seen(batch)["partitions"] == [_expected(0, acquired=[(3, 9, 1)])], target.kind
    assert (renew_asking["error_code"], renew_asking["responses"]) == (INVALID_REQUEST, []), target.kind
    assert [(p["acknowledge_error_code"], p["acquired_records"]) for p in _seen(renewed)["partitions"]] == [
        (NONE, [])
    ], target.kind
    assert [p["acknowledge_error_code"] for p in _seen(accepted)["partitions"]] == [NONE], target.kind


LOCK_MS = 15_000


@pytest.fixture(params=["kgroup", "apache"])
def short_locks(request: pytest.FixtureRequest) -> Iterator[Target]:
    """A broker whose share groups lock records for 15 s: on Kafka the group's
    ``share.record.lock.duration.ms`` (set by the test), on kgroup the broker's setting."""
    if request.param == "apache":
        yield Target("apache", request.getfixturevalue("apache_kafka"))
    else:
        with KafkaBroker(group_share_record_lock_duration_ms=LOCK_MS) as broker:
            yield Target("kgroup", broker)


def _lock_config(target: Target, group: str) -> None:
    if target.kind != "apache":
        return
    with Raw(target.bootstrap_servers) as raw:
        answer = raw.call(
            "IncrementalAlterConfigs",
            1,
            {
                "resources": [
                    {
                        "resource_type": 32,  # GROUP
                        "resource_name": group,
                        "configs": [
                            {
                                "name": "share.record.lock.duration.ms",
                                "config_operation": 0,
                                "value": str(LOCK_MS),
                            }
                        ],
                    }
                ],
                "validate_only": False,
            },
        )
    assert [r["error_code"] for r in answer["responses"]] == [NONE], answer


def test_a_lock_timing_out_makes_records_available_again(short_locks: Target, names: str) -> None:
    """Records acquired and never acknowledged come back once their lock times out, to another
    member, at delivery count 2 — and not before."""
    target = short_locks
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    _lock_config(target, group)
    holder, taker = _joined_member(target, group, topic), _joined_member(target, group, topic)
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    waited = -1.0
    with Raw(target.bootstrap_servers) as raw, Raw(target.bootstrap_servers) as other:
        first = _fetch(raw, group_id=group, member_id=holder, topics=ask)
        assert first["acquisition_lock_timeout"] == LOCK_MS, first
        _produced(target, topic, 4, 4)
        held = _fetch(raw, group_id=group, member_id=holder, share_session_epoch=1, max_wait=5000)
        acquired_at = time.monotonic()
        assert _seen(held)["partitions"] == [_expected(0, acquired=[(0, 3, 1)])], target.kind
        _fetch(other, group_id=group, member_id=taker, topics=ask, max_wait=0)
        epoch, rows = 1, []
        while not rows and time.monotonic() - acquired_at < LOCK_MS / 1000 + 20:
            answer = _fetch(other, group_id=group, member_id=taker, share_session_epoch=epoch, max_wait=1000)
            epoch += 1
            rows = [p for p in _seen(answer)["partitions"] if p["acquired_records"]]
            waited = time.monotonic() - acquired_at
    assert rows == [_expected(0, acquired=[(0, 3, 2)])], target.kind
    assert waited >= LOCK_MS / 1000 - 1, waited  # not before the lock ran out


def test_acknowledgement_types_and_batches(target: Target, names: str) -> None:
    """RENEW (4) only in v2 with ``is_renew_ack`` (INVALID_REQUEST otherwise), ACCEPT beside it, a gap
    (0) on a real record, an unknown type, a batch acknowledged twice in one request, a batch past what
    was acquired (INVALID_REQUEST with Kafka's message), acknowledging while closing the session."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 1)
        topic_id = _topic_id(raw, topic)
    member = _joined_member(target, group, topic)
    ask = [{"topic_id": topic_id, "partitions": [_part(0)]}]
    out = {}
    with Raw(target.bootstrap_servers) as raw:
        _fetch(raw, group_id=group, member_id=member, topics=ask, max_wait=0)
        _produced(target, topic, 6, 6)
        out["acq"] = _codes(
            _seen(_fetch(raw, group_id=group, member_id=member, share_session_epoch=1, max_wait=3000))
        )
        out["v1 renew"] = _codes(
            _seen(
                _acknowledge(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=2,
                    topics=[_acks(topic_id, (0, 0, 4))],
                )
            )
        )
        b: dict[str, Any] = {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": 3,
            "is_renew_ack": False,
            "topics": [_acks(topic_id, (0, 0, 4))],
        }
        out["v2 renew no flag"] = _codes(_seen(raw.call("ShareAcknowledge", 2, b)))
        b = {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": 4,
            "is_renew_ack": True,
            "topics": [_acks(topic_id, (1, 1, 4))],
        }
        out["v2 renew flag"] = _codes(_seen(raw.call("ShareAcknowledge", 2, b)))
        b = {
            "group_id": group,
            "member_id": member,
            "share_session_epoch": 5,
            "is_renew_ack": True,
            "topics": [_acks(topic_id, (2, 2, 1))],
        }
        out["v2 flag accept"] = _codes(_seen(raw.call("ShareAcknowledge", 2, b)))
        out["gap on data"] = _codes(
            _seen(
                _acknowledge(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=6,
                    topics=[_acks(topic_id, (3, 3, 0))],
                )
            )
        )
        out["type 9"] = _codes(
            _seen(
                _acknowledge(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=7,
                    topics=[_acks(topic_id, (4, 4, 9))],
                )
            )
        )
        out["overlap"] = _codes(
            _seen(
                _acknowledge(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=8,
                    topics=[_acks(topic_id, (4, 5, 1), (5, 5, 1))],
                )
            )
        )
        out["beyond"] = _codes(
            _seen(
                _acknowledge(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=9,
                    topics=[_acks(topic_id, (100, 200, 1))],
                )
            )
        )
        out["ack closing"] = _codes(
            _seen(
                _acknowledge(
                    raw,
                    group_id=group,
                    member_id=member,
                    share_session_epoch=-1,
                    topics=[_acks(topic_id, (4, 5, 1))],
                )
            )
        )
        out["after close"] = _fetch(raw, group_id=group, member_id=member, share_session_epoch=10)[
            "error_code"
        ]
    assert out == {
        "acq": [(NONE, None)],
        "v1 renew": [(INVALID_REQUEST, None)],
        "v2 renew no flag": [(INVALID_REQUEST, None)],
        "v2 renew flag": [(NONE, None)],
        "v2 flag accept": [(NONE, None)],
        "gap on data": [(NONE, None)],
        "type 9": [(INVALID_REQUEST, None)],
        "overlap": [(INVALID_RECORD_STATE, "The offset cannot be acknowledged. The offset is not acquired.")],
        "beyond": [
            (INVALID_REQUEST, "Batch record not found. The first offset in request is past acquired records.")
        ],
        "ack closing": [(NONE, None)],
        "after close": SHARE_SESSION_NOT_FOUND,
    }, target.kind


def test_a_session_adds_and_forgets_partitions(target: Target, names: str) -> None:
    """An incremental ShareFetch adds a partition (loaded then: ``latest`` starts it at the end, after
    the first records) and ``forgotten_topics_data`` drops one: only the session's partitions are
    fetched, and only those with records are answered."""
    group, topic = f"{names}-g", f"{names}-t"
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, 2)
        topic_id = _topic_id(raw, topic)
    member = _joined_member(target, group, topic)
    out: dict[str, Any] = {}
    with Raw(target.bootstrap_servers) as raw:
        a = _fetch(
            raw,
            group_id=group,
            member_id=member,
            topics=[{"topic_id": topic_id, "partitions": [_part(0)]}],
            max_wait=0,
        )
        out["open"] = [(p["partition_index"], p["acquired_records"]) for p in _seen(a)["partitions"]]
        producer = Producer({"bootstrap.servers": target.bootstrap_servers, "acks": "all"})
        for i in range(4):
            producer.produce(topic, value=b"x", partition=i % 2)
        producer.flush(10)
        b = _fetch(
            raw,
            group_id=group,
            member_id=member,
            share_session_epoch=1,
            max_wait=10_000,  # answered once records are there (3 s ran out once in CI)
            topics=[{"topic_id": topic_id, "partitions": [_part(1)]}],
        )
        out["add 1"] = [(p["partition_index"], p["acquired_records"]) for p in _seen(b)["partitions"]]
        # Apache Kafka loads a share partition after the fetch that first names it, and ``latest``
        # starts it at the log's end *once loaded*: records produced before then are behind its start
        # (seen once in CI, under load: partition 1 answered empty, its start past the second records).
        # So a round that the loaded partition did not see is produced again; each round puts two
        # records on each partition, and the answer must be the last round's two, on partition 1 only
        rounds: list[Any] = []
        forgotten = [{"topic_id": topic_id, "partitions": [0]}]
        for epoch in range(2, 7):
            for i in range(4):
                producer.produce(topic, value=b"x", partition=i % 2)
            producer.flush(10)
            c = _fetch(
                raw,
                group_id=group,
                member_id=member,
                share_session_epoch=epoch,
                max_wait=10_000 if epoch == 2 else 3_000,
                forgotten_topics_data=forgotten if epoch == 2 else [],
            )
            rounds.append([(p["partition_index"], p["acquired_records"]) for p in _seen(c)["partitions"]])
            if target.kind == "kgroup" or any(acquired for _, acquired in rounds[-1]):
                break
        out["forget 0"] = rounds[-1]
    acquired = [{"first_offset": 0, "last_offset": 1, "delivery_count": 1}]
    first = 2 * len(rounds)
    later = [{"first_offset": first, "last_offset": first + 1, "delivery_count": 1}]
    # a round Apache Kafka's partition 1 loaded too late for: answered empty, or not at all
    assert all(r in ([(1, [])], []) for r in rounds[:-1]), (target.kind, rounds)
    opened = out.pop("open")
    # the opening fetch (max_wait 0) acquires nothing: Apache Kafka answers partition 0 empty, or —
    # when its share partition has not finished loading its state within the 0 ms (seen once in CI,
    # under load) — leaves it out; kgroup's partition is loaded within the call, so always answered
    assert opened == [(0, [])] or (target.kind == "apache" and opened == []), (target.kind, opened)
    added = out.pop("add 1")
    # the fetch that adds partition 1 acquires partition 0's two records; Apache Kafka may answer the
    # just-added partition too, empty — when its share state loads while the fetch waits (seen once
    # in CI, under load) —, kgroup's partition loads within the call and has nothing to acquire
    assert added == [(0, acquired)] or (target.kind == "apache" and added == [(0, acquired), (1, [])]), (
        target.kind,
        added,
    )
    assert out == {"forget 0": [(1, later)]}, target.kind
