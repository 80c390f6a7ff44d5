"""`--record DIR`: a real group's rebalances in the simulator's JSON shape, drawn by `kgroup report DIR`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.broker.groupclients import Owned, confluent_consumer, wait_until

from kgroup.cli import main
from kgroup.testing import KafkaBroker


def test_recorded_group_is_drawn_by_kgroup_report(tmp_path: Path) -> None:
    record = tmp_path / "rec"
    with KafkaBroker(topics={"rec": 4}, record_dir=record) as kafka:
        owned = Owned()
        first = confluent_consumer(kafka.bootstrap_servers, "rec-group", "rec", owned, "one")
        first.start()
        try:
            wait_until(
                lambda: owned.snapshot().get("one") == frozenset(range(4)), 60, "one member owning all"
            )
            second = confluent_consumer(kafka.bootstrap_servers, "rec-group", "rec", owned, "two")
            second.start()
            try:
                wait_until(lambda: len(owned.snapshot().get("two", ())) == 2, 60, "two members sharing")
            finally:
                second.join_checked()
        finally:
            first.join_checked()
    data = json.loads((record / "rec-group" / "result.json").read_text())
    assert set(data) >= {"scenario", "metrics", "ownership", "events"}
    states = [e["state"] for e in data["events"] if e["kind"] == "group_state"]
    assert states.count("Stable") >= 2 and "PreparingRebalance" in states
    assert data["metrics"]["generation"] >= 2
    assigned = {p for o in data["ownership"] for p in o["assigned"]}
    assert assigned == {f"rec-{p}" for p in range(4)}
    assert data["recording"]["partitions"] == [f"rec-{p}" for p in range(4)]
    assert data["recording"]["intervals"]
    try:
        main(["report", str(record)])
    except SystemExit as exc:
        assert exc.code in (0, None)
    html = (record / "rec-group" / "index.html").read_text()
    assert "Partition owners over time" in html and "<img" in html
