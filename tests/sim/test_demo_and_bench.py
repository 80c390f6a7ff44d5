"""The demo's rebalance stage (data + report sections) and ``kgroup bench simulate``."""

from __future__ import annotations

import json
import subprocess
import sys

from kgroup.report import Image, Report, Table
from kgroup.report.timeline import RebalanceStageResult
from kgroup.sim import parse_scenario
from kgroup.sim.demo_stage import demo_scenario, run_rebalance_stage


def test_rebalance_stage_renders_a_comparison_and_two_timelines() -> None:
    scenario = parse_scenario(
        {
            "name": "mini",
            "duration_ms": 60_000,
            "topics": {"t": 6},
            "consumers": [{"count": 3, "prefix": "c", "topics": ["t"]}],
            "events": [{"at_ms": 20_000, "kind": "restart", "consumer": "c1", "downtime_ms": 2_000}],
        }
    )
    data = run_rebalance_stage(scenario=scenario, seeds=1)
    assert len(data.rows) == 14 and len(data.summary) == 14  # classic eager, cooperative; consumer
    assert {label for label, _ in data.skipped} == {
        "range/cooperative",
        "roundrobin/cooperative",
        "sticky/cooperative",
    }
    assert all(r["double_owned_ms"] == 0 and r["invariant_violations"] == 0 for r in data.rows)
    result = RebalanceStageResult(data)
    assert json.loads(json.dumps(result.to_json()))["summary"] == data.summary
    assert "14 runs of mini" in result.summary_lines()[0]
    sections = result.report_sections()
    assert [s.title for s in sections] == [
        "Rebalances compared",
        "Scenario",
        "Timeline: range/eager/dynamic",
        "Timeline: cooperative-sticky/cooperative/dynamic",
        "Timeline: uniform/consumer/dynamic",
    ]
    assert any(isinstance(b, Table) for b in sections[0].blocks)
    events = [b for b in sections[1].blocks if isinstance(b, Table)]
    assert events and events[0].rows == (("20 s", "restart c1, 2 s down"),)
    # each timeline: a pointer to the interactive page beside the report, then the chart
    assert all("timelines.html" in s.blocks[0].text and isinstance(s.blocks[1], Image) for s in sections[2:])
    assert set(result.report_attachments()) == {"timelines.html"}
    report = Report(title="demo")
    report.extend(sections)
    assert "Rebalances compared" in report.to_html()


def test_demo_scenario_is_valid_and_busy() -> None:
    sc = demo_scenario(7)
    assert sc.seed == 7 and [e.kind for e in sc.events] == ["rolling_restart", "crash", "scale"]


def test_bench_simulate_reports_median_and_counts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kgroup", "bench", "simulate", "--members", "4", "--partitions", "16",
         "--minutes", "3", "--runs", "2", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out["runs"]) == 2 and out["median_wall_s"] > 0
    assert out["steps"] > 0 and out["rebalances"] >= 4 and out["invariant_violations"] == 0
