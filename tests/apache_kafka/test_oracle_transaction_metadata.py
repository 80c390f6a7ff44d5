"""kgroup's transaction metadata transitions step for step against Kafka 4.4.0's own
``TransactionMetadata``: random sequences of InitProducerId bumps, producer id rotations,
AddPartitionsToTxn, EndTxn (v1 and v2), fenced aborts and completions, each prepared and completed as
Kafka's coordinator does; after every step both sides hold the same metadata (its partitions in the same
order), or both refuse the step the same way (a bug Kafka refuses, or PRODUCER_FENCED)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka import KafkaOracle
from kgroup.transactions import metadata as meta
from kgroup.transactions.state import MAX_EPOCH, NO_PRODUCER_EPOCH, TxnState
from transactions.strategies import PARTITION

S = TxnState
EPOCHS = st.sampled_from([0, 1, 5, MAX_EPOCH - 2, MAX_EPOCH - 1, MAX_EPOCH])
TV = st.sampled_from([0, 1, 2])
NOW = st.integers(0, 10_000)

STEP = st.one_of(
    st.fixed_dictionaries(
        {
            "op": st.just("increment"),
            "timeoutMs": st.sampled_from([1000, 2000]),
            "expectedEpoch": st.one_of(st.none(), EPOCHS, st.integers(-1, 8)),
            "now": NOW,
        }
    ),
    st.fixed_dictionaries(
        {
            "op": st.just("rotate"),
            "producerId": st.integers(100, 110),
            "timeoutMs": st.just(1000),
            "now": NOW,
            "recordLastEpoch": st.booleans(),
        }
    ),
    st.fixed_dictionaries(
        {
            "op": st.just("add"),
            "partitions": st.lists(PARTITION, min_size=1, max_size=6, unique=True),
            "now": NOW,
            "clientTransactionVersion": TV,
        }
    ),
    st.fixed_dictionaries(
        {
            "op": st.just("end"),
            "state": st.sampled_from([S.PREPARE_COMMIT.id, S.PREPARE_ABORT.id]),
            "clientTransactionVersion": TV,
            "nextProducerId": st.sampled_from([-1, 77]),
            "now": NOW,
            "noPartitionAdded": st.booleans(),
        }
    ),
    st.fixed_dictionaries({"op": st.just("fenceAndAbort"), "clientTransactionVersion": TV, "now": NOW}),
    st.fixed_dictionaries({"op": st.just("complete"), "now": NOW}),
)


def _step(m: meta.TxnMetadata, step: dict[str, Any]) -> meta.TxnMetadata:
    """The step's transition, checked as ``completeTransitionTo`` checks it."""
    new = _prepare(m, step)
    if step["op"] != "fenceAndAbort":  # checked against the fenced metadata, inside
        meta.check_transition(m, new)
    return new


def _prepare(m: meta.TxnMetadata, step: dict[str, Any]) -> meta.TxnMetadata:
    op, now = step["op"], step["now"]
    if op == "increment":
        return meta.increment_epoch(m, step["timeoutMs"], step["expectedEpoch"], now)
    if op == "rotate":
        return meta.rotate_producer_id(m, step["producerId"], step["timeoutMs"], now, step["recordLastEpoch"])
    if op == "add":
        parts = [TopicPartition(t, p) for t, p in step["partitions"]]
        return meta.add_partitions(m, parts, now, step["clientTransactionVersion"])
    if op == "end":
        state = S.from_id(step["state"])
        tv, next_pid = step["clientTransactionVersion"], step["nextProducerId"]
        return meta.abort_or_commit(m, state, tv, next_pid, now, step["noPartitionAdded"])
    if op == "fenceAndAbort":
        fenced = meta.fence_epoch(m)
        current = dataclasses.replace(
            m, producer_epoch=fenced.producer_epoch, last_producer_epoch=NO_PRODUCER_EPOCH
        )
        new = meta.abort_or_commit(current, S.PREPARE_ABORT, step["clientTransactionVersion"], -1, now, False)
        meta.check_transition(current, new)
        return new
    assert op == "complete"
    return meta.complete(m, now)


def _fields(m: meta.TxnMetadata) -> dict[str, Any]:
    return {
        "producerId": m.producer_id,
        "prevProducerId": m.prev_producer_id,
        "producerEpoch": m.producer_epoch,
        "lastProducerEpoch": m.last_producer_epoch,
        "txnTimeoutMs": m.txn_timeout_ms,
        "state": m.state.id,
        "partitions": [[tp.topic, tp.partition] for tp in m.partitions],
        "txnStartTimestamp": m.txn_start_ms,
        "txnLastUpdateTimestamp": m.txn_last_update_ms,
        "clientTransactionVersion": m.client_transaction_version,
    }


@st.composite
def starts(draw: st.DrawFn) -> meta.TxnMetadata:
    state = draw(st.sampled_from([S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT]))
    epoch = draw(st.one_of(EPOCHS, st.just(-1))) if state is S.EMPTY else draw(EPOCHS)
    return meta.TxnMetadata(
        transactional_id="tx",
        producer_id=draw(st.sampled_from([10, 11])),
        prev_producer_id=draw(st.sampled_from([-1, 10])),
        next_producer_id=-1,
        producer_epoch=epoch,
        last_producer_epoch=draw(st.sampled_from([-1, 0, 4])),
        txn_timeout_ms=1000,
        state=state,
        partitions=(TopicPartition("t", 0),) if state is S.ONGOING else (),
        txn_start_ms=-1 if state is S.EMPTY else 50,
        txn_last_update_ms=60,
        client_transaction_version=draw(TV),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(starts(), st.lists(STEP, min_size=1, max_size=12)), min_size=1, max_size=10))
def test_transitions_agree_with_kafkas_transaction_metadata(
    kafka_oracle: KafkaOracle, runs: list[tuple[meta.TxnMetadata, list[dict[str, Any]]]]
) -> None:
    items: list[dict[str, Any]] = [
        {"start": _fields(start) | {"transactionalId": "tx", "nextProducerId": -1}, "steps": steps}
        for start, steps in runs
    ]
    answers = kafka_oracle.transaction_metadata_steps(items)
    for (start, steps), kafka in zip(runs, answers, strict=True):
        m = start
        for step, expected in zip(steps, kafka, strict=True):
            try:
                new = _step(m, step)
            except meta.IllegalTransition:
                assert expected == {"error": "illegal"}, (m, step, expected)
                continue
            except meta.ApiError as e:
                assert expected == {"error": "fenced"} and e.code.name == "PRODUCER_FENCED", (m, step)
                continue
            m = new
            assert _fields(m) == expected, (step, expected)
