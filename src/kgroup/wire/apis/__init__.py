"""Kafka's group APIs between kgroup's typed messages (:mod:`kgroup.messages`) and kio's wire entities:
one module per API, both directions, every version kgroup speaks.

Each module has ``request_to_wire`` / ``response_from_wire`` (what a client does) and
``request_from_wire`` / ``response_to_wire`` (what the broker does), so the broker and kgroup's client
run the same translation, and one round-trip test per API and version checks both
(``tests/wire/test_apis_round_trip.py``). Hand-written code is left only where a version changes
the shape (JoinGroup v0 has no rebalance timeout; LeaveGroup v0-v2 name one member; a protocol name
before JoinGroup v7 is not nullable; OffsetFetch before v8 and FindCoordinator before v4 carry one
group or key where later versions carry a batch). The batched APIs have a typed batch of their own
(:class:`~kgroup.wire.apis.offset_fetch.OffsetFetchBatchRequest`,
:class:`~kgroup.wire.apis.find_coordinator.FindCoordinatorBatchRequest` and their answers): the broker
iterates it, the client builds it with one entry. OffsetCommit's typed request is flat (one entry per
partition); the wire's grouping by topic is done here, both ways.
ConsumerGroupHeartbeat and ConsumerGroupDescribe have theirs in
:mod:`kgroup.wire.consumer_group`.
"""
