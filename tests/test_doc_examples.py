"""Every example shown to users holds: the assignment files in docs/ and examples/ (their
``expected`` is Kafka's real answer) and the scenario YAML in the docs (it parses)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kgroup.assignors.fileformat import check_vector, parse_assignment_file, run_assignment_file
from kgroup.sim.scenario import scenario_from_text

ROOT = Path(__file__).parents[1]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "examples" / "README.md"])
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(language: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for page in PAGES:
        for n, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            if match.group(1) == language:
                out.append((f"{page.relative_to(ROOT)}#{n}", match.group(2)))
    return out


def _assignment_files() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, text in _blocks("json"):
        if '"assignor"' not in text:
            continue  # other JSON (abridged output shapes with …) is not a file to run
        data = json.loads(text)
        if isinstance(data, dict) and "input" in data:
            found.append((name, data))
    for path in sorted((ROOT / "examples").rglob("*.json")):
        found.append((str(path.relative_to(ROOT)), json.loads(path.read_text(encoding="utf-8"))))
    return found


ASSIGNMENT_FILES = _assignment_files()


def test_the_docs_have_assignment_examples() -> None:
    names = [name for name, _ in ASSIGNMENT_FILES]
    assert any(n.startswith("docs/assignors.md") for n in names), names
    assert "examples/assign/group.json" in names


@pytest.mark.parametrize(("name", "data"), ASSIGNMENT_FILES, ids=[n for n, _ in ASSIGNMENT_FILES])
def test_every_assignment_example_runs_and_its_expected_is_kafkas_answer(name: str, data: Any) -> None:
    af = parse_assignment_file(data, source=name)
    run_assignment_file(af)  # every example runs as shown
    if "expected" in data:
        result = check_vector(data, name=name)
        assert result.exact, f"{name}: {result}"


@pytest.mark.parametrize(("name", "text"), _blocks("yaml"), ids=[n for n, _ in _blocks("yaml")])
def test_every_scenario_example_in_the_docs_parses(name: str, text: str) -> None:
    scenario_from_text(text, name="doc")
