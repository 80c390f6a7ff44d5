"""The simulator's reports read like an engineering report (issue 10): human column names with
units, numbers with thousands separators and never in exponent form, the scenario stated, and a
"no owner" that no consumer colour can be taken for."""

from __future__ import annotations

import re
from pathlib import Path

from kgroup.report.html import format_cell
from kgroup.report.interactive import member_colours
from kgroup.report.timeline import (
    _GAP_FACE,
    metric_label,
    metric_value,
    write_comparison_report,
)
from kgroup.sim.compare import run_local, summarize, table_columns
from kgroup.sim.scenario import parse_scenario
from kgroup.sim.variants import compare_variants

SCENARIO = parse_scenario(
    {
        "name": "mini",
        "duration_ms": 120_000,
        "topics": {"t": 6},
        "consumers": [{"count": 3, "prefix": "c", "topics": ["t"]}],
        "events": [{"at_ms": 30_000, "kind": "rolling_restart", "consumers": "all", "gap_ms": 10_000}],
    }
)


def test_comparison_report_has_units_human_names_and_the_scenario(tmp_path: Path) -> None:
    variants, skipped = compare_variants()
    rows = run_local(SCENARIO, variants, [1])
    summary = summarize(rows)
    columns = table_columns(len(SCENARIO.events))
    page = write_comparison_report(
        "compare", summary, columns, [(v.label, why) for v, why in skipped], tmp_path, rows,
        scenario=SCENARIO, seeds=[1],
    ).read_text()  # fmt: skip
    head = page[page.index("Strategies compared") :]
    for column in columns:
        assert f"<th>{metric_label(column, SCENARIO.events)}</th>" in head
        assert f"<th>{column}</th>" not in head or column in ("runs", "rebalances")
    assert '<table class="wide">' in head  # takes the page's width rather than overflowing it
    assert not re.search(r"\d\.?\d*e[+-]\d", page.split("<img")[0])  # no 1.513e+06 anywhere in the text
    assert "<h2>Scenario</h2>" in page
    assert "rolling restart of all consumers, 10 s apart, 0 s down each" in page
    assert "t (6 partitions)" in page
    # the stop-the-world column is in partition-seconds: the row's partition-ms / 1000
    first = summary[0]
    shown = metric_value("unowned_partition_ms", first["unowned_partition_ms"])
    assert shown == round(first["unowned_partition_ms"] / 1000, 1)


def test_never_settled_is_said_in_words() -> None:
    assert metric_value("max_time_to_stable_ms", -1.0) == "never"
    assert metric_value("max_time_to_stable_ms", 4500.0) == 4.5
    assert metric_value("recovery_ms_2", -1.0) == "never"
    assert metric_value("recovery_ms_2", 42_100.0) == 42.1


def test_no_owner_is_distinct_from_every_consumer_colour() -> None:
    from matplotlib.colors import to_rgb

    gap = to_rgb(_GAP_FACE)
    for count in (18, 100):  # tab20 without its greys, then the generated colours
        for index, hex_colour in enumerate(member_colours(count)):
            colour = to_rgb(hex_colour)
            distance = sum((a - b) ** 2 for a, b in zip(colour, gap, strict=True)) ** 0.5
            assert distance > 0.25, (index, colour)  # and the gap is hatched besides


def test_simulation_report_shows_metrics_with_units_and_both_charts(tmp_path: Path) -> None:
    from kgroup.report.timeline import write_simulation_report
    from kgroup.sim.runner import simulate

    result = simulate(SCENARIO)
    page = write_simulation_report(result, tmp_path).read_text()
    assert 'id="sim-timeline"' in page and 'id="sim-lag"' in page
    unowned = result.metrics["unowned_partition_ms"]
    shown = format_cell(round(unowned / 1000, 1))  # partition-ms shown as partition-seconds
    assert f'<td>stop-the-world (partition-s without owner)</td><td class="num">{shown}</td>' in page
    assert "<td>unowned_partition_ms</td>" not in page
    assert "white, hatched: nobody (stop-the-world)" in page
    assert (tmp_path / "result.json").read_text() == result.to_json()
