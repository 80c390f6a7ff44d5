"""KIP-848's consumer groups on the coordinator: Kafka 4.4's ``ConsumerGroup``, its records
(:mod:`.records`), the heartbeat and target assignment (:mod:`.heartbeat`), reconciliation
(:mod:`.reconcile`), the other requests (:mod:`.requests`) and the metadata image (:mod:`.metadata`).
See ``docs/consumer-protocol.md``. (Nothing is imported here: ``kgroup.group.records`` imports
:mod:`.records`, and the rest imports ``kgroup.group.records``.)"""
