"""The Spark side of ``kgroup demo`` and ``kgroup simulate --compare``.

* :mod:`~kgroup.spark.demo.events` — the demo's skewed synthetic events;
* :mod:`~kgroup.spark.demo.roundtrip` — the demo's pipeline stage: events written to Kafka with the
  ``kgroup`` sink and read back with the source;
* :mod:`~kgroup.spark.demo.sweep` — simulation sweeps, one Spark task per simulation.
"""
