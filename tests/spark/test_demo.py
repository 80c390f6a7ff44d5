"""``kgroup demo`` end to end on local Spark with a small event count, and the stage framework."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from kgroup.cli import main
from kgroup.demo import DemoConfig, DemoContext, build_report, run_demo
from kgroup.model import KgroupError
from kgroup.partitioning import partition_for_key
from kgroup.report import Paragraph, Section
from kgroup.spark.partitioning.results import NullProgress

#: events of the end-to-end run. What it proves does not grow with the count: every record through the
#: broker and back exactly once, the report's numbers equal to its JSON, the hottest customer on top of
#: its partition; the run's time is mostly per micro-batch and per Spark job, and both counts are fixed
#: (``BATCHES_PER_READ``), so a small run proves the same in less time. The seed fixes every draw.
EVENTS = 4_000


@pytest.mark.spark
def test_demo_writes_a_report_consistent_with_its_json(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = tmp_path / "report"
    with pytest.raises(SystemExit) as exit_info:
        # the rebalance stage is tested on its own below, on a small group
        main(
            [
                "demo",
                "--events",
                str(EVENTS),
                "--report",
                str(report_dir),
                "--seed",
                "5",
                "--rebalance-seeds",
                "0",
                "--json",
            ]
        )
    captured = capsys.readouterr()
    assert exit_info.value.code == 0, captured.err
    data = json.loads(captured.out)

    index = report_dir / "index.html"
    assert data["report"] == str(index)
    page = index.read_text(encoding="utf-8")
    summary_file = json.loads((report_dir / "summary.json").read_text())
    assert summary_file["stages"] == data["stages"] and summary_file["config"] == data["config"]

    assert data["config"]["events"] == EVENTS and data["config"]["seed"] == 5
    assert list(data["stages"]) == ["events", "partitioning", "pipeline"]
    pipeline = data["stages"]["pipeline"]
    # every event went through the embedded broker and came back exactly once
    assert pipeline["produced"] == EVENTS == sum(pipeline["records_per_partition"])
    assert len(pipeline["records_per_partition"]) == 12
    [partition_read] = [r for r in pipeline["reads"] if r["mode"] == "partition"]
    assert partition_read["records"] == EVENTS
    assert partition_read["key_count_mismatches"] == 0
    assert partition_read["duplicate_offsets"] == 0
    assert partition_read["misplaced_keyed"] == 0
    assert partition_read["exactly_once"] is True
    # maxOffsetsPerTrigger bounds each micro-batch, and its per-partition rounding leaves no tail
    # batch of a few records (issue 31: 26 of 1,000,000 cost a fifth micro-batch)
    assert partition_read["batches"] == 4
    assert partition_read["first_batch_seconds"] > 0  # the warm-up the demo's output names
    # per group: 3 Spark members plus a plain confluent-kafka consumer joining mid-stream
    [group_read] = [r for r in pipeline["reads"] if r["mode"] == "group"]
    assert group_read["exactly_once"] is True and group_read["records"] == EVENTS
    assert group_read["records_read_by_spark"] + group_read["records_read_by_the_plain_consumer"] == EVENTS
    assert group_read["records_read_by_the_plain_consumer"] > 0  # it took partitions away
    assert group_read["partitions_the_plain_consumer_took"] == [9, 10, 11]  # range over 4 members
    recorded = pipeline["group_recording"]
    assert recorded is not None and recorded["rebalances"] >= 2  # the first join, then the newcomer
    assert "The Spark job&#x27;s consumer group" in page or "The Spark job's consumer group" in page
    events = data["stages"]["events"]
    part = data["stages"]["partitioning"]
    assert events["events"] == EVENTS
    assert part["records"] == EVENTS
    # ~10% keyless, drawn per event: far from 0 and far from everything (within a quarter of 10%)
    assert 0.075 * EVENTS < part["keyless_records"] < 0.125 * EVENTS
    assert part["keyed_records"] + part["keyless_records"] == EVENTS
    assert set(part["counts"]) == {"12", "16"}
    for n in (12, 16):
        count = part["counts"][str(n)]
        assert len(count["per_partition"]) == n and sum(count["per_partition"]) == EVENTS
        hottest = count["hottest"]
        assert [h["records"] for h in hottest] == sorted(count["per_partition"], reverse=True)[:3]
        for h in hottest:
            assert h["records"] == count["per_partition"][h["partition"]]
            for key in h["top_keys"]:  # every top key really hashes to its partition
                assert partition_for_key(key["key"], n) == h["partition"]
        # the hottest customer (Zipf rank 1) is the top key of its partition
        top_customer = "customer-000001"
        top_partition = partition_for_key(top_customer, n)
        [its_entry] = [h for h in hottest if h["partition"] == top_partition]
        assert its_entry["top_keys"][0]["key"] == top_customer

        # the report shows the same numbers: the chart, the skew, the hot partitions
        assert f'<figure id="chart-{n}"' in page
        chart = page.split(f'<figure id="chart-{n}"')[1].split("</figure>")[0]
        assert "<svg" in chart and f"records per partition — {n} partitions" in chart
        assert f"max/mean = {count['max_over_mean']:.2f}." in chart
        assert f"mean {EVENTS / n:,.0f}" in chart
        for h in hottest:
            assert f'<td class="num">{h["records"]:,}</td>' in page
            assert html.escape(f"{h['top_keys'][0]['key']} ({h['top_keys'][0]['records']:,})") in page
    [moved] = part["moved"]
    assert (moved["from"], moved["to"]) == (12, 16)
    assert f"{moved['keys_moved_share']:.1%}" in page
    assert f"{moved['records_moved_share']:.1%}" in page
    assert moved["uniform_keys_moved_share"] == 0.75  # 1 - min(12, 16) / lcm(12, 16)
    assert "<td>75.0%</td>" in page
    assert f"<dd>{EVENTS:,}</dd>" in page  # the record count among the facts
    # self-contained: nothing is fetched from elsewhere
    assert 'src="http' not in page and 'href="http' not in page and "<metadata>" not in page


class _Recorder:
    def __init__(self, name: str, seen: list[str], needs: str | None = None) -> None:
        self.name = name
        self.title = f"stage {name}"
        self._seen = seen
        self._needs = needs

    def run(self, context: DemoContext) -> Any:
        if self._needs is not None:
            context.result(self._needs)
        self._seen.append(self.name)
        return _Result(self.name)


class _Result:
    def __init__(self, name: str) -> None:
        self.name = name

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name}

    def summary_lines(self) -> list[str]:
        return [self.name]

    def report_sections(self) -> list[Section]:
        return [Section(f"Section {self.name}", (Paragraph(f"from {self.name}"),))]


def test_stages_run_in_order_and_each_adds_report_sections(tmp_path: Path) -> None:
    seen: list[str] = []
    ticks = iter(range(100))
    context = DemoContext(spark=None, config=DemoConfig(events=10))
    stages = [_Recorder("a", seen), _Recorder("b", seen, needs="a")]
    run = run_demo(context, stages, NullProgress(), clock=lambda: float(next(ticks)))
    assert seen == ["a", "b"]
    assert run.to_json()["stages"] == {"a": {"name": "a"}, "b": {"name": "b"}}
    assert run.seconds == (("a", 1.0), ("b", 1.0))
    report = build_report(run)
    titles = [s.title for s in report.sections]
    assert titles == ["Section a", "Section b", "How this report was made"]
    index = report.write(tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text())["stages"]["b"] == {"name": "b"}
    assert "from b" in index.read_text()


def test_a_stage_reading_a_missing_result_fails_clearly() -> None:
    context = DemoContext(spark=None, config=DemoConfig(events=10))
    with pytest.raises(KgroupError, match="demo stage 'a' has not run"):
        run_demo(context, [_Recorder("b", [], needs="a")], NullProgress(), clock=lambda: 0.0)
    with pytest.raises(KgroupError, match="a name is used twice"):
        run_demo(context, [_Recorder("a", []), _Recorder("a", [])], NullProgress(), clock=lambda: 0.0)


def test_demo_config_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(KgroupError, match="grow-to: 12"):
        DemoConfig(partitions=12, grow_to=12)
    with pytest.raises(
        KgroupError, match=r"^null-key-strategy: 'sticky' is not a null-key strategy; choose one of: adaptive"
    ):
        DemoConfig(null_key_strategy="sticky")
    with pytest.raises(KgroupError, match=r"^null-key-strategy: 'keyed' is not a null-key strategy"):
        DemoConfig(null_key_strategy="keyed")  # a partitioner, but it hands null keys to a strategy
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--events", "0"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err == "kgroup: error: events: 0; generate at least 1 event\n"


@pytest.mark.spark
def test_rebalance_stage_runs_the_sweep_on_spark_into_the_report(spark: Any, tmp_path: Path) -> None:
    from kgroup.demo.rebalance import RebalanceStage
    from kgroup.sim import parse_scenario

    scenario = parse_scenario(
        {
            "name": "mini",
            "duration_ms": 60_000,
            "topics": {"t": 6},
            "consumers": [{"count": 3, "prefix": "c", "topics": ["t"]}],
            "events": [{"at_ms": 20_000, "kind": "restart", "consumer": "c1", "downtime_ms": 2_000}],
        }
    )
    context = DemoContext(spark=spark, config=DemoConfig(events=10, rebalance_seeds=1))
    ticks = iter(range(10))
    run = run_demo(
        context, [RebalanceStage(seeds=1, scenario=scenario)], NullProgress(), lambda: float(next(ticks))
    )
    data = run.to_json()["stages"]["rebalance"]
    # one run per strategy x protocol x membership: 10 classic, 4 on the consumer protocol
    assert len(data["runs"]) == len(data["summary"]) == 14
    assert all(r["double_owned_ms"] == 0 and r["invariant_violations"] == 0 for r in data["runs"])
    lines = run.result("rebalance").summary_lines()
    assert lines[0].startswith("rebalance simulations: 14 runs of mini")
    page = build_report(run).write(tmp_path).read_text()
    assert '<section id="sim-rebalances">' in page
    for row in data["summary"]:
        assert html.escape(row["variant"]) in page


def test_default_stages_follow_the_config() -> None:
    from kgroup.demo import default_stages

    everything = ["events", "partitioning", "pipeline", "rebalance"]
    assert [s.name for s in default_stages(DemoConfig())] == everything
    no_sweep = default_stages(DemoConfig(rebalance_seeds=0))
    assert [s.name for s in no_sweep] == ["events", "partitioning", "pipeline"]
    no_kafka = default_stages(DemoConfig(rebalance_seeds=0, pipeline=False))
    assert [s.name for s in no_kafka] == ["events", "partitioning"]
    with pytest.raises(KgroupError, match="rebalance-seeds: -1"):
        DemoConfig(rebalance_seeds=-1)
