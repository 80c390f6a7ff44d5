"""Third-party assignors through the ``kgroup.assignors`` entry-point group: the worked example of
``docs/assignors.md``, installed as a real (tiny) distribution on ``sys.path``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgroup.assignors import AssignmentRequest, Assignor, available_assignors, create_assignor
from kgroup.assignors.invariants import check_all
from kgroup.cli import main
from kgroup.model import Member, TopicMetadata, TopicPartition

DOCS = Path(__file__).parent.parent.parent / "docs" / "assignors.md"
ENTRY_POINT = "my-assignor"


def _plugin_source() -> str:
    """The plug-in code block of the docs (the first ```python block after 'A complete plug-in')."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("A complete plug-in")
    found = re.search(r"```python\n(.*?)```", text[start:], re.DOTALL)
    assert found is not None, "docs/assignors.md lost its plug-in example"
    return found.group(1)


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``my_assignors.py`` plus a dist-info declaring the entry point, as pip would install them."""
    (tmp_path / "my_assignors.py").write_text(_plugin_source(), encoding="utf-8")
    dist = tmp_path / "my_assignors-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-assignors\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[kgroup.assignors]\n{ENTRY_POINT} = my_assignors:FewestFirstAssignor\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_assignors", raising=False)
    return tmp_path


def _request() -> AssignmentRequest:
    topics = {"t1": TopicMetadata("t1", 4), "t2": TopicMetadata("t2", 3)}
    members = [Member("c2", ("t1", "t2")), Member("c1", ("t1",)), Member("c3", ("t2",))]
    return AssignmentRequest(members, topics)


def test_the_docs_example_is_found_by_name(installed_plugin: Path) -> None:
    assert ENTRY_POINT in available_assignors()
    assignor = create_assignor(ENTRY_POINT)
    assert isinstance(assignor, Assignor)
    assert type(assignor).__name__ == "FewestFirstAssignor"
    request = _request()
    result = assignor.assign(request)
    assert check_all(request.members, request.topics, result) == []
    # fewest first, ties by member id: t1-0 c1, t1-1 c2, t1-2 c1, t1-3 c2, t2-0 c3, t2-1 c3 (c2 has 2,
    # c3 has 1 -> c3), t2-2 c2 (c2 2, c3 2 -> "c2" < "c3")
    assert {m: [str(tp) for tp in ps] for m, ps in result.items()} == {
        "c2": ["t1-1", "t1-3", "t2-2"],
        "c1": ["t1-0", "t1-2"],
        "c3": ["t2-0", "t2-1"],
    }


def test_unknown_names_still_fail_cleanly(installed_plugin: Path) -> None:
    from kgroup.model import KgroupError

    with pytest.raises(KgroupError, match=f"use one of: .*{ENTRY_POINT}"):
        create_assignor("not-installed")


def _group_file(tmp_path: Path) -> Path:
    path = tmp_path / "group.json"
    path.write_text(
        json.dumps(
            {
                "assignor": "range",
                "input": {
                    "topics": [{"name": "t1", "partitions": 4}],
                    "members": [{"memberId": "a", "topics": ["t1"]}, {"memberId": "b", "topics": ["t1"]}],
                },
            }
        )
    )
    return path


def test_kgroup_assign_uses_the_plugin(
    installed_plugin: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["assign", str(_group_file(tmp_path)), "--assignor", ENTRY_POINT, "--json"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    # fewest-first alternates a, b, a, b where range would give a t1-0, t1-1
    assert json.loads(out) == {"assignment": {"a": ["t1-0", "t1-2"], "b": ["t1-1", "t1-3"]}}
    with pytest.raises(SystemExit):
        main(["assign", "--list"])
    assert ENTRY_POINT in capsys.readouterr().out


def test_a_separate_kgroup_process_finds_the_plugin(installed_plugin: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(installed_plugin), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kgroup",
            "assign",
            str(_group_file(tmp_path)),
            "--assignor",
            ENTRY_POINT,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["assignment"]["b"] == ["t1-1", "t1-3"]


def test_a_plugin_that_is_not_an_assignor_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgroup.model import KgroupError

    (tmp_path / "not_an_assignor.py").write_text("def make():\n    return 42\n")
    dist = tmp_path / "not_an_assignor-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: not-an-assignor\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[kgroup.assignors]\nbroken = not_an_assignor:make\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KgroupError, match=r"did not return a kgroup\.assignors\.Assignor"):
        create_assignor("broken")


def test_plugin_result_partitions_are_topic_partitions(installed_plugin: Path) -> None:
    result = create_assignor(ENTRY_POINT).assign(_request())
    assert all(isinstance(tp, TopicPartition) for ps in result.values() for tp in ps)
