"""The client tests take unique names from the differential suite (``tests/apache_kafka``)."""

from apache_kafka.conftest import names

__all__ = ["names"]
