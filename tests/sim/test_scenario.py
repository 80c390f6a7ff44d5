"""Scenario files: the documented example parses; every kind of mistake gets a one-line error."""

from __future__ import annotations

from typing import Any

import pytest

from kgroup.model import KgroupError
from kgroup.sim.scenario import parse_scenario, scenario_from_text
from kgroup.sim.variants import compare_variants, list_protocol, with_overrides

ISSUE_EXAMPLE = """
seed: 7
duration_ms: 600000
topics: {orders: 24, payments: 6}
group:
  assignors: [cooperative-sticky]
  session_timeout_ms: 45000
  heartbeat_interval_ms: 3000
  max_poll_interval_ms: 300000
  initial_rebalance_delay_ms: 3000
consumers:
  - {id: c1, topics: [orders, payments], static: true, rack: a}
  - {count: 5, prefix: w, topics: [orders]}
network: {latency_ms: 1, jitter_ms: 0, loss: 0.0}
workload: {produce_per_partition_per_s: 100, consume_per_consumer_per_s: 2000}
events:
  - {at_ms: 60000, kind: restart, consumer: c1, downtime_ms: 5000}
  - {at_ms: 120000, kind: crash, consumer: w1}
  - {at_ms: 200000, kind: rolling_restart, consumers: all, gap_ms: 20000, downtime_ms: 5000}
"""


def base() -> dict[str, Any]:
    return {
        "duration_ms": 10000,
        "topics": {"t": 4},
        "consumers": [{"id": "a", "topics": ["t"]}],
    }


def test_issue_example_parses() -> None:
    sc = scenario_from_text(ISSUE_EXAMPLE)
    assert sc.seed == 7
    assert sc.topics == (("orders", 24), ("payments", 6))
    assert [c.id for c in sc.consumers] == ["c1", "w0", "w1", "w2", "w3", "w4"]
    assert sc.consumers[0].static and sc.consumers[0].rack == "a"
    assert not sc.consumers[1].static
    assert [e.kind for e in sc.events] == ["restart", "crash", "rolling_restart"]
    assert sc.events[2].consumers is None and sc.events[2].gap_ms == 20000
    assert sc.group.assignors == ("cooperative-sticky",)


def test_round_trip_through_plain_data() -> None:
    sc = scenario_from_text(ISSUE_EXAMPLE, name="x")
    assert parse_scenario(sc.to_data()) == sc


def test_defaults_are_kafkas() -> None:
    sc = parse_scenario(base())
    g = sc.group
    assert (g.session_timeout_ms, g.heartbeat_interval_ms, g.max_poll_interval_ms) == (45000, 3000, 300000)
    assert g.assignors == ("range", "cooperative-sticky")
    assert g.auto_commit_interval_ms == 5000 and g.enable_auto_commit
    assert g.initial_rebalance_delay_ms == 3000
    assert sc.workload.auto_offset_reset == "latest"


def test_per_consumer_network_round_trips() -> None:
    data = base()
    data["consumers"] = [{"id": "a", "topics": ["t"], "network": {"latency_ms": 40, "loss": 0.1}}]
    sc = parse_scenario(data)
    assert sc.consumers[0].network is not None and sc.consumers[0].network.latency_ms == 40
    assert parse_scenario(sc.to_data()) == sc
    data["consumers"] = [{"id": "a", "topics": ["t"], "network": {"loss": 3}}]
    with pytest.raises(KgroupError, match=r"^consumers\[0\]\.network\.loss: is 3; give a probability"):
        parse_scenario(data)


def test_events_are_sorted_by_time_stably() -> None:
    data = base()
    data["events"] = [
        {"at_ms": 500, "kind": "crash", "consumer": "a"},
        {"at_ms": 100, "kind": "start", "consumer": "a"},
        {"at_ms": 500, "kind": "start", "consumer": "a"},
    ]
    assert [(e.at_ms, e.kind) for e in parse_scenario(data).events] == [
        (100, "start"),
        (500, "crash"),
        (500, "start"),
    ]


def test_scale_creates_ids_later_events_may_use() -> None:
    data = base()
    data["events"] = [
        {"at_ms": 100, "kind": "scale", "count": "+2", "topics": ["t"]},
        {"at_ms": 200, "kind": "crash", "consumer": "scale-1"},
        {"at_ms": 300, "kind": "scale", "count": -1},
    ]
    sc = parse_scenario(data)
    assert sc.events[0].count == 2 and sc.events[2].count == -1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bogus": 1}, "scenario.bogus: is not a known field; use one of:"),
        ({"duration_ms": 0}, "duration_ms: is 0; give a whole number between 1 and"),
        ({"duration_ms": "long"}, "duration_ms: is 'long'; give a whole number"),
        ({"topics": {}}, "topics: is {}; give a mapping topic name -> partition count"),
        ({"topics": {"t": 0}}, "topics.t: is 0; give a whole number between 1 and"),
        ({"group": {"assignors": ["rang"]}}, "group.assignors[0]: 'rang' is not an assignor; use one of:"),
        ({"group": {"session_timeout_ms": 3000}}, "group.heartbeat_interval_ms: 3000 is not below"),
        ({"group": {"session_timeout_ms": 5000, "heartbeat_interval_ms": 1000}}, "group.session_timeout_ms"),
        ({"group": {"colour": "red"}}, "group.colour: is not a known field"),
        ({"consumers": []}, "consumers: is []; give a non-empty list of consumers"),
        ({"consumers": [{"id": "a", "topics": ["nope"]}]}, "consumers[0].topics[0]: topic 'nope' is not in"),
        ({"consumers": [{"id": "a"}]}, "consumers[0].topics: is missing"),
        ({"consumers": [{"topics": ["t"]}]}, "consumers[0]: needs exactly one of 'id' or 'count'"),
        ({"consumers": [{"id": "a", "topics": ["t"]}] * 2}, "consumers[1]: consumer id 'a' is used twice"),
        ({"consumers": [{"id": "a", "topics": ["t"], "static": "yes"}]}, "consumers[0].static: is 'yes'"),
        ({"network": {"loss": 1.0}}, "network.loss: is 1.0; give a probability"),
        ({"network": {"latency_ms": -1}}, "network.latency_ms: is -1"),
        ({"workload": {"auto_offset_reset": "none"}}, "workload.auto_offset_reset: is 'none'; use latest"),
        (
            {"events": [{"at_ms": 1, "kind": "reboot"}]},
            "events[0].kind: is 'reboot'; use one of: start, stop",
        ),
        (
            {"events": [{"at_ms": 1, "kind": "crash"}]},
            "events[0].consumer: is missing (a crash event needs it)",
        ),
        ({"events": [{"at_ms": 1, "kind": "crash", "consumer": "zz"}]}, "events[0].consumer: consumer 'zz'"),
        ({"events": [{"at_ms": 99999, "kind": "crash", "consumer": "a"}]}, "events[0].at_ms: is 99999"),
        (
            {"events": [{"at_ms": 1, "kind": "crash", "consumer": "a", "topic": "t"}]},
            "events[0].topic: is not",
        ),
        ({"events": [{"at_ms": 1, "kind": "scale", "count": 0}]}, "events[0].count: is 0; give +N"),
        ({"events": [{"at_ms": 1, "kind": "scale", "count": 2}]}, "events[0].topics: is missing"),
        ({"events": [{"at_ms": 1, "kind": "add_partitions", "topic": "x", "count": 1}]}, "events[0].topic:"),
        (
            {"events": [{"at_ms": 1, "kind": "slow_poll", "consumer": "a"}]},
            "events[0].duration_ms: is missing",
        ),
        ({"events": [{"at_ms": 1, "kind": "rolling_restart", "consumers": "some"}]}, "events[0].consumers"),
        ({"events": "none"}, "events: is 'none'; give a list of events"),
    ],
)
def test_bad_fields_get_one_line_errors(change: dict[str, Any], message: str) -> None:
    data = base()
    data.update(change)
    with pytest.raises(KgroupError) as err:
        parse_scenario(data)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(message), text


def test_unreadable_yaml() -> None:
    with pytest.raises(KgroupError, match=r"scenario: YAML is not readable at line \d+ \("):
        scenario_from_text("duration_ms: 1\ntopics: {a: [\n")


def test_protocol_overrides_follow_kafkas_rules() -> None:
    sc = parse_scenario(base())
    coop = with_overrides(sc, assignors=["cooperative-sticky"], protocol="cooperative")
    assert coop.group.assignors == ("cooperative-sticky",)
    assert list_protocol(coop.group.assignors).name == "COOPERATIVE"
    eager = with_overrides(sc, assignors=["cooperative-sticky"], protocol="eager")
    assert eager.group.assignors == ("cooperative-sticky", "range")
    assert list_protocol(eager.group.assignors).name == "EAGER"
    with pytest.raises(KgroupError, match=r"^--protocol: cooperative needs every assignor.*'range'"):
        with_overrides(sc, assignors=["range"], protocol="cooperative")
    static = with_overrides(sc, membership="static", seed=3)
    assert all(c.static for c in static.consumers) and static.seed == 3


def test_compare_variants_skip_what_kafka_cannot_run() -> None:
    runnable, skipped = compare_variants()
    labels = [v.label for v in runnable]
    assert "cooperative-sticky/cooperative/static" in labels
    assert "range/eager/dynamic" in labels
    assert not any(label.startswith("range/cooperative") for label in labels)
    assert sorted(v.label for v, _ in skipped) == [
        "range/cooperative",
        "roundrobin/cooperative",
        "sticky/cooperative",
    ]
    # the consumer protocol (KIP-848) with its two server assignors, dynamic and static
    assert [v.label for v in runnable if v.protocol == "consumer"] == [
        "uniform/consumer/dynamic",
        "uniform/consumer/static",
        "range/consumer/dynamic",
        "range/consumer/static",
    ]
    # and the same consumers as a share group (KIP-932): one row, a share consumer is never static
    assert [v.label for v in runnable if v.protocol == "share"] == ["simple/share"]
    assert len(runnable) == 15


def _with_events(*events: dict[str, Any], consumers: int = 3) -> dict[str, Any]:
    data = base()
    data["consumers"] = [{"count": consumers, "prefix": "c", "topics": ["t"]}]
    data["events"] = list(events)
    return data


def test_scaling_down_more_consumers_than_are_deployed_is_noted() -> None:
    from kgroup.sim.runner import simulate
    from kgroup.sim.scenario import no_op_events

    sc = parse_scenario(_with_events({"at_ms": 1000, "kind": "scale", "count": -10}))
    assert no_op_events(sc) == ["scale -10 at 1000 ms stops at most 3: only 3 consumer(s) are deployed then"]
    # documented behaviour: the 3 running consumers are stopped, nothing else happens
    stopped = [e for e in simulate(sc).events if e["kind"] == "scale"]
    assert stopped and stopped[0]["consumers"] == ["c2", "c1", "c0"]
    # stopped consumers are not deployed; scale-ups are
    two_stopped = _with_events(
        {"at_ms": 1000, "kind": "stop", "consumer": "c0"},
        {"at_ms": 2000, "kind": "stop", "consumer": "c1"},
        {"at_ms": 3000, "kind": "scale", "count": -3},
    )
    assert no_op_events(parse_scenario(two_stopped)) == [
        "scale -3 at 3000 ms stops at most 1: only 1 consumer(s) are deployed then"
    ]
    ok = _with_events(
        {"at_ms": 1000, "kind": "scale", "count": 2, "topics": ["t"]},
        {"at_ms": 2000, "kind": "scale", "count": -5},
    )
    assert no_op_events(parse_scenario(ok)) == []


def test_crashing_a_consumer_that_is_already_down_is_noted() -> None:
    from kgroup.sim.scenario import no_op_events

    twice = _with_events(
        {"at_ms": 1000, "kind": "crash", "consumer": "c1"},
        {"at_ms": 2000, "kind": "crash", "consumer": "c1"},
    )
    assert no_op_events(parse_scenario(twice)) == [
        "crash of 'c1' at 2000 ms does nothing: it is crashed earlier and not started since"
    ]
    stopped = _with_events(
        {"at_ms": 1000, "kind": "stop", "consumer": "c1"},
        {"at_ms": 2000, "kind": "crash", "consumer": "c1"},
    )
    assert no_op_events(parse_scenario(stopped)) == ["crash of 'c1' at 2000 ms does nothing: it is stopped"]
    data = _with_events({"at_ms": 1000, "kind": "crash", "consumer": "c0"})
    data["consumers"] = [{"id": "c0", "topics": ["t"], "autostart": False}]
    assert no_op_events(parse_scenario(data)) == ["crash of 'c0' at 1000 ms does nothing: it is stopped"]
    # after a start, a restart or a rolling restart the consumer is up again and may crash
    again = _with_events(
        {"at_ms": 1000, "kind": "crash", "consumer": "c1"},
        {"at_ms": 2000, "kind": "start", "consumer": "c1"},
        {"at_ms": 3000, "kind": "crash", "consumer": "c1"},
        {"at_ms": 4000, "kind": "rolling_restart", "consumers": "all", "gap_ms": 100},
        {"at_ms": 6000, "kind": "crash", "consumer": "c1"},
        {"at_ms": 7000, "kind": "restart", "consumer": "c1"},
        {"at_ms": 8000, "kind": "crash", "consumer": "c1"},
    )
    assert no_op_events(parse_scenario(again)) == []


def test_subscribing_a_stopped_consumer_changes_what_it_subscribes_to_when_it_starts() -> None:
    """Documented behaviour (docs/simulator.md): not an error — stop, subscribe, start is how a
    consumer is redeployed with another subscription."""
    from kgroup.sim.runner import simulate

    data = _with_events(
        {"at_ms": 1000, "kind": "stop", "consumer": "c0"},
        {"at_ms": 2000, "kind": "subscribe", "consumer": "c0", "topics": ["u"]},
        {"at_ms": 3000, "kind": "start", "consumer": "c0"},
        consumers=1,
    )
    data["topics"] = {"t": 2, "u": 3}
    data["duration_ms"] = 20000
    result = simulate(parse_scenario(data))
    final = result.metrics["final_assignment"]
    assert final == {"c0": "u[0-2]"}  # the new subscription only: t is no longer subscribed


def test_a_key_given_twice_is_an_error_but_yaml_merge_keys_still_work() -> None:
    with pytest.raises(
        KgroupError, match=r"^scenario: key 'loss' appears twice in one mapping at line 5; keep one"
    ):
        scenario_from_text(
            "duration_ms: 1000\ntopics: {t: 1}\nconsumers: [{id: a, topics: [t]}]\n"
            "network: {loss: 0.1,\n  loss: 0.2}\n"
        )
    sc = scenario_from_text(
        "duration_ms: 1000\ntopics: {t: 1}\nconsumers:\n  - &c {id: a, topics: [t]}\n  - {<<: *c, id: b}\n"
    )
    assert [c.id for c in sc.consumers] == ["a", "b"]
