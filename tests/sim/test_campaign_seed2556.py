"""Campaign seed 2556: a static member cut off through a whole generation rejoins the next one still
holding its old partitions, one of which the missed generation gave to another member.

Kafka does the same (docs/simulator.md, "A zombie that rejoins"): the coordinator keeps a static
member that did not rejoin and hands the leader its last JoinGroup's metadata (which claims nothing),
so the missed generation may give its partitions away; the member, never told of an error, keeps its
generation and partitions and joins the next generation with them; that generation's leader gives
the partition to the newer claim, and the member revokes it when its SyncGroup answer comes. Until
then its claim is a zombie claim: counted in ``zombie_overlap_ms``, not as double ownership.
"""

from __future__ import annotations

import copy
from typing import Any

from kgroup.sim import parse_scenario, simulate
from kgroup.sim.campaign import campaign_scenario, check_scenario
from kgroup.sim.ownership import OwnershipTracker, given_away_while_missing

#: campaign seed 2556, shrunk (kgroup.sim.campaign.shrink) while it still showed the double ownership
SHRUNK: dict[str, Any] = {
    "seed": 2556,
    "duration_ms": 117_000,
    "topics": {"t0": 1, "t1": 1, "t2": 2},
    "group": {
        "assignors": ["cooperative-sticky"],
        "session_timeout_ms": 44_000,
        "heartbeat_interval_ms": 14_666,
        "max_poll_interval_ms": 30_000,
        "enable_auto_commit": False,
    },
    "consumers": [
        {"id": "c0", "topics": ["t0", "t1", "t2"]},
        {"count": 1, "prefix": "f", "topics": ["t0", "t1", "t2"], "static": True, "autostart": False},
    ],
    "network": {"latency_ms": 1},
    "events": [
        {"at_ms": 1000, "kind": "start", "consumer": "f0"},
        {"at_ms": 40_000, "kind": "slow_poll", "consumer": "f0", "duration_ms": 19_000},
        {"at_ms": 40_111, "kind": "add_partitions", "topic": "t1", "count": 2},
        {"at_ms": 57_000, "kind": "network_partition", "consumer": "f0", "duration_ms": 27_000},
    ],
}


def test_seed_2556_has_no_violation() -> None:
    run = check_scenario(campaign_scenario(2556), 2556)
    assert run.crashed is None
    assert run.violation_count == 0, run.violations
    assert run.double_owned_ms == 0


def test_a_static_member_cut_off_through_a_generation_rejoins_as_a_zombie_of_what_it_missed() -> None:
    result = simulate(parse_scenario(copy.deepcopy(SHRUNK)))
    m = result.metrics
    joined = {(e["consumer"], e["generation"]) for e in result.events if e["kind"] == "joined_group"}
    # f0 took part in generation 1, missed 2 (stuck in poll(), then cut off) and joined 3
    assert ("f0", 1) in joined and ("f0", 2) not in joined and ("f0", 3) in joined
    assert ("c0", 2) in joined
    # the static member was not removed: it came back under its own member id, with no new one
    ids = {e["member_id"] for e in result.events if e["kind"] == "joined_group" and e["consumer"] == "f0"}
    assert len(ids) == 1
    assert m["invariant_violation_count"] == 0, m["invariant_violations"]
    assert m["double_owned_ms"] == 0
    # the overlap is there (generation 2 and f0's join of 3), counted where Kafka's allowed ones are
    assert m["zombie_overlap_ms"] > 0


def test_only_holds_begun_in_a_missed_generation_make_a_carried_claim_stale() -> None:
    carried = frozenset({0, 1, 2, 3})
    others = [
        (frozenset({0}), {0: 2}),  # given to another member in generation 2, which the member missed
        (frozenset({1}), {1: 1}),  # held since generation 1, as the member's: a double claim
        (frozenset({2}), {2: 3}),  # given in generation 3 itself, which the member joins: a double
        (frozenset({5}), {5: 2}),  # not the member's
    ]
    assert given_away_while_missing(carried, others, last=1, generation=3) == {0}
    # a member that missed nothing has no stale claim
    assert given_away_while_missing(carried, others, last=2, generation=3) == frozenset()


def test_a_stale_partition_is_a_zombie_claim_and_anything_else_stays_double() -> None:
    own = OwnershipTracker()
    own.add_partitions(2, 0)
    held = frozenset({0, 1})
    own.update_claims("f0", frozenset(), held, False, False, 0)  # a zombie: it missed a generation
    own.update_claims("f1", frozenset(), frozenset({0}), True, False, 0)  # given partition 0 meanwhile
    assert own.n_overlap == 1
    own.account(10)
    # f0 rejoins (its JoinGroup answer) holding both; partition 0 stays a zombie claim
    own.update_claims("f0", held, held, True, False, 10, frozenset({0}))
    assert own.n_double == 0 and own.n_overlap == 1 and own.double_owned() == []
    own.account(36)
    assert own.zombie_overlap_ms == 36 and own.double_ms == 0
    # had f0's claim on partition 0 not been stale, the same claims are double ownership
    own.update_claims("f0", held, held, True, True, 36, frozenset(), frozenset({0}))
    assert own.n_double == 1 and own.double_owned() == [(0, ["f0", "f1"])]
    # its SyncGroup answer revokes partition 0: f1 is the only owner
    own.account(40)
    assert own.double_ms == 4
    own.update_claims("f0", held, frozenset({1}), True, True, 40)
    assert own.n_double == 0 and own.n_overlap == 0 and own.n_zombie == 0
