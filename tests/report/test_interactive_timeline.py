"""The interactive timeline (``timeline.html``) of a 100-member group: distinct colours past 20 members,
one row per member, hover with member, generation and reason, a member highlighted from the menu — and
the page opened in a real headless Chromium (Debian's ``chromium``, which ``make test`` installs): it
loads without a JavaScript error, fetches nothing but itself, and shows every member."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kgroup.report.interactive import TIMELINE_FILE, member_colours, timeline_figure, write_timeline
from kgroup.sim.result import SimResult

#: 100 cooperative members of 200 partitions: one crashes (found by its 10 s session timeout), three more join
HUNDRED = {
    "name": "hundred",
    "seed": 1,
    "duration_ms": 90_000,
    "topics": {"orders": 200},
    "group": {"assignors": ["cooperative-sticky"], "session_timeout_ms": 10_000},
    "consumers": [{"count": 100, "prefix": "member-", "topics": ["orders"]}],
    "workload": {"produce_per_partition_per_s": 1, "consume_per_consumer_per_s": 10},
    "events": [
        {"at_ms": 20_000, "kind": "crash", "consumer": "member-7"},
        {"at_ms": 50_000, "kind": "scale", "count": 3, "prefix": "extra-", "topics": ["orders"]},
    ],
}


@pytest.fixture(scope="module")
def hundred() -> SimResult:
    from kgroup.sim.runner import simulate
    from kgroup.sim.scenario import parse_scenario

    return simulate(parse_scenario(HUNDRED))


def _rgb(colour: str) -> tuple[float, ...]:
    return tuple(int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))


def _distance(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    return float(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5)


def test_colours_do_not_repeat_past_twenty_members() -> None:
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    tab20 = [to_hex(colormaps["tab20"](i)) for i in range(20) if i not in (14, 15)]  # no greys
    assert member_colours(18) == tab20
    colours = [_rgb(c) for c in member_colours(100)]
    assert len(set(colours)) == 100
    # members next to each other (in the legend, the menu and the member rows) are far apart, and no
    # two of the hundred are the same
    assert min(_distance(colours[i], colours[i + 1]) for i in range(99)) > 0.5
    assert min(_distance(a, b) for a, b in itertools.combinations(colours, 2)) > 0.05
    # none is grey or near white: those mean "no owner"
    assert all(max(c) - min(c) > 0.25 and _distance(c, (1.0, 1.0, 1.0)) > 0.5 for c in colours)


def test_the_figure_has_every_member_its_own_row_hover_and_highlight(hundred: SimResult) -> None:
    import plotly.graph_objects

    figure = timeline_figure(hundred)
    plotly.graph_objects.Figure(figure)  # every key and value valid in Plotly's schema
    traces = figure["data"]
    owners = {member for _, member, _, _ in hundred.intervals}
    assert len(owners) >= 100
    bars = [t for t in traces if t["yaxis"] == "y" and t["name"] not in ("no owner", "revoking")]
    rows = [t for t in traces if t["yaxis"] == "y2"]
    assert {t["name"] for t in bars} == owners == {t["name"] for t in rows}
    assert figure["layout"]["yaxis2"]["categoryarray"] == [t["name"] for t in rows]  # a row per member
    assert len({t["marker"]["color"] for t in bars}) == len(bars)
    # every owner interval is drawn once, with its member, generation (from the ownership log), why it
    # began and why it ended
    assert sum(len(t["x"]) for t in bars) == len(hundred.intervals)
    hover = [c for t in bars for c in t["customdata"]]
    assert all(c[0] in owners and isinstance(c[1], int) for c in hover)
    assert any("member-7" in c[2] for c in hover)  # the crash is why partitions moved
    ends = {c[3] for c in hover}
    assert "still owned at the end" in ends and any(e.startswith("revoked; extra-") for e in ends), ends
    assert "%{customdata[1]}" in bars[0]["hovertemplate"] and "generation" in bars[0]["hovertemplate"]
    # the highlight menu: every member, then one entry per member that dims everybody else
    (menu,) = figure["layout"]["updatemenus"]
    buttons = {b["label"]: b["args"][0]["opacity"] for b in menu["buttons"]}
    assert set(buttons) == owners | {"every member"}
    chosen = buttons["member-42"]
    assert {t["name"] for t, o in zip(traces, chosen, strict=True) if o == 1.0} == {
        "member-42",
        "no owner",
        *(["revoking"] if any(t["name"] == "revoking" for t in traces) else []),
    }


def _chromium() -> str:
    from tests.report.chromium import CHROMIUM

    if not os.access(CHROMIUM, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail(
                f"{CHROMIUM} is missing: make test installs Debian's chromium (apt-get install chromium)"
            )
        pytest.skip(f"{CHROMIUM} is missing: `apt-get install chromium` (make test does it)")
    return CHROMIUM


def _centre(browser: Any, expression: str) -> tuple[float, float]:
    x, y = browser.evaluate(expression)
    return float(x), float(y)


def test_the_page_opens_in_chromium_and_shows_the_members(hundred: SimResult, tmp_path: Path) -> None:
    from tests.report.chromium import Chromium

    _chromium()
    page = write_timeline(hundred, tmp_path, "kgroup simulation: hundred")
    assert page.name == TIMELINE_FILE
    assert page.read_text().count("* plotly.js v") == 1  # inlined, not fetched
    owners = sorted({member for _, member, _, _ in hundred.intervals})
    with Chromium(timeout_s=300) as browser:  # a bound for a loaded machine, not a timing
        browser.open(page)
        assert browser.errors() == []
        # self-contained: the page is the only thing loaded (plotly.js is inlined)
        assert browser.requested_urls() == [page.resolve().as_uri()]
        # every member in the legend, and a row of its own
        legend = browser.evaluate(
            "Array.from(document.querySelectorAll('.legendtext')).map(e => e.textContent)"
        )
        assert sorted(set(legend) - {"no owner", "revoking"}) == owners
        ticks = browser.evaluate(
            "Array.from(document.querySelectorAll('.y2tick text')).map(e => e.textContent)"
        )
        assert set(ticks) <= set(owners) and len(ticks) >= 50  # the member rows (labels may thin out)
        # hovering member-42's first bar names it, its generation and why the bar began
        where = _centre(
            browser,
            """(() => {
              const gd = document.getElementById('kgroup-timeline');
              const t = gd.data.find(t => t.name === 'member-42' && t.yaxis === 'y');
              const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
              return [box.left + xa._offset + xa.l2p(t.base[0] + t.x[0] / 2),
                      box.top + ya._offset + ya.d2p(t.y[0])];
            })()""",
        )
        browser.evaluate(f"window.scrollTo(0, {max(0.0, where[1] - 400)})")
        scrolled = browser.evaluate("window.scrollY")
        browser.mouse("mouseMoved", where[0], where[1] - scrolled)
        text = ""
        deadline = time.monotonic() + 10
        while "member-42" not in text and time.monotonic() < deadline:
            time.sleep(0.1)
            text = browser.evaluate("(document.querySelector('.hoverlayer') || {}).textContent || ''")
        assert "member-42 owns orders-" in text and "generation" in text and "began after" in text, text
        # highlight member-42 from the menu: its bars and its row stay, every other member is dimmed
        browser.evaluate("window.scrollTo(0, 0)")
        header = _centre(
            browser,
            "(() => { const r = document.querySelector('.updatemenu-header').getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()",
        )
        browser.mouse("click", *header)
        button = None
        deadline = time.monotonic() + 10
        while button is None and time.monotonic() < deadline:
            time.sleep(0.1)
            button = browser.evaluate(
                "(() => { const b = Array.from(document.querySelectorAll('.updatemenu-dropdown-button'))"
                ".find(e => e.textContent === 'member-42'); if (!b) return null;"
                " b.scrollIntoView({block: 'center'}); const r = b.getBoundingClientRect();"
                " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
            )
        assert button is not None, "the highlight menu did not open"
        browser.mouse("click", *button)
        opacity: dict[str, list[float]] = {}
        deadline = time.monotonic() + 10
        while opacity.get("member-42") != [1, 1] and time.monotonic() < deadline:
            time.sleep(0.1)
            pairs = browser.evaluate(
                "document.getElementById('kgroup-timeline')._fullData.map(t => [t.name, t.opacity])"
            )
            opacity = {}
            for name, value in pairs:
                opacity.setdefault(name, []).append(value)
        assert opacity["member-42"] == [1, 1]  # its bars and its own row
        assert all(v == [0.12, 0.12] for name, v in opacity.items() if name in owners and name != "member-42")
        assert browser.errors() == []


def test_the_demo_report_gets_its_highlighted_timelines_on_one_page() -> None:
    from kgroup.demo.stages import DemoConfig, DemoRun, build_report
    from kgroup.report.timeline import TIMELINES_FILE, RebalanceStageResult
    from kgroup.sim.demo_stage import HIGHLIGHTS, RebalanceStageData
    from kgroup.sim.runner import simulate
    from kgroup.sim.scenario import parse_scenario

    scenario = parse_scenario(
        {
            "name": "tiny",
            "duration_ms": 40_000,
            "topics": {"t": 4},
            "consumers": [{"count": 2, "prefix": "c", "topics": ["t"]}],
            "events": [{"at_ms": 10_000, "kind": "crash", "consumer": "c1"}],
        }
    )
    highlights = [(v.label, simulate(v.apply(scenario))) for v in HIGHLIGHTS]
    stage = RebalanceStageResult(RebalanceStageData(scenario, (1,), [], [], [], highlights))
    report = build_report(DemoRun(DemoConfig(), (("rebalance", stage),), ()))
    page = report.attachments[TIMELINES_FILE].decode()
    # the three timelines, each its own figure, and plotly.js inlined once for the three
    assert all(
        f'id="{element}"' in page for element in ("kgroup-timeline", "kgroup-timeline-2", "kgroup-timeline-3")
    )
    assert page.count("* plotly.js v") == 1 and page.count("Plotly.newPlot(") == 3
    assert all(f"Timeline: {label}" in page for label, _ in highlights)
    assert f"Explore it: {TIMELINES_FILE}" in report.to_html()
