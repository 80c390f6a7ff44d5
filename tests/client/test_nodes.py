"""The client's choice of node (Kafka's ``NetworkClient.leastLoadedNode``)."""

from __future__ import annotations

from kgroup.client.nodes import ConnectionState, least_loaded_node

C = ConnectionState


def test_least_loaded_node_prefers_an_idle_ready_node_from_the_offset() -> None:
    nodes = ["a", "b", "c", "d"]
    states = dict.fromkeys(nodes, C.READY)
    assert least_loaded_node(nodes, {}, states, offset=2) == "c"
    assert least_loaded_node(nodes, {"c": 1}, states, offset=2) == "d"


def test_least_loaded_node_takes_fewest_in_flight_first_found_on_ties() -> None:
    nodes = ["a", "b", "c"]
    states = dict.fromkeys(nodes, C.READY)
    assert least_loaded_node(nodes, {"a": 3, "b": 1, "c": 1}, states, offset=0) == "b"
    assert least_loaded_node(nodes, {"a": 3, "b": 1, "c": 1}, states, offset=2) == "c"


def test_least_loaded_node_full_pipeline_counts_as_blocked() -> None:
    nodes = ["a", "b"]
    states = {"a": C.READY, "b": C.CONNECTING}
    assert least_loaded_node(nodes, {"a": 5}, states, offset=0) == "b"
    assert least_loaded_node(nodes, {"a": 4}, states, offset=0) == "a"


def test_least_loaded_node_then_connecting_then_oldest_connect_attempt() -> None:
    nodes = ["a", "b", "c", "d"]
    states = {"a": C.DISCONNECTED, "b": C.CONNECTING, "c": C.BLOCKED, "d": C.CONNECTING}
    # the last connecting node in scan order wins
    assert least_loaded_node(nodes, {}, states, offset=0) == "d"
    assert least_loaded_node(nodes, {}, states, offset=2) == "b"
    states = {"a": C.DISCONNECTED, "b": C.DISCONNECTED, "c": C.BLOCKED, "d": C.DISCONNECTED}
    attempts = {"a": 500, "b": 100, "d": 100}
    assert least_loaded_node(nodes, {}, states, offset=0, last_connect_attempt_ms=attempts) == "b"
    assert least_loaded_node(nodes, {}, states, offset=3, last_connect_attempt_ms=attempts) == "d"


def test_least_loaded_node_none_when_nothing_qualifies() -> None:
    assert least_loaded_node([], {}, {}, offset=0) is None
    assert least_loaded_node(["a"], {}, {"a": C.BLOCKED}, offset=0) is None
