"""What users' tests and kgroup's own share: an in-process Kafka broker.

* :class:`KafkaBroker` — a context manager for any code (``with KafkaBroker(topics={"orders": 3}) as k:``);
* the pytest plugin (:mod:`kgroup.testing.pytest_plugin`, registered as a ``pytest11`` entry point)
  with the ``kafka_broker`` fixture: the bootstrap servers string of a fresh broker per test.
"""

from kgroup.testing.broker import KafkaBroker

__all__ = ["KafkaBroker"]
