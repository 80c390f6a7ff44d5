"""Fault campaigns: the distribution, checking, shrinking, and the CLI (a small campaign runs in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from kgroup.sim import parse_scenario, simulate
from kgroup.sim.campaign import (
    ASSIGNOR_LISTS,
    FAMILY_ASSIGNORS,
    base_scenario,
    check_scenario,
    check_seed,
    random_scenario,
    shrink,
)


def test_every_seed_draws_a_valid_deterministic_scenario_covering_the_distribution() -> None:
    """The base distribution (what every seed drew before the subscription-change family)."""
    kinds: set[str] = set()
    lists: set[tuple[str, ...]] = set()
    statics = losses = resets = 0
    for seed in range(200):
        data = base_scenario(seed)
        assert base_scenario(seed) == data  # deterministic
        parse_scenario(data)  # valid
        kinds |= {e["kind"] for e in data["events"]}
        lists.add(tuple(data["group"]["assignors"]))
        statics += data["consumers"][0]["static"]
        losses += "loss" in data["network"]
        resets += "resets_per_hour" in data["network"]
        assert 2 <= sum(c["count"] for c in data["consumers"]) <= 20
    assert kinds == {
        "crash", "restart", "rolling_restart", "scale", "slow_poll", "network_partition",
        "add_partitions", "subscribe", "stop", "start",
    }  # fmt: skip
    assert lists >= set(ASSIGNOR_LISTS) - {("roundrobin",)} | {("range",)}
    assert 30 < statics < 90 and 70 < losses < 130 and 25 < resets < 80


def test_a_small_campaign_has_no_violations() -> None:
    """CI's campaign: 24 seeds, every run checked against the invariants."""
    runs = [check_seed(seed) for seed in range(1000, 1024)]
    failing = [(r.seed, r.crashed, r.violations) for r in runs if r.failed]
    assert failing == []


def test_shrink_keeps_the_failure_and_drops_everything_else() -> None:
    data = random_scenario(7)
    data["events"].append({"at_ms": 20_000, "kind": "crash", "consumer": "c0"})
    data["events"].sort(key=lambda e: e["at_ms"])

    def has_a_crash(candidate: dict[str, Any]) -> bool:  # a stand-in for "the invariant still breaks"
        return any(e["kind"] == "crash" for e in candidate["events"])

    shrunk = shrink(data, has_a_crash)
    assert has_a_crash(shrunk)
    assert [e["kind"] for e in shrunk["events"]] == ["crash"]
    assert shrunk["network"] == {"latency_ms": 1}
    assert all(n == 1 for n in shrunk["topics"].values())
    assert len(shrunk["group"]["assignors"]) == 1
    assert shrunk["duration_ms"] <= max(e["at_ms"] for e in shrunk["events"]) + 60_000
    assert not check_scenario(shrunk).failed  # (the real simulator finds nothing wrong with it)


def test_cli_campaign_reports_counts_and_writes_replayable_failures(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run(
        [sys.executable, "-m", "kgroup", "simulate", "--campaign", "3", "--seed", "5", "--engine", "local",
         "--json", "--failures-dir", str(tmp_path / "f")],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert (summary["scenarios"], summary["seeds"], summary["failed"]) == (3, [5, 7], 0)
    assert summary["failures"] == [] and not (tmp_path / "f").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "kgroup", "simulate", "x.yaml", "--campaign", "3"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert bad.returncode == 2 and "kgroup: error: --campaign" in bad.stderr


def test_a_shrunk_failure_file_replays(tmp_path: Path) -> None:
    """The file a failure leaves is a scenario `kgroup simulate` reads back as the same scenario."""
    data = shrink(random_scenario(3), lambda d: len(d["events"]) > 0)
    path = tmp_path / "campaign-seed-3.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "kgroup", "simulate", str(path), "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    direct = simulate(parse_scenario(data, name="campaign-seed-3"))
    assert out.stdout == direct.to_json()  # the file is the scenario, byte for byte the same run


def _family_cell(data: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(assignor, leader/follower, drop/add) of each subscription change on c0 or a follower."""
    assignor = data["group"]["assignors"][0]
    current: dict[str, set[str]] = {}
    for consumer in data["consumers"]:
        count = consumer.get("count", 1)
        ids = [consumer["id"]] if "id" in consumer else [f"{consumer['prefix']}{k}" for k in range(count)]
        current.update({name: set(consumer["topics"]) for name in ids})
    cells = set()
    for event in data["events"]:
        if event["kind"] != "subscribe" or event["consumer"] not in current:
            continue
        who, new = event["consumer"], set(event["topics"])
        role = "leader" if who == "c0" else "follower"
        if new < current[who]:
            cells.add((assignor, role, "drop"))
        elif new > current[who]:
            cells.add((assignor, role, "add"))
        current[who] = new
    return cells


def test_a_third_of_the_seeds_draw_the_subscription_change_family() -> None:
    """Issue 22's family: static members × subscription changes that drop or add topics × on the
    leader (c0, started first) and on followers × every client-side assignor, each cell many times
    in 200 seeds; every other seed draws exactly its base-distribution scenario."""
    family = 0
    cells: dict[tuple[str, str, str], int] = {}
    for seed in range(200):
        data = random_scenario(seed)
        if data["consumers"][0].get("id") != "c0":
            if seed % 4 == 0:
                assert data == base_scenario(seed)
            continue
        assert random_scenario(seed) == data  # deterministic (valid: random_scenario parses it)
        family += 1
        assert all(c["static"] for c in data["consumers"])
        assert data["group"]["assignors"] in ([a] for a in FAMILY_ASSIGNORS)
        # the leader starts alone; the followers a second later
        starts = [e for e in data["events"] if e["kind"] == "start" and e["at_ms"] == 1000]
        assert {e["consumer"] for e in starts} == {f"f{k}" for k in range(data["consumers"][1]["count"])}
        # every round holds a rebalance open: a follower stuck in poll() across the change
        assert any(e["kind"] == "slow_poll" for e in data["events"]) or data["consumers"][1]["count"] == 1
        for cell in _family_cell(data):
            cells[cell] = cells.get(cell, 0) + 1
    assert 50 < family < 85
    expected = {(a, r, c) for a in FAMILY_ASSIGNORS for r in ("leader", "follower") for c in ("drop", "add")}
    assert set(cells) == expected
    assert all(cells[(a, r, "drop")] >= 5 for a in FAMILY_ASSIGNORS for r in ("leader", "follower")), cells


def test_the_family_lands_a_change_in_flight_on_the_leader() -> None:
    """Campaign seed 11 (family, eager sticky): c0 leads every generation and drops t0 at 51 s while
    f3 is stuck in poll() and a new static member joins; the generation assigned from its old
    subscription is refused, then its own StickyAssignor hands its stale t0 claim (t0-0, t0-6) back
    to it in generations 3, 4 and 5, refused each time — counted, not failed."""
    data = random_scenario(11)
    result = simulate(parse_scenario(data))
    leaders = {e["consumer"] for e in result.events if e["kind"] == "joined_group" and e["leader"]}
    assert leaders == {"c0"}
    refused = [
        e["consumer"]
        for e in result.events
        if e["kind"] == "rejoin_requested"
        and e["reason"] == "received assignment does not match the current subscription"
    ]
    assert refused == ["c0"] * 4
    handed_back = [e for e in result.events if e["kind"] == "assigned_outside_subscription"]
    assert [(e["generation"], e["member_id"][:3], e["partitions"]) for e in handed_back] == [
        (g, "c0-", ["t0-0", "t0-6"]) for g in (3, 4, 5)
    ]
    run = check_scenario(data, 11)
    assert not run.failed and run.outside_subscription_ms > 0
