"""Kafka's transaction coordinator (KIP-98, KIP-360, KIP-890), pure: the decisions of Apache Kafka 4.4.0's
``TransactionCoordinator`` with the time passed in and every effect returned as a value.

- :mod:`.state`: the transaction states and their legal transitions, the transaction versions;
- :mod:`.metadata`: one transactional id's metadata and its transitions (``TransactionMetadata``);
- :mod:`.records`: the ``__transaction_state`` records (``TransactionLogKey`` / ``TransactionLogValue``),
  byte for byte, and the Java set order Kafka writes a transaction's partitions in;
- :mod:`.coordinator`: the coordinator (requests, replies, records, marker and timer effects, replay);
- :mod:`.api`: the requests, answers and effects the coordinator speaks.

The package imports nothing here: import its modules.
"""
