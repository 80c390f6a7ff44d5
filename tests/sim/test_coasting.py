"""Steady heartbeats in closed form (kgroup.sim.coasting, issue 37 item 3): the same results as the
step-by-step run, byte for byte, on every example, the fault scenarios kept here, campaign seeds,
bench sizes, campaign seeds on links that let members coast, and cases made to reach each of the
coasting's edges — and on a steady group the
closed form does carry out most of the heartbeat steps (so the equality is not that of a run that
never coasted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kgroup.cli.bench_simulate import bench_scenario
from kgroup.sim import Scenario, load_scenario
from kgroup.sim.campaign import base_scenario, random_consumer_scenario, random_scenario
from kgroup.sim.runner import Simulation
from kgroup.sim.scenario import parse_scenario

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"


def _steady(consumers: int, partitions: int, minutes: int, **group: Any) -> dict[str, Any]:
    return {
        "name": f"steady-{consumers}x{partitions}",
        "seed": 3,
        "duration_ms": minutes * 60_000,
        "topics": {"events": partitions},
        "group": {"assignors": ["cooperative-sticky"], **group},
        "consumers": [{"count": consumers, "prefix": "c", "topics": ["events"]}],
        "workload": {"produce_per_partition_per_s": 10, "consume_per_consumer_per_s": 1000},
        "events": [],
    }


def _edges() -> dict[str, dict[str, Any]]:
    """Scenarios written to reach the coasting's edges."""
    out: dict[str, dict[str, Any]] = {}
    # a member's poll timer runs out while the others coast (the look-again before max.poll.interval.ms)
    stalled = _steady(6, 24, 8, max_poll_interval_ms=40_000, session_timeout_ms=10_000)
    stalled["events"] = [{"at_ms": 60_000, "kind": "slow_poll", "consumer": "c2", "duration_ms": 90_000}]
    out["poll timer runs out"] = stalled
    # connection resets land in the middle of coasting rounds; a slower link
    resets = _steady(8, 40, 10, session_timeout_ms=10_000)
    resets["network"] = {"latency_ms": 7, "resets_per_hour": 30}
    out["resets on a 7 ms link"] = resets
    # a session timeout just long enough (S + 2L = 2P on the 1 ms link): each answer renews it just in time
    out["tight session"] = _steady(5, 20, 6, session_timeout_ms=6_000, heartbeat_interval_ms=3_001)
    # a link with jitter (never coasts) beside one without (coasts)
    mixed = _steady(6, 24, 6, session_timeout_ms=10_000)
    mixed["consumers"] = [
        {"count": 3, "prefix": "a", "topics": ["events"]},
        {"count": 3, "prefix": "b", "topics": ["events"], "network": {"latency_ms": 2, "jitter_ms": 3}},
    ]
    out["jitter on half the links"] = mixed
    # commits that land near wake-ups: the auto-commit interval a multiple of the heartbeat's
    out["commits on heartbeats"] = _steady(6, 24, 6, auto_commit_interval_ms=3_000, session_timeout_ms=10_000)
    # eager rebalances and static members through a rolling restart, librdkafka's commit on revoke
    rolling = _steady(10, 40, 8, client="librdkafka", session_timeout_ms=10_000)
    rolling["group"]["assignors"] = ["range"]
    rolling["consumers"][0]["static"] = True
    rolling["events"] = [
        {
            "at_ms": 60_000,
            "kind": "rolling_restart",
            "consumers": "all",
            "gap_ms": 15_000,
            "downtime_ms": 4_000,
        }
    ]
    out["static eager rolling restart"] = rolling
    return out


def _cases() -> dict[str, Scenario]:
    out = {
        f"examples/{p.name}": load_scenario(p)
        for p in sorted(EXAMPLES.glob("*.yaml"))
        if not load_scenario(p).group.share_protocol
    }
    out.update({f"scenarios/{p.name}": load_scenario(p) for p in sorted((HERE / "scenarios").glob("*.yaml"))})
    out["bench 20x200 10min"] = bench_scenario(20, 200, 600_000)
    out.update({name: parse_scenario(data, name=name) for name, data in _edges().items()})
    for seed in range(8):
        out[f"campaign seed {seed}"] = parse_scenario(base_scenario(seed), name=f"campaign-{seed}")
    # the campaign's faults on links that let members coast (most campaign links have jitter or
    # loss); seed 28 caught a commit answered at the very millisecond a heartbeat was due
    for seed in (*range(20), 28, 44, 124):
        data = random_scenario(seed)
        data["network"] = {"latency_ms": 1 + seed % 4}
        for consumer in data["consumers"]:
            consumer.pop("network", None)
        scenario = parse_scenario(data, name=f"campaign-{seed}-clean")
        if not scenario.group.share_protocol:
            out[f"campaign seed {seed}, clean links"] = scenario
    for seed in (1, 2):
        data = random_consumer_scenario(seed)
        out[f"consumer campaign seed {seed}"] = parse_scenario(data, name=data["name"])
    return out


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_coasting_gives_the_step_by_step_results(name: str) -> None:
    scenario = CASES[name]
    stepped = Simulation(scenario, coasting=False)
    coasting = Simulation(scenario, coasting=True)
    assert coasting.run().to_json() == stepped.run().to_json()
    assert coasting.steps == stepped.steps


def test_a_steady_group_coasts_through_most_of_its_heartbeats() -> None:
    """50 members, 10 minutes, nothing happening: a heartbeat round (3 steps) every 3 s per member is
    half the run's steps, and nearly all of them are carried out in closed form."""
    scenario = parse_scenario(_steady(50, 500, 10, session_timeout_ms=10_000), name="steady")
    stepped = Simulation(scenario, coasting=False)
    coasting = Simulation(scenario, coasting=True)
    assert coasting.run().to_json() == stepped.run().to_json()
    heartbeat_steps = 3 * 50 * (600_000 // 3_000)
    assert coasting.coasting is not None
    assert coasting.coasting.steps > 0.9 * heartbeat_steps
    assert coasting.coasting.steps <= heartbeat_steps


def test_the_edge_cases_do_coast() -> None:
    """Each edge scenario reaches the closed form (else its equality would prove nothing about it)."""
    for name, data in _edges().items():
        sim = Simulation(parse_scenario(data, name=name))
        sim.run()
        assert sim.coasting is not None and sim.coasting.steps > 0, name


def test_the_cli_runs_step_by_step_on_request_with_the_same_output() -> None:
    """``kgroup simulate --step-by-step`` prints the same ``--json`` as the default run, and
    ``kgroup bench simulate`` says how many of its steps were carried out in closed form (none
    step by step)."""
    example = str(EXAMPLES / "rolling-restart.yaml")
    runs = [
        subprocess.run(
            [sys.executable, "-m", "kgroup", "simulate", example, "--json", *flag],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        for flag in ([], ["--step-by-step"])
    ]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout and json.loads(runs[0].stdout)["metrics"]["steps"] > 0
    benches = []
    for flag in ([], ["--step-by-step"]):
        done = subprocess.run(
            [sys.executable, "-m", "kgroup", "bench", "simulate", "--members", "10", "--partitions", "40",
             "--minutes", "4", "--runs", "1", "--json", *flag],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        benches.append(json.loads(done.stdout))
    assert benches[0]["steps"] == benches[1]["steps"] and benches[0]["rebalances"] == benches[1]["rebalances"]
    assert benches[0]["closed_form_steps"] > 0 and benches[1]["closed_form_steps"] == 0
    refused = subprocess.run(
        [sys.executable, "-m", "kgroup", "simulate", "--campaign", "2", "--step-by-step"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (
        refused.returncode != 0 and "--step-by-step" in refused.stderr and "Traceback" not in refused.stderr
    )
