"""Issue 22: the two fault scenarios in which a Stable generation gave a member partitions of a topic
it had dropped (static members, eager ``sticky``, a ``subscribe`` event).

Kafka does this (docs/member.md, "A changed subscription and eager sticky's stale claims"): the member
dropped the topic while its JoinGroup was in flight, refused the assignment made from its old
subscription (``onJoinComplete`` returns before ``assignor.onAssignment``), so its sticky user data
still claims the old partitions at an old generation; the leader's ``StickyAssignor`` hands such a
stale claim back to its previous owner. The member refuses again — a rejoin loop that lasts as long
as the claim is stale and the member underloaded. What Kafka guarantees holds: no member ever takes
a partition outside its subscription (checked at every assignment), and everything else in the
Stable assignments is sound. The stale claims handed back are counted in
``outside_subscription_ms`` and logged (``assigned_outside_subscription``), not as violations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgroup.sim import load_scenario, simulate

SCENARIOS = Path(__file__).parent / "scenarios"
REFUSED = "received assignment does not match the current subscription"


def _refusals(events: list[dict[str, Any]], consumer: str) -> list[int]:
    return [
        e["t_ms"]
        for e in events
        if e["kind"] == "rejoin_requested" and e["consumer"] == consumer and e["reason"] == REFUSED
    ]


def test_static_leader_that_drops_a_topic_gets_its_stale_claim_back() -> None:
    """Scenario 1: c2 (static, the leader) owned t1-4, -11, -18, -20 in generation 3 and drops t1 at
    63.4 s while its JoinGroup is in flight. Generation 4 is assigned from its old subscription and
    refused; from generation 5 on its own StickyAssignor hands its stale t1 claim back to it."""
    result = simulate(load_scenario(SCENARIOS / "issue22_static_leader_drops_topic.yaml"))
    m = result.metrics
    assert m["invariant_violation_count"] == 0, m["invariant_violations"]
    assert m["double_owned_ms"] == 0
    handed_back = [e for e in result.events if e["kind"] == "assigned_outside_subscription"]
    assert [e["generation"] for e in handed_back] == [5, 6, 8]
    assert {e["member_id"].split("-")[0] for e in handed_back} == {"c2"}
    stale_claim = {"t1-4", "t1-11", "t1-18", "t1-20"}
    assert all(set(e["partitions"]) <= stale_claim for e in handed_back), handed_back
    assert m["outside_subscription_ms"] > 0
    # (the milliseconds as the run orders same-millisecond events: kgroup.sim.scheduler.event_tie)
    assert _refusals(result.events, "c2") == [70079, 80338, 90282]
    # c2 never took a t1 partition after dropping the topic
    taken = [o for o in result.ownership if o["member"] == "c2" and o["t_ms"] > 63_354 and o["assigned"]]
    assert all(tp.startswith("t0-") for o in taken for tp in o["assigned"]), taken


def test_static_follower_that_drops_topics_refuses_every_generation_to_the_end() -> None:
    """Scenario 2: c4 (static, a follower) drops t0 and t1 at 131 s while its JoinGroup is in flight.
    Every generation from 5 to the end of the run (11) gives it its stale t0/t1 claim back; it
    refuses each one and the group rebalances every ~5 s: Kafka's rejoin loop, never settling."""
    result = simulate(load_scenario(SCENARIOS / "issue22_static_follower_drops_topic.yaml"))
    m = result.metrics
    assert m["invariant_violation_count"] == 0, m["invariant_violations"]
    assert m["double_owned_ms"] == 0
    handed_back = [e for e in result.events if e["kind"] == "assigned_outside_subscription"]
    assert [e["generation"] for e in handed_back] == [5, 6, 7, 8, 9, 10, 11]
    assert {e["member_id"].split("-")[0] for e in handed_back} == {"c4"}
    assert all(p.split("-")[0] in ("t0", "t1") for e in handed_back for p in e["partitions"])
    assert m["outside_subscription_ms"] > 0
    refusals = _refusals(result.events, "c4")
    assert len(refusals) == 8 and refusals[0] == 144728 and refusals[-1] > 175_000
    assert m["time_to_stable_ms"][-1] is None  # the subscribe event never settles
    assert m["final_assignment"]["c4"] == ""
