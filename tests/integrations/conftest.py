"""Integration tests run kafka-python and aiokafka against kgroup's broker."""

from kafka_python_sockets import _collect_refused_client_sockets

__all__ = ["_collect_refused_client_sockets"]
