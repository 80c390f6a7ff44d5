"""Every example's claim (examples/README.md), asserted on the real coordinator, members and assignors."""

from __future__ import annotations

from typing import Any

import pytest

from kgroup.model import TopicPartition
from kgroup.sim import SimResult

from .conftest import EXAMPLE_RUNS, EXAMPLES, run_example

pytestmark = EXAMPLE_RUNS


def events(result: SimResult, kind: str, consumer: str | None = None) -> list[dict[str, Any]]:
    return [
        e for e in result.events if e["kind"] == kind and (consumer is None or e.get("consumer") == consumer)
    ]


def rebalances_between(result: SimResult, start: int, end: int) -> int:
    return sum(1 for t in result.rebalance_starts if start <= t < end)


def assert_healthy(result: SimResult) -> None:
    m = result.metrics
    assert m["double_owned_ms"] == 0
    assert m["invariant_violations"] == []
    assert m["final_group_state"] == "Stable"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_runs_healthy_and_is_documented(path: Any) -> None:
    result = run_example(path.name)
    assert_healthy(result)
    readme = (EXAMPLES / "README.md").read_text()
    assert f"`{path.name}`" in readme, f"examples/README.md does not describe {path.name}"


def test_rolling_restart_cooperative_far_below_eager() -> None:
    eager = run_example("rolling-restart.yaml")  # range: EAGER
    coop = run_example("rolling-restart.yaml", assignors=("cooperative-sticky",))
    for result in (eager, coop):
        assert_healthy(result)
    e, c = eager.metrics, coop.metrics
    assert e["final_protocol"] == "range" and c["final_protocol"] == "cooperative-sticky"
    # eager stops every partition at each of the 2 rebalances per restart; cooperative only the
    # partitions that move, so its stop-the-world time is a fraction of eager's
    assert c["unowned_partition_ms"] < 0.4 * e["unowned_partition_ms"]
    # cooperative needs a follow-up rebalance for every handover
    assert c["rebalances"] > e["rebalances"]
    # eager: every member revokes everything at every rebalance
    revoked_all = [o for o in eager.ownership if o["revoked"]]
    assert len(revoked_all) > 16 * 2 * 10


def test_static_restart_within_session_timeout_no_rebalance_same_partitions() -> None:
    result = run_example("static-restart.yaml")
    assert_healthy(result)
    # first restart at 60 s, back at 70 s (within the 45 s session timeout): no rebalance at all
    assert rebalances_between(result, 60_000, 150_000) == 0
    c1 = [o for o in result.ownership if o["member"] == "c1"]
    closed = next(o for o in c1 if o["t_ms"] == 60_000)
    back = next(o for o in c1 if 70_000 <= o["t_ms"] < 150_000 and o["assigned"])
    assert sorted(back["assigned"]) == sorted(closed["revoked"]) and closed["revoked"]
    assert back["generation"] == closed["generation"]  # the same generation: nothing rebalanced
    # second restart at 150 s for 60 s: expired after the session timeout, then a rebalance on return
    assert rebalances_between(result, 150_000 + 40_000, 150_000 + 50_000) == 1
    assert rebalances_between(result, 210_000, 220_000) >= 1
    assert result.metrics["time_to_stable_ms"][0] < 10_000 + 1_000


def test_crash_found_by_session_timeout() -> None:
    result = run_example("crash.yaml")
    assert_healthy(result)
    session = result.scenario.group.session_timeout_ms
    lost = next(o for o in result.ownership if o["member"] == "w1" and o["t_ms"] < 60_000 and o["assigned"])
    owned = len(lost["assigned"])
    # nobody rebalances until w1's session expires (its last heartbeat was at most 3 s before it died)
    assert rebalances_between(result, 60_000, 60_000 + session - 3_000) == 0
    per_partition = result.metrics["unowned_partition_ms"] / owned
    assert session - 3_000 <= per_partition <= session + 4_000
    assert result.metrics["time_to_stable_ms"][0] == pytest.approx(session, abs=4_000)


def test_scale_out_beyond_partition_count_leaves_consumers_idle() -> None:
    result = run_example("scale-out.yaml")
    assert_healthy(result)
    m = result.metrics
    assert m["running_consumers"] == 8 and m["idle_consumers"] == 2
    owned = [p for parts in m["final_assignment"].values() if parts for p in parts.split()]
    assert len(owned) == 6  # every partition has exactly one owner


def assigned_counts(result: SimResult) -> list[int]:
    counts: dict[str, int] = {}
    for o in result.ownership:
        counts[o["member"]] = (
            counts.get(o["member"], 0) + len(o["assigned"]) - len(o["revoked"]) - len(o["lost"])
        )
    return sorted(counts.values())


def test_range_imbalance_across_many_topics() -> None:
    rng = run_example("range-many-topics.yaml")
    rr = run_example("range-many-topics.yaml", assignors=("roundrobin",))
    sticky = run_example("range-many-topics.yaml", assignors=("cooperative-sticky",))
    for result in (rng, rr, sticky):
        assert_healthy(result)
    assert assigned_counts(rng) == [0, 10, 10]
    assert assigned_counts(rr) == [6, 7, 7]
    assert assigned_counts(sticky) == [6, 7, 7]
    # the two loaded Range consumers cannot keep up; shared evenly, three can
    assert rng.metrics["max_lag_records"] > 5 * rr.metrics["max_lag_records"]
    assert rng.lag[-1].position_lag > 10 * rr.lag[-1].position_lag  # and it keeps growing


def test_upgrade_from_range_to_cooperative_sticky() -> None:
    result = run_example("upgrade-to-cooperative.yaml")
    assert_healthy(result)
    joins = events(result, "joined_group")
    first_bounce_end = 60_000 + 5 * 20_000
    # while some members list only range, the vote keeps range
    assert {e["protocol"] for e in joins if e["t_ms"] < first_bounce_end} == {"range"}
    # after the second bounce every member is cooperative and the group runs cooperative-sticky
    assert {e["protocol"] for e in joins if e["t_ms"] > 300_000} == {"cooperative-sticky"}
    assert result.metrics["final_protocol"] == "cooperative-sticky"
    # EAGER (first bounce): a member that revokes gives up everything it owns; COOPERATIVE (once the
    # last member restarted with [cooperative-sticky]): members give up only the partitions that move
    full, partial = revocations(result, 60_000, 160_000), revocations(result, 403_000, 600_000)
    assert full and all(gave == owned for gave, owned in full)
    assert partial and all(gave < owned for gave, owned in partial)


def revocations(result: SimResult, start: int, end: int) -> list[tuple[set[str], set[str]]]:
    """(revoked, owned just before) for every revocation by a running member in [start, end)."""
    owned: dict[str, set[str]] = {}
    out: list[tuple[set[str], set[str]]] = []
    for o in result.ownership:
        mine = owned.setdefault(o["member"], set())
        gave = set(o["revoked"])
        closing = any(
            e["kind"] == "restart" and e.get("consumer") == o["member"] and e["t_ms"] == o["t_ms"]
            for e in result.events
        )
        if gave and start <= o["t_ms"] < end and not closing:
            out.append((gave, set(mine)))
        mine -= gave | set(o["lost"])
        mine |= set(o["assigned"])
    return out


def test_slow_consumer_kicked_out_by_max_poll_interval() -> None:
    result = run_example("slow-consumer.yaml")
    assert_healthy(result)
    max_poll = result.scenario.group.max_poll_interval_ms
    left = events(result, "left_group", "c2")
    assert left and "poll timeout" in left[0]["reason"]
    # the poll timer runs from c2's last poll(), made just before its processing got stuck
    assert 60_000 + max_poll <= left[0]["t_ms"] <= 60_000 + max_poll + 3_000
    # the others take over c2's partitions, then c2 rejoins once its loop resumes
    assert rebalances_between(result, left[0]["t_ms"], left[0]["t_ms"] + 5_000) == 1
    assert rebalances_between(result, 420_000, 430_000) >= 1
    assert result.metrics["final_assignment"]["c2"]
    # until it polls again c2 still holds partitions of a generation that is gone: zombie time
    assert result.metrics["zombie_owned_ms"] > 0
    assert TopicPartition.parse("orders-0")  # partitions keep Kafka's naming in every output
