"""Kafka's group APIs between kgroup's typed messages (:mod:`kgroup.messages`) and kio's wire entities:
one module per API, both directions, every version kgroup speaks.

Each module has ``request_to_wire`` / ``response_from_wire`` (what a client does) and
``request_from_wire`` / ``response_to_wire`` (what the broker does), so the broker and kgroup's client
run the same translation, and one round-trip test per API and version checks both
(``tests/wire/test_apis_round_trip.py``). Hand-written code is left only where a version changes
the shape (JoinGroup v0 has no rebalance timeout; LeaveGroup v0-v2 name one member; a protocol name
before JoinGroup v7 is not nullable). ConsumerGroupHeartbeat and ConsumerGroupDescribe have theirs in
:mod:`kgroup.wire.consumer_group`.
"""
