"""KIP-848's consumer groups on the coordinator, one group kind: Kafka 4.4's ``ConsumerGroup``
(:mod:`.group`), what the kind declares to the router (:mod:`.kind`), its timers (:mod:`.timers`),
the heartbeat and target assignment (:mod:`.heartbeat`), reconciliation (:mod:`.reconcile`) and the
other requests (:mod:`.requests`); its records are ``kgroup.group.records.consumer``. See
``docs/consumer-protocol.md``. (Nothing is imported here.)"""
