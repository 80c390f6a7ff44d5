"""``kgroup.client``: kgroup's pure consumer member as a real group client over the wire.

:class:`GroupConsumer` drives :class:`kgroup.member.ClassicConsumerMember` against any Kafka-protocol broker
(kgroup's own, Apache Kafka, librdkafka's mock cluster): kgroup's exact assignors (built-in and
plug-ins), EAGER and COOPERATIVE rebalancing, static membership and Kafka's rolling upgrade. It joins
groups and commits offsets; it does not fetch records (the Spark source and tests use confluent-kafka
for the data plane). :class:`ShareConsumer` is a share-group consumer (KIP-932), Kafka's
``KafkaShareConsumer``: it reads records, acquired under a lock, and acknowledges them.
"""

from kgroup.client.connection import BrokerConnection, ConnectionLost
from kgroup.client.consumer import ClientError, GroupConsumer, parse_bootstrap
from kgroup.client.security import ClientSecurity, SaslAuthenticationError
from kgroup.client.share_consumer import (
    AcknowledgeType,
    ShareAcknowledgementError,
    ShareConsumer,
    ShareConsumerStateError,
    ShareRecord,
)

__all__ = [
    "AcknowledgeType",
    "BrokerConnection",
    "ClientError",
    "ClientSecurity",
    "ConnectionLost",
    "GroupConsumer",
    "SaslAuthenticationError",
    "ShareAcknowledgementError",
    "ShareConsumer",
    "ShareConsumerStateError",
    "ShareRecord",
    "parse_bootstrap",
]
