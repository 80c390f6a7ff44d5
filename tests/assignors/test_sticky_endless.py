"""A group Kafka 4.4.0's sticky assignors never finish (``performReassignments`` repeats its passes):
kgroup stops at the repeat with one clear error instead of hanging. Kafka itself spinning on the same
group is shown in ``tests/apache_kafka/test_sticky_endless_loop.py``."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from kgroup.assignors.fileformat import parse_assignment_file, run_assignment_file
from kgroup.assignors.sticky.errors import StickyReassignmentLoops
from kgroup.cli import main

GROUP = Path(__file__).parent / "sticky_endless_assignment.json"
ENDLESS: dict[str, Any] = json.loads(GROUP.read_text())["input"]


def _assign(assignor: str, data: dict[str, Any]) -> Any:
    return run_assignment_file(parse_assignment_file({"assignor": assignor, "input": data}, source="test"))


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_the_second_pass_ending_where_the_first_did_is_an_error_at_once(assignor: str) -> None:
    started = time.monotonic()
    with pytest.raises(StickyReassignmentLoops) as raised:
        _assign(assignor, ENDLESS)
    assert time.monotonic() - started < 5
    assert (raised.value.first_pass, raised.value.repeated_pass) == (1, 2)
    assert "never finishes" in raised.value.message


@pytest.mark.parametrize("change", ["subscribe once", "no racks", "e owns nothing", "xa owns nothing"])
def test_each_ingredient_is_needed(change: str) -> None:
    data = copy.deepcopy(ENDLESS)
    members = {m["memberId"]: m for m in data["members"]}
    if change == "subscribe once":
        members["d"]["topics"] = ["t1"]
    elif change == "no racks":
        for m in data["members"]:
            m.pop("rackId", None)
    elif change == "e owns nothing":
        members["e"].pop("owned")
    else:
        members["xa"].pop("owned")
    answer = _assign("sticky", data)
    assert sorted(answer) == sorted(members)


def test_the_command_line_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["assign", str(GROUP)])
    err = capsys.readouterr().err.strip()
    assert exited.value.code not in (0, None), err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("kgroup: error: members: Kafka's sticky assignor never finishes"), err
    assert "Traceback" not in err
