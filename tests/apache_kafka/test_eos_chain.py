"""Exactly once across rebalances (issue 33): a consume-transform-produce chain of three stages
(``topic0 -> stage 1 -> topic1 -> stage 2 -> topic2 -> stage 3 -> topic3``, ``kgroup.testing.eos_chain``)
in eager (``range``), cooperative (``cooperative-sticky``), static (``group.instance.id``) and KIP-848
(``group.protocol=consumer``) groups, on ``kgroup serve`` and on Apache Kafka 4.4.0.

Each stage is a group of transactional workers — stages 1 and 3 confluent-kafka (librdkafka's
transactional producer, each worker a process of its own), stage 2 Kafka's Java ``KafkaConsumer`` and
``KafkaProducer`` (``sendOffsetsToTransaction`` with ``consumer.groupMetadata()``). While the input
flows in three waves, a member joins each stage, one leaves cleanly, and one is killed with SIGKILL
(its transaction perhaps open) and restarted with its transactional id (in the static group, its
instance id too: it takes its place at once; elsewhere its partitions wait for its session to
expire). A ``read_committed`` reader then finds every input record in the final topic exactly once,
by key and value.

Both brokers are this module's own, with short group sessions (classic ``session.timeout.ms`` 4 s,
``group.min.session.timeout.ms`` lowered to allow it; KIP-848's ``group.consumer.session.timeout.ms``
4 s and heartbeat 0.5 s, their minimums lowered) and a 1 s abort sweep, the same on both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import ApacheKafka, require_apache_kafka
from kgroup.testing.eos_chain import (
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    STAGES,
    VARIANTS,
    expected_output,
    read_committed,
    run_chain,
    topic_names,
)

pytestmark = [pytest.mark.transactions, pytest.mark.timeout(300)]

RECORDS = 300
PARTITIONS = 4
SWEEP_MS = 1000

Broker = KafkaBroker | ApacheKafka


@pytest.fixture(scope="module", params=["kgroup", "apache"])
def kafka(request: pytest.FixtureRequest) -> Iterator[Broker]:
    if request.param == "kgroup":
        with KafkaBroker(
            group_min_session_timeout_ms=SESSION_TIMEOUT_MS,
            group_consumer_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            group_consumer_min_heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            group_consumer_session_timeout_ms=SESSION_TIMEOUT_MS,
            group_consumer_min_session_timeout_ms=SESSION_TIMEOUT_MS,
            transaction_abort_timed_out_interval_ms=SWEEP_MS,
        ) as ours:
            yield ours
        return
    require_apache_kafka()
    broker = ApacheKafka(
        configs={
            "group.min.session.timeout.ms": SESSION_TIMEOUT_MS,
            "group.consumer.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "group.consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
            "group.consumer.min.session.timeout.ms": SESSION_TIMEOUT_MS,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": SWEEP_MS,
        }
    )
    broker.start()
    try:
        yield broker
        broker.check_alive()
    finally:
        broker.stop()


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_three_stage_chain_is_exactly_once_while_members_join_leave_and_die(
    kafka: Broker, variant: str, names: str
) -> None:
    result = run_chain(
        VARIANTS[variant],
        kafka.bootstrap_servers,
        names,
        records=RECORDS,
        partitions=PARTITIONS,
        create_topic=kafka.create_topic,
        timeout_s=180.0,  # a bound for a loaded machine; a run takes 15-40 s
    )
    assert result.fatal == []  # no worker that went on was fenced
    for stage in range(1, STAGES + 1):  # the members that joined each stage did work
        assert sum(result.workers[f"{names}-s{stage}-{slot}"] for slot in ("c", "d")) > 0, result.workers

    output = read_committed(kafka.bootstrap_servers, topic_names(names)[-1], PARTITIONS)
    assert Counter(output) == Counter(expected_output(RECORDS))  # each input once: none lost, none twice
