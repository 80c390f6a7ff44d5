"""The order in which Kafka 4.4.0's Java producer lists a topic's partitions (where its
``RoundRobinPartitioner`` starts), asked of Kafka's own ``ProducerMetadata`` on random runs of Metadata
answers every run, against kgroup's model (``kgroup.partitioning.client_order``).

A run is a fresh producer given 1-4 answers in turn: mostly partial ones (a producer's request for topics
it has not seen), sometimes a full refresh; topics named with Java-hash traps (non-ASCII, long names),
1-300 partitions that may grow between answers, some partitions without a leader. Both sides must list
every topic's partitions, and its partitions with a leader, in the same order. A fresh seed each run
(``KGROUP_ORACLE_SEED`` replays one).
"""

from __future__ import annotations

import os
import random

from kgroup.partitioning import JavaClientMetadata
from kgroup.testing.apache_kafka import KafkaOracle

RUNS = 200
SEED = int(os.environ.get("KGROUP_ORACLE_SEED") or random.SystemRandom().randrange(2**32))
NAMES = ("orders", "t", "topic-with-a-long-name-" * 4, "événements", "\U0001f600-emoji", "Aa", "BB")

Update = tuple[bool, list[tuple[str, list[int], list[int]]]]


def _run(rng: random.Random) -> tuple[list[Update], list[str]]:
    topics = rng.sample(NAMES, rng.randint(1, 4))
    counts = {t: rng.choice((1, 2, 3, 4, 6, 8, 12, 16, 50, rng.randint(1, 300))) for t in topics}
    updates: list[Update] = []
    for _ in range(rng.randint(1, 4)):
        partial = rng.random() < 0.8
        named = topics if not partial else rng.sample(topics, rng.randint(1, len(topics)))
        listed = []
        for topic in named:
            if rng.random() < 0.2:
                counts[topic] += rng.randint(1, 20)  # partitions added (never removed)
            partitions = list(range(counts[topic]))
            leaderless = [p for p in partitions if rng.random() < 0.1]
            listed.append((topic, partitions, leaderless))
        updates.append((partial, listed))
    return updates, topics


def _kgroup(updates: list[Update], topics: list[str]) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    metadata = JavaClientMetadata()
    leaderless: dict[str, set[int]] = {}
    for partial, listed in updates:
        metadata.update(((t, p) for t, parts, _ in listed for p in parts), partial=partial)
        if not partial:
            leaderless.clear()
        leaderless.update({t: set(lost) for t, _, lost in listed})
    out = {}
    for topic in topics:
        every = metadata.partitions_for(topic)
        out[topic] = (every, tuple(p for p in every if p not in leaderless.get(topic, set())))
    return out


def test_the_producers_partition_order_matches_kafka(kafka_oracle: KafkaOracle) -> None:
    rng = random.Random(SEED)
    checked = moved = 0
    for _ in range(RUNS):
        updates, topics = _run(rng)
        kafka = kafka_oracle.client_partition_order(updates, topics)
        mine = _kgroup(updates, topics)
        assert mine == kafka, f"{updates}\nreplay: KGROUP_ORACLE_SEED={SEED} pytest {__file__}"
        checked += 1
        moved += sum(every != tuple(sorted(every)) for every, _ in kafka.values())
    assert checked == RUNS and moved > 0  # the Java order is not ascending in many of them
