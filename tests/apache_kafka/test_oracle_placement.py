"""Kafka 4.4.0's replica placement, asked of Kafka's own ``StripedReplicaPlacer`` on random clusters
every run, against kgroup's (``kgroup.partitioning.striped``).

Each case (``striped_clusters.random_case``) is a run of topic creations on one controller: brokers
registered in a random order (ids past a HashMap's buckets, racks with colliding Java hashes, brokers
without a rack beside named ones, fenced brokers), one ``java.util.Random(seed)``, 1-4 topics placed in
turn, some with a replication factor Kafka refuses. The oracle registers the brokers with the
controller's own ``BrokerHeartbeatManager`` and places through its ``usableBrokers()`` iterator, so the
broker order kgroup models (``controller_broker_order``) is checked too. A fresh seed each run
(``KGROUP_ORACLE_SEED`` replays one); a difference fails with the case that shows it.
"""

from __future__ import annotations

import json
import os
import random

from apache_kafka.striped_clusters import kgroup_answer, random_case
from kgroup.testing.apache_kafka import KafkaOracle

#: cases per round trip, and round trips per run
BATCH = 150
ROUNDS = 4
SEED = int(os.environ.get("KGROUP_ORACLE_SEED") or random.SystemRandom().randrange(2**32))


def test_striped_placement_matches_kafka_on_random_clusters(kafka_oracle: KafkaOracle) -> None:
    rng = random.Random(SEED)
    compared = placed = refused = 0
    for _ in range(ROUNDS):
        cases = [random_case(rng) for _ in range(BATCH)]
        answers = kafka_oracle.striped_place_many([(c.brokers, c.topics, c.seed) for c in cases])
        for case, kafka in zip(cases, answers, strict=True):
            usable, topics = kgroup_answer(case)
            if (usable, topics) != (kafka.usable, kafka.topics):
                raise AssertionError(
                    "kgroup's StripedReplicaPlacer differs from Kafka 4.4.0's on\n"
                    f"{json.dumps(case.as_json(), ensure_ascii=False)}\n"
                    f"kafka:  {kafka.usable} {kafka.topics}\nkgroup: {usable} {topics}\n"
                    f"replay: KGROUP_ORACLE_SEED={SEED} pytest {__file__}"
                )
            compared += 1
            placed += sum(isinstance(t, list) for t in topics)
            refused += sum(isinstance(t, str) for t in topics)
    # the draws must reach both outcomes, or the comparison proves less than it says
    assert compared == BATCH * ROUNDS and placed > compared and refused > 0
