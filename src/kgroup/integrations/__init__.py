"""kgroup's exact assignors inside the Python clients people already run.

* :mod:`kgroup.integrations.kafka_python` — ``Range``, ``RoundRobin``, ``Sticky``, ``CooperativeSticky``
  for kafka-python 3.0.x (``pip install 'kgroup[kafka-python]'``);
* :mod:`kgroup.integrations.aiokafka` — the same for aiokafka 0.14 (``pip install 'kgroup[aiokafka]'``).

Importing this package imports neither client; each module imports only its own. See
``docs/integrations.md``.
"""

__all__: list[str] = []
