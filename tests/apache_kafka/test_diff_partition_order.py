"""The differential suite, the order of a topic's partitions: Kafka 4.4.0's broker answers Metadata
with a topic's partitions ascending (its metadata image keeps them in a ``HashMap<Integer, …>``), as
kgroup's broker does; the order a real Java producer walks (``[2, 3, 0, 1]`` and the like) is made by
the client itself, from the ``HashMap<TopicPartition, …>`` its ``MetadataSnapshot`` keeps
(``kgroup.partitioning.client_order``). So a Java producer with ``RoundRobinPartitioner`` sends to the
same partitions, in the same order, on both brokers, and kgroup's model says which.

Topic names are this run's own (``names``); the order depends on the name, so it is computed, not
written down.
"""

from __future__ import annotations

from tests.apache_kafka.conftest import Target
from tests.apache_kafka.wire import Raw, create_topic, metadata

from kgroup.partitioning import ClusterView, ProducerModel, create_partitioner, java_client_partition_order
from kgroup.testing.apache_kafka import KafkaOracle

ROUND_ROBIN = "org.apache.kafka.clients.producer.RoundRobinPartitioner"


def test_a_java_producers_round_robin_follows_the_clients_order(
    target: Target, names: str, kafka_oracle: KafkaOracle
) -> None:
    topic, partitions = f"{names}-rr", 6
    with Raw(target.bootstrap_servers) as raw:
        create_topic(raw, topic, partitions)
        (listed,) = metadata(raw, [topic], auto_create=False)["topics"]
    assert [p["partition_index"] for p in listed["partitions"]] == list(range(partitions))  # the broker's
    order = java_client_partition_order(topic, partitions)
    real = kafka_oracle.produce(
        target.bootstrap_servers, topic, 2 * partitions, partitioner=ROUND_ROBIN, batch_size=1
    )
    assert real.metadata_order == order  # the client's own order, from the ascending answer
    assert list(real.partitions) == list(order) * 2  # one counter value per record, in that order
    model = ProducerModel(
        create_partitioner("round-robin"),
        ClusterView.single(topic, partitions, java_client_order=True),
        batch_size=1,
    )
    modelled = []
    for _ in range(2 * partitions):
        modelled.append(model.send(topic, size_bytes=20))
        model.drain()
    assert modelled == list(real.partitions)
