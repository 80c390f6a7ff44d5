"""Differential: what a Produce request naming many partitions gets — the order of its answer, a
partition named twice, the checks ``KafkaApis`` makes before the log — sent raw to kgroup and to
Apache Kafka 4.4.0 (the ``target`` fixture).

Kafka answers a Produce from maps keyed by ``TopicIdPartition``, so the answer's order follows the
partitions' hashes, which include each topic's random id: the two brokers' orders differ, and each is
checked against the order ``kgroup.broker.answer_order`` gives for that broker's topic ids (so the
model is checked against Kafka's answer, and kgroup's answer against the model). The error codes of
every partition and the records each log ends up with are compared across the two.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, fetch_v12, metadata
from tests.log.batches import kio_batch

from kgroup.broker.answer_order import (
    AsideAnswers,
    PartitionKey,
    answer_order,
    appended_table,
    topic_id_partition_hash,
)
from kgroup.javacompat import hashmap_order_by_hash

pytestmark = pytest.mark.apache_kafka

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REQUIRED_ACKS = 21
TOPIC_AUTHORIZATION_FAILED = 29
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87
UNKNOWN_TOPIC_ID = 100
ZERO = uuid.UUID(int=0)
TWO_BATCHES = kio_batch([b"one"]) + kio_batch([b"two"])  # a shape KafkaApis refuses (INVALID_RECORD)


def _zstd_flagged() -> bytes:
    """A batch whose attributes say zstd (its payload is never read: Produce before v7 refuses it)."""
    batch = bytearray(kio_batch([b"z"]))
    batch[22] = (batch[22] & ~0x07) | 4
    return bytes(batch)


def _produce(raw: Raw, version: int, entries: list[tuple[Any, int, bytes]], acks: int = -1) -> Any:
    """Produce of (topic name, or topic id from v13; partition; records): a topic entry each."""
    topic_data = [
        (
            {"topic_id": topic, "partition_data": [{"index": partition, "records": records}]}
            if version >= 13
            else {"name": topic, "partition_data": [{"index": partition, "records": records}]}
        )
        for topic, partition, records in entries
    ]
    return raw.call(
        "Produce",
        version,
        {"transactional_id": None, "acks": acks, "timeout": 10_000, "topic_data": topic_data},
    )


def _ids(raw: Raw, topics: list[str]) -> dict[str, uuid.UUID]:
    return {
        t["name"]: uuid.UUID(str(t["topic_id"])) for t in metadata(raw, topics, auto_create=False)["topics"]
    }


def _layout(answer: Any, version: int, names: dict[uuid.UUID, str]) -> list[tuple[str, int, int]]:
    """(topic, partition, error code) in the answer's order (v13: the topic named by its id)."""
    out = []
    for topic in answer["responses"]:
        name = (
            names.get(uuid.UUID(str(topic["topic_id"])), str(topic["topic_id"]))
            if version >= 13
            else topic["name"]
        )
        out.extend((name, p["index"], p["error_code"]) for p in topic["partition_responses"])
    return out


def _expected(
    entries: list[tuple[PartitionKey, int]], *, acks_valid: bool = True
) -> list[tuple[str, int, int]]:
    """The model's answer: each (key, the answer Kafka gives that entry) in the request's order, the
    entries answered NONE or INVALID_REQUIRED_ACKS appended, the others answered aside by KafkaApis."""
    missing, invalid = AsideAnswers(), AsideAnswers()
    authorized: dict[PartitionKey, None] = {}
    puts: list[int] = []
    codes: dict[PartitionKey, int] = {}
    for key, code in entries:  # UNKNOWN_TOPIC_ID in the first pass, before the others
        if code == UNKNOWN_TOPIC_ID:
            missing.put(key, code)
    for key, code in entries:
        if code in (NONE, INVALID_REQUIRED_ACKS):
            puts.append(len(authorized))
            authorized[key] = None
            codes.setdefault(key, code)
        elif code == UNKNOWN_TOPIC_OR_PARTITION:
            missing.put(key, code)
        elif code in (INVALID_RECORD, UNSUPPORTED_COMPRESSION_TYPE):
            invalid.put(key, code)
    for aside in (missing, invalid):
        codes.update(aside.answers)
    table = appended_table(len(authorized), acks_valid=acks_valid, any_refused=False, authorized_puts=puts)
    order = answer_order(
        [],
        list(authorized),
        (AsideAnswers(), missing, invalid),
        any_authorized=bool(authorized),
        appended_table=table,
    )
    grouped: dict[tuple[uuid.UUID, str], list[tuple[str, int, int]]] = {}  # by topic, where it first comes
    for topic_id, name, partition in order:
        grouped.setdefault((topic_id, name), []).append((name, partition, codes[(topic_id, name, partition)]))
    return [entry for entries in grouped.values() for entry in entries]


def _values(raw: Raw, topic: str, partition: int) -> tuple[int, bytes]:
    """The partition's high watermark and its records' bytes (from offset 0)."""
    answer = raw.call("Fetch", 12, fetch_v12([(topic, partition)], wait_ms=0))
    (entry,) = answer["responses"][0]["partitions"]
    assert entry["error_code"] == NONE, entry
    return entry["high_watermark"], bytes(entry["records"] or b"")


def test_many_partitions_twice_named_and_refused_by_shape(target: Target, names: str) -> None:
    a, b, c, nope = (f"{names}-{x}" for x in ("a", "b", "c", "nope"))
    batch = {
        tag: kio_batch([tag.encode()]) for tag in ("b1", "b0", "a0", "a1", "first", "second", "x", "y", "c1")
    }
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 6)
        create_topic(raw, b, 3)
        create_topic(raw, c, 2)
        ids = _ids(raw, [a, b, c])
        ids[nope] = ZERO
        request = [
            (b, 1, batch["b1"], NONE),
            (a, 2, batch["first"], NONE),
            (a, 0, batch["a0"], NONE),
            (nope, 0, batch["a0"], UNKNOWN_TOPIC_OR_PARTITION),
            (b, 0, batch["b0"], NONE),
            (a, 2, batch["second"], NONE),  # named again: these records are the ones written
            (a, 1, batch["a1"], NONE),
            (a, 9, batch["a1"], UNKNOWN_TOPIC_OR_PARTITION),
            (a, 3, batch["x"], NONE),  # written, but answered by the later entry's refusal
            (a, 3, TWO_BATCHES, INVALID_RECORD),
            (a, 4, TWO_BATCHES, INVALID_RECORD),  # answered so, though the later entry is written
            (a, 4, batch["y"], NONE),
            (c, 1, batch["c1"], NONE),
        ]
        answer = _produce(raw, 9, [(t, p, r) for t, p, r, _ in request])
        small = _produce(raw, 9, [(b, 2, batch["b1"]), (c, 0, TWO_BATCHES), (b, 2, batch["b0"])])
        logs = {(t, p): _values(raw, t, p) for t, p in ((a, 2), (a, 3), (a, 4), (b, 2))}
    got = _layout(answer, 9, {})
    assert got == _expected([((ids[t], t, p), code) for t, p, _, code in request])
    assert {(t, p): code for t, p, code in got} == {
        (b, 1): NONE,
        (a, 2): NONE,
        (a, 0): NONE,
        (nope, 0): UNKNOWN_TOPIC_OR_PARTITION,
        (b, 0): NONE,
        (a, 1): NONE,
        (a, 9): UNKNOWN_TOPIC_OR_PARTITION,
        (a, 3): INVALID_RECORD,
        (a, 4): INVALID_RECORD,
        (c, 1): NONE,
    }
    assert _layout(small, 9, {}) == _expected(
        [((ids[b], b, 2), NONE), ((ids[c], c, 0), INVALID_RECORD), ((ids[b], b, 2), NONE)]
    )
    # one batch per partition named twice: the later entry's, or the one that passed the shape check
    hw, records = logs[(a, 2)]
    assert hw == 1 and b"second" in records and b"first" not in records
    hw, records = logs[(a, 3)]
    assert hw == 1 and b"x" in records
    hw, records = logs[(a, 4)]
    assert hw == 1 and b"y" in records
    hw, records = logs[(b, 2)]
    assert hw == 1 and b"b0" in records and b"b1" not in records


def test_by_topic_id_old_versions_and_bad_acks(target: Target, names: str) -> None:
    a, b = f"{names}-a", f"{names}-b"
    unknown = uuid.UUID(int=0x1234)
    ok = kio_batch([b"v"])
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 4)
        create_topic(raw, b, 2)
        ids = _ids(raw, [a, b])
        by_id = [(ids[a], 0, ok), (unknown, 0, ok), (ids[b], 1, ok), (ids[a], 3, ok), (ids[a], 1, ok)]
        v13 = _produce(raw, 13, by_id)
        v6 = _produce(raw, 6, [(a, 0, _zstd_flagged()), (b, 0, ok), (a, 2, ok), (a, 7, ok)])
        v7 = _produce(raw, 7, [(a, 0, _zstd_flagged())])
        acks = _produce(raw, 9, [(a, 1, ok), (b, 0, ok), (f"{names}-none", 0, ok), (a, 2, ok)], acks=2)
    names_of = {ids[a]: a, ids[b]: b, unknown: ""}
    expected_v13 = _expected(
        [
            ((ids[a], a, 0), NONE),
            ((unknown, "", 0), UNKNOWN_TOPIC_ID),
            ((ids[b], b, 1), NONE),
            ((ids[a], a, 3), NONE),
            ((ids[a], a, 1), NONE),
        ]
    )
    assert _layout(v13, 13, names_of) == expected_v13
    assert _layout(v6, 6, {}) == _expected(
        [
            ((ids[a], a, 0), UNSUPPORTED_COMPRESSION_TYPE),
            ((ids[b], b, 0), NONE),
            ((ids[a], a, 2), NONE),
            ((ids[a], a, 7), UNKNOWN_TOPIC_OR_PARTITION),
        ]
    )
    # zstd from v7: past the shape check (its payload then fails in the log, not compared here)
    ((_, _, code),) = _layout(v7, 7, {})
    assert code not in (UNSUPPORTED_COMPRESSION_TYPE, NONE)
    # acks outside -1/0/1: only the partitions that reached the replica manager are told so
    assert _layout(acks, 9, {}) == _expected(
        [
            ((ids[a], a, 1), INVALID_REQUIRED_ACKS),
            ((ids[b], b, 0), INVALID_REQUIRED_ACKS),
            ((ZERO, f"{names}-none", 0), UNKNOWN_TOPIC_OR_PARTITION),
            ((ids[a], a, 2), INVALID_REQUIRED_ACKS),
        ],
        acks_valid=False,
    )


UNKNOWN_SERVER_ERROR = -1
CORRUPT_MESSAGE = 2
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
INVALID_PRODUCER_ID_MAPPING = 49


def _whole(entries: list[tuple[str, int]], code: int) -> list[tuple[str, int, int]]:
    """``ProduceRequest.getErrorResponse``'s answer: each partition once, in a ``java.util.HashMap``'s
    order of the request's own keys (topic id zero before v13), grouped by topic."""
    keys = list(dict.fromkeys((ZERO, t, p) for t, p in entries))
    order = hashmap_order_by_hash(keys, [topic_id_partition_hash(k) for k in keys])
    assert order is not None
    grouped: dict[str, list[tuple[str, int, int]]] = {}
    for _, name, partition in order:
        grouped.setdefault(name, []).append((name, partition, code))
    return [entry for entries in grouped.values() for entry in entries]


def _same_topic_blocks(
    got: list[tuple[str, int, int]], expected: list[tuple[str, int, int]], case: str
) -> None:
    """``got`` holds ``expected``'s entries with each topic's together and in ``expected``'s order; the
    topics' own order may differ."""
    assert sorted(got) == sorted(expected), case
    topics = list(dict.fromkeys(t for t, _, _ in got))
    blocks = [[e for e in got if e[0] == t] for t in topics]
    assert [e for block in blocks for e in block] == got, case  # (each topic's partitions together)
    for block in blocks:
        assert block == [e for e in expected if e[0] == block[0][0]], case


def test_a_whole_request_refused(target: Target, names: str) -> None:
    """A batch length Kafka's reader cannot read, met before any transactional batch, or a
    transactional batch without a transactional id, transactional batches of two producers, or
    (before v7) a codec id Kafka's shape check cannot look up, refuses the whole request: every partition
    answered so (an unknown topic's too, and a corrupt batch after the transactional one), nothing
    written."""
    a, nope = f"{names}-a", f"{names}-nope"
    ok = kio_batch([b"v"])
    corrupt = bytearray(kio_batch([b"c"]))
    corrupt[8:12] = (5).to_bytes(4, "big")  # a batch length under the minimum overhead
    txn = bytearray(kio_batch([b"t"], producer_id=7, producer_epoch=0, base_sequence=0))
    txn[22] |= 0x10  # the transactional attribute
    cases = {
        "corrupt": [(a, 0, ok), (a, 1, bytes(corrupt)), (nope, 0, ok), (a, 2, ok), (a, 0, ok)],
        "transactional": [(a, 0, ok), (a, 2, bytes(txn)), (nope, 0, ok), (a, 1, bytes(corrupt))],
    }
    codec5 = bytearray(ok)
    codec5[22] = (codec5[22] & ~0x07) | 5  # no such codec: Produce before v7 asks for it (zstd?) and fails
    before_v7 = [(a, 0, ok), (nope, 0, ok), (a, 2, bytes(codec5)), (a, 1, ok)]
    two = [bytearray(kio_batch([b"t"], producer_id=pid, producer_epoch=0, base_sequence=0)) for pid in (7, 8)]
    for batch in two:
        batch[22] |= 0x10
    two_producers = [(a, 0, bytes(two[0])), (nope, 0, ok), (a, 1, bytes(two[1]))]
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, a, 3)
        answers = {case: _produce(raw, 9, entries) for case, entries in cases.items()}
        answers["codec 5 in v6"] = _produce(raw, 6, before_v7)
        answers["two producers"] = raw.call(
            "Produce",
            9,
            {
                "transactional_id": f"{names}-txn",
                "acks": -1,
                "timeout": 10_000,
                "topic_data": [
                    {"name": t, "partition_data": [{"index": p, "records": r}]} for t, p, r in two_producers
                ],
            },
        )
        written = {p: _values(raw, a, p)[0] for p in range(3)}
    got = {
        "codec 5 in v6": _layout(answers["codec 5 in v6"], 6, {}),
        "corrupt": _layout(answers["corrupt"], 9, {}),
        "transactional": _layout(answers["transactional"], 9, {}),
        "two producers": _layout(answers["two producers"], 9, {}),
    }
    expected = {
        "codec 5 in v6": _whole([(t, p) for t, p, _ in before_v7], UNKNOWN_SERVER_ERROR),
        "corrupt": _whole([(t, p) for t, p, _ in cases["corrupt"]], CORRUPT_MESSAGE),
        "transactional": _whole(
            [(t, p) for t, p, _ in cases["transactional"]], TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        ),
        "two producers": _whole([(t, p) for t, p, _ in two_producers], INVALID_PRODUCER_ID_MAPPING),
    }
    for case, answer in got.items():
        if target.kind == "kgroup":
            assert answer == expected[case], case
        elif case == "codec 5 in v6":
            # Apache Kafka answered this case in another order in 3 runs with a fresh-clone CI beside them
            # (the cause was not found): every partition once, all refused
            assert sorted(answer) == sorted(expected[case]), case
        else:
            # and "corrupt" (CI18) and "transactional" (1 of 10 runs with two cores kept busy) with the
            # unknown topic on the other side of the known one ("two producers" is the same answer,
            # getErrorResponse): what held in those runs too is held — each topic's partitions together
            # and in the model's order, the topics' order free
            _same_topic_blocks(answer, expected[case], case)
    assert written == {0: 0, 1: 0, 2: 0}
