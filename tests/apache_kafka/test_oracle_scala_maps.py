"""The iteration orders of Scala 2.13's maps and ``java.util.HashMap`` over ``TopicIdPartition`` keys, as
Kafka 4.4.0's own classes give them (the oracle JVM runs the release's ``scala-library`` and
``kafka-clients``), against kgroup's models (``kgroup.scalacompat``, ``kgroup.javacompat``,
``kgroup.broker.answer_order.topic_id_partition_hash``) — the orders a Produce answer's partitions
pass through in Kafka's broker.

Random runs every time: 1-80 keys, a key sometimes put twice, drawn from a few topic ids (the zero id
among them) and names (non-ASCII, empty) and partitions, so that tables grow, buckets and trie slots
collide, and small maps (four keys or fewer) turn into hash tries. A fresh seed each run
(``KGROUP_ORACLE_SEED`` replays one).
"""

from __future__ import annotations

import os
import random
import uuid

from kgroup.broker.answer_order import PartitionKey, topic_id_partition_hash
from kgroup.javacompat import JavaHashMap, java_string_hash
from kgroup.scalacompat import (
    ImmutableMapOrder,
    ImmutableSetOrder,
    mutable_hashmap_order,
    mutable_table_after_puts,
    mutable_table_for_size,
)
from kgroup.testing.apache_kafka import KafkaOracle

RUNS = 150
SEED = int(os.environ.get("KGROUP_ORACLE_SEED") or random.SystemRandom().randrange(2**32))
NAMES = ("orders", "t", "", "événements", "\U0001f600-emoji", "Aa", "BB", "topic-" * 9)


def _keys(rng: random.Random) -> list[PartitionKey]:
    ids = [uuid.UUID(int=0)] + [uuid.UUID(int=rng.getrandbits(128)) for _ in range(3)]
    topics = [(rng.choice(ids), rng.choice(NAMES)) for _ in range(rng.randint(1, 4))]
    puts: list[PartitionKey] = []
    for _ in range(rng.randint(1, 80)):
        if puts and rng.random() < 0.15:
            puts.append(rng.choice(puts))  # a partition named again
        else:
            topic_id, name = rng.choice(topics)
            puts.append((topic_id, name, rng.choice((0, 1, 2, 3, rng.randint(0, 5000)))))
    return puts


def _kgroup(puts: list[PartitionKey]) -> dict[str, list[int]]:
    first: dict[PartitionKey, int] = {}
    sizes: list[int] = []
    immutable: ImmutableMapOrder[PartitionKey] = ImmutableMapOrder()
    java: JavaHashMap[PartitionKey, None] = JavaHashMap(topic_id_partition_hash)
    for key in puts:
        sizes.append(len(first))
        first.setdefault(key, len(first))
        immutable.add(key, topic_id_partition_hash(key))
        java.put(key, None)
    keys = list(first)
    hashes = [topic_id_partition_hash(k) for k in keys]
    return {
        "hashes": [topic_id_partition_hash(k) for k in puts],
        "immutable": [first[k] for k in immutable.order()],
        "mutable": [first[k] for k in mutable_hashmap_order(keys, hashes, mutable_table_after_puts(sizes))],
        "mutable_from": [
            first[k] for k in mutable_hashmap_order(keys, hashes, mutable_table_for_size(len(keys)))
        ],
        "java": [first[k] for k in java.keys_in_order()],
    }


def test_map_orders_match_scala_and_java(kafka_oracle: KafkaOracle) -> None:
    rng = random.Random(SEED)
    for run in range(RUNS):
        puts = _keys(rng)
        expected = kafka_oracle.map_orders(puts)
        assert _kgroup(puts) == expected, f"seed {SEED} (KGROUP_ORACLE_SEED), run {run}: {puts}"


TOPIC_NAMES = (
    "orders",
    "t",
    "Aa",
    "BB",
    "AaAa",
    "BBBB",
    "AaBB",
    "événements",
    "x" * 30,
    "a",
    "b",
    "c",
    "d",
    "e",
)


def test_set_orders_match_scala(kafka_oracle: KafkaOracle) -> None:
    """``immutable.Set``: ``toSet`` of 1-14 names (Java-hash twins among them, a name sometimes
    twice), filtered both ways and mapped — small sets staying small, hash sets staying hash sets."""
    rng = random.Random(SEED)
    for run in range(RUNS):
        names = [
            rng.choice(TOPIC_NAMES) + rng.choice(("", "", str(rng.randint(0, 99))))
            for _ in range(rng.randint(1, 14))
        ]
        keep = {n for n in names if rng.random() < 0.6}
        whole = ImmutableSetOrder.of(names, java_string_hash)
        kept = whole.filter(lambda n, keep=keep: n in keep)
        ours = {
            "set": whole.order(),
            "kept": kept.order(),
            "dropped": whole.filter(lambda n, keep=keep: n not in keep).order(),
            "kept_mapped": kept.map(lambda n: n, java_string_hash).order(),
        }
        assert ours == kafka_oracle.set_orders(names, keep), (
            f"seed {SEED} (KGROUP_ORACLE_SEED), run {run}: {names}"
        )
