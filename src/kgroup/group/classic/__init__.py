"""The classic group (Kafka's ``ClassicGroup`` and the classic parts of ``GroupMetadataManager``): its
state (:mod:`.group`), the mutators that write its records (:mod:`.mutate`), the JoinGroup
(:mod:`.join`), SyncGroup / Heartbeat / LeaveGroup (:mod:`.membership`) and offset (:mod:`.offsets`)
handlers, the rebalance machinery (:mod:`.rebalance`) and describing, listing, deleting and unloading
(:mod:`.admin`). See ``docs/coordinator.md``. (Nothing is imported here.)"""
