"""The two defects of issue 9, each as the scenario that showed it."""

from __future__ import annotations

from kgroup.sim import parse_scenario, simulate


def test_restarted_static_leader_notices_new_partitions() -> None:
    """Defect 2: two static range consumers; the leader crash-restarts (downtime 0) at 30 s and 2
    partitions are added at 60 s. Kafka 4.0 answers the returning static leader with skip_assignment
    and the member list (JoinGroup v9, KIP-814): it keeps leading, watches metadata, and the partition
    change makes it rejoin — a rebalance follows and the new partitions get owners."""
    scenario = parse_scenario(
        {
            "seed": 1,
            "duration_ms": 120_000,
            "topics": {"t": 4},
            "group": {"assignors": ["range"]},
            "consumers": [{"count": 2, "prefix": "c", "topics": ["t"], "static": True}],
            "events": [
                {"at_ms": 30_000, "kind": "restart", "consumer": "c0", "downtime_ms": 0, "graceful": False},
                {"at_ms": 60_000, "kind": "add_partitions", "topic": "t", "count": 2},
            ],
        }
    )
    result = simulate(scenario)
    m = result.metrics
    # the leader is c0 (the first to join); make sure of it, or the test would not test the leader
    joined = [e for e in result.events if e["kind"] == "joined_group" and e["consumer"] == "c0"]
    assert joined and joined[0]["leader"] is True
    after_restart = [e for e in joined if e["t_ms"] >= 30_000]
    assert after_restart and after_restart[0]["leader"] is True  # it still leads after coming back
    starts = result.rebalance_starts
    assert any(t >= 60_000 for t in starts), starts  # the partition change caused a rebalance
    assert m["final_assignment"] == {"c0": "t[0-2]", "c1": "t[3-5]"}  # the new t-4, t-5 are owned
    assert m["invariant_violation_count"] == 0, m["invariant_violations"]
    assert m["time_to_stable_ms"][-1] is not None  # the partition change settled
