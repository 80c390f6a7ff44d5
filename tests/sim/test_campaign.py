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
from kgroup.sim.campaign import ASSIGNOR_LISTS, check_scenario, check_seed, random_scenario, shrink


def test_every_seed_draws_a_valid_deterministic_scenario_covering_the_distribution() -> None:
    kinds: set[str] = set()
    lists: set[tuple[str, ...]] = set()
    statics = losses = resets = 0
    for seed in range(200):
        data = random_scenario(seed)
        assert random_scenario(seed) == data  # deterministic
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
