"""The server assignors' fast paths: the same answers as the step-by-step builders, over integer arrays.

``RangeAssignor.assign`` and ``UniformAssignor.assign`` (both of its builders) run these; each class's
``assign_reference`` is Kafka's algorithm over Python objects, the readable spec the fast path is
tested against (``tests/group/server_assignors/test_fast_paths.py``) besides Kafka's own classes
(``tests/apache_kafka/test_server_assignors.py``). Topics become dense indices, members positions,
equal subscriptions one class; the loops are numba kernels (compiled once, cached on disk, warmed by
``python -m kgroup.kernels``); Java's ``HashMap``/``HashSet`` iteration order — which Kafka's answer and
the coordinator's next round depend on — is computed by :mod:`~kgroup.group.assignors.fast.javamaps`.
Imported only when an assignor runs (numba is a heavy import).
"""
