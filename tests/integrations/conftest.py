"""Integration tests run kafka-python and aiokafka against kgroup's broker and Apache Kafka (the
differential suite's ``target`` and ``names`` fixtures, from ``tests/apache_kafka``)."""

from apache_kafka.conftest import names, target
from kafka_python_sockets import _collect_refused_client_sockets

__all__ = ["_collect_refused_client_sockets", "names", "target"]
