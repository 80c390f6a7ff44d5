"""The assignment file format: parsing, FORMAT.md's defaults, validation errors, dump, check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kgroup.assignors import registry
from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.fileformat import (
    check_path,
    check_vector,
    dump_assignment,
    load_assignment_file,
    parse_assignment_file,
    run_assignment_file,
)
from kgroup.assignors.sticky import StickyAssignmentError
from kgroup.assignors.sticky.userdata import encode_cooperative_user_data, encode_sticky_user_data
from kgroup.model import Assignment, KgroupError, TopicPartition

TP = TopicPartition


def _file(
    members: list[dict[str, Any]], topics: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "assignor": extra.pop("assignor", "range"),
        "input": {
            "topics": topics if topics is not None else [{"name": "t1", "partitions": 3}],
            "members": members,
        },
        **extra,
    }


def test_parse_members_topics_racks_and_options() -> None:
    data = _file(
        [
            {
                "memberId": "c1",
                "topics": ["t1", "t2"],
                "owned": ["t1-0", "a-b-1"],
                "generation": 4,
                "rackId": "a",
                "groupInstanceId": "i1",
            },
            {"memberId": "c2", "topics": ["t1"], "rackId": ""},
        ],
        [{"name": "t1", "partitions": 2, "racks": [["a", None], [None]]}, {"name": "a-b", "partitions": 2}],
    )
    data["input"]["priorMaxGeneration"] = 7
    data["input"]["preferRackAwareLogic"] = True
    af = parse_assignment_file(data)
    c1, c2 = (spec.member for spec in af.members)
    assert c1.owned == (TP("t1", 0), TP("a-b", 1))  # split at the last dash
    assert (c1.generation, c1.rack_id, c1.group_instance_id) == (4, "a", "i1")
    assert c2.rack_id is None and c2.generation == -1 and c2.owned == ()
    assert af.topics["t1"].racks == (frozenset({"a"}), frozenset())
    assert af.prior_max_generation == 7
    request = af.request
    assert isinstance(request, AssignmentRequest) and request.prefer_rack_aware_logic


def test_user_data_defaults_follow_format_md() -> None:
    members = [
        {"memberId": "fresh", "topics": ["t1"]},
        {"memberId": "owner", "topics": ["t1"], "owned": ["t1-1"], "generation": 3},
        {"memberId": "v0", "topics": ["t1"], "userData": {"partitions": ["t1-2"], "generation": None}},
        {"memberId": "none", "topics": ["t1"], "owned": ["t1-0"], "generation": 2, "userData": None},
    ]
    af = parse_assignment_file(_file(members))
    sticky = {m.member_id: m.user_data for m in af.request_for("sticky").members}
    assert sticky == {
        "fresh": None,
        "owner": encode_sticky_user_data([TP("t1", 1)], 3),
        "v0": encode_sticky_user_data([TP("t1", 2)], None),
        "none": None,
    }
    coop = {m.member_id: m.user_data for m in af.request_for("cooperative-sticky").members}
    assert coop["fresh"] == encode_cooperative_user_data(-1)
    assert coop["owner"] == encode_cooperative_user_data(3)
    assert coop["none"] is None
    assert all(m.user_data is None for m in af.request_for("range").members)


def test_expected_is_parsed_and_ignored_unless_checking() -> None:
    af = parse_assignment_file(
        _file([{"memberId": "c", "topics": ["t1"]}], expected={"assignment": {"c": ["t1-0"]}})
    )
    assert af.expected == {"c": [TP("t1", 0)]}
    assert run_assignment_file(af) == {"c": [TP("t1", 0), TP("t1", 1), TP("t1", 2)]}


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d.pop("input"), "'input' is missing"),
        (lambda d: d["input"]["members"][0].pop("memberId"), "has no 'memberId'"),
        (lambda d: d["input"]["members"].append({"memberId": "c1", "topics": []}), "'c1' appears twice"),
        (lambda d: d["input"]["topics"][0].update(partitions=-2), "partitions: is -2"),
        (lambda d: d["input"]["topics"].append({"name": "t1", "partitions": 1}), "'t1' is listed twice"),
        (lambda d: d["input"]["members"][0].update(owned=["t1_0"]), "'t1_0' is not of the form 'topic-N'"),
        (lambda d: d["input"]["topics"][0].update(racks=[["a"]]), "has 1 entries but the topic has 3"),
        (lambda d: d["input"]["topics"][0].update(partitions="3"), "partitions: got the string '3'"),
        (lambda d: d["input"]["topics"][0].update(partitions=True), "partitions: got a boolean"),
        (lambda d: d["input"]["members"][0].update(topics="t1"), "topics: got the string 't1'"),
        (lambda d: d["input"]["members"][0].update(generation="x"), "generation: got the string 'x'"),
        (lambda d: d["input"]["members"][0].update(rackId=5), "rackId: got the number 5"),
        (lambda d: d["input"]["members"][0].update(memberId=""), "memberId: is empty"),
        (lambda d: d["input"]["members"][0].update(owend=[]), "unknown field 'owend'"),
        (lambda d: d["input"]["members"][0].update(streams={"t1": 0}), "stream count must be 1 or more"),
        (lambda d: d["input"]["members"][0].update(streams={"t9": 1}), "does not subscribe to 't9'"),
        (lambda d: d["input"].pop("members"), "input.members: is missing"),
        (lambda d: d["input"].update(members={}), "input.members: got an object"),
        (lambda d: d["input"].update(preferRackAwareLogic="yes"), "preferRackAwareLogic: got the string"),
        (lambda d: d["input"]["topics"][0].update(name=""), "name: is empty"),
        (lambda d: d.update(assignor=3), "'assignor': got the number 3"),
    ],
)
def test_bad_input_is_one_line_naming_the_field(mutate: Any, needle: str) -> None:
    data = _file([{"memberId": "c1", "topics": ["t1"]}])
    mutate(data)
    with pytest.raises(KgroupError) as info:
        parse_assignment_file(data, source="g.json")
    message = info.value.message
    assert needle in message
    assert message.startswith("g.json: ")
    assert "\n" not in message


def test_not_an_object_and_missing_assignor() -> None:
    with pytest.raises(KgroupError, match="expected a JSON object"):
        parse_assignment_file([1, 2])
    af = parse_assignment_file({"input": {"topics": [], "members": []}})
    with pytest.raises(KgroupError, match="'assignor' is missing"):
        af.request  # noqa: B018 - the property raises
    assert (
        parse_assignment_file({"input": {"topics": [], "members": []}}, assignor="range").assignor == "range"
    )


def test_malformed_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text('{"assignor": "range",\n  "input": {,}}\n')
    with pytest.raises(KgroupError, match=r"malformed JSON at line 2 column 13"):
        load_assignment_file(path)
    with pytest.raises(KgroupError, match="cannot read the file"):
        load_assignment_file(tmp_path / "absent.json")


def test_dump_sorts_topics_in_java_order_then_partitions_numerically() -> None:
    assignment: Assignment = {
        "b": [TP("t", 10), TP("t", 2), TP("\ue000", 0), TP("\U0001f600", 0)],
        "a": [],
    }
    assert dump_assignment(assignment) == {
        "assignment": {"b": ["t-2", "t-10", "\U0001f600-0", "\ue000-0"], "a": []}
    }


def test_check_vector_reports_mismatches_order_insensitively() -> None:
    members = [{"memberId": "c1", "topics": ["t1"]}, {"memberId": "c2", "topics": ["t1"]}]
    right = _file(members, expected={"assignment": {"c1": ["t1-1", "t1-0"], "c2": ["t1-2"]}})
    assert check_vector(right).exact
    wrong = _file(members, expected={"assignment": {"c1": ["t1-0"], "c2": ["t1-1", "t1-2"]}})
    result = check_vector(wrong)
    assert not result.exact
    assert [m.member for m in result.mismatches] == ["c1", "c2"]
    assert result.mismatches[0].expected == (TP("t1", 0),)
    assert result.mismatches[0].got == (TP("t1", 0), TP("t1", 1))
    absent = check_vector(_file(members, expected={"assignment": {"c1": ["t1-0", "t1-1"]}}))
    assert [(m.member, m.expected) for m in absent.mismatches] == [("c2", None)]


def test_check_vector_without_expected_or_with_bad_input_is_an_error_result() -> None:
    assert check_vector(_file([{"memberId": "c", "topics": ["t1"]}])).error is not None
    broken = check_vector({"assignor": "range", "input": {"topics": [{"name": "t", "partitions": -1}]}})
    assert not broken.exact and broken.error is not None and "partitions" in broken.error


class _PriorGenerationProbe(Assignor):
    name = "probe"
    seen: ClassVar[list[int]] = []

    def set_prior_max_generation(self, generation: int) -> None:
        self.seen.append(generation)

    def assign(self, request: AssignmentRequest) -> Assignment:
        return {m.member_id: [] for m in request.members}


def test_prior_max_generation_goes_through_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._BUILTIN, "probe", _PriorGenerationProbe)
    data = _file([{"memberId": "c", "topics": []}], assignor="probe", expected={"assignment": {"c": []}})
    data["input"]["priorMaxGeneration"] = 9
    assert check_vector(data).exact
    assert _PriorGenerationProbe.seen == [9]


def test_check_path_skips_non_assignor_files(tmp_path: Path) -> None:
    good = _file(
        [{"memberId": "c", "topics": ["t1"]}], expected={"assignment": {"c": ["t1-0", "t1-1", "t1-2"]}}
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "good.json").write_text(json.dumps(good))
    (tmp_path / "murmur.json").write_text(json.dumps([{"assignor": "murmur2"}]))
    (tmp_path / "replicas.json").write_text(json.dumps({"assignor": "replicas", "input": {}}))
    report = check_path(tmp_path)
    assert (report.exact, report.total, len(report.skipped)) == (1, 1, 2)
    with pytest.raises(KgroupError, match="no such file or folder"):
        check_path(tmp_path / "nope")


class _FailingAssignor(Assignor):
    name = "failing"
    raises: ClassVar[Exception] = KgroupError("members: cannot complete")

    def assign(self, request: AssignmentRequest) -> Assignment:
        raise self.raises


def test_an_expected_failure_matches_only_the_same_java_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._BUILTIN, "failing", _FailingAssignor)
    members = [{"memberId": "c", "topics": ["t1"]}]
    expected_ise = _file(members, assignor="failing", expected={"error": "IllegalStateException: boom"})
    monkeypatch.setattr(_FailingAssignor, "raises", StickyAssignmentError("IllegalStateException: boom"))
    assert check_vector(expected_ise).exact
    # Kafka's own IllegalStateException texts carry no prefix
    kafka_text = StickyAssignmentError("No more unfilled consumers to be assigned.")
    monkeypatch.setattr(_FailingAssignor, "raises", kafka_text)
    assert check_vector(expected_ise).exact
    monkeypatch.setattr(_FailingAssignor, "raises", StickyAssignmentError("NullPointerException: x"))
    other_kind = check_vector(expected_ise)
    assert not other_kind.exact
    assert other_kind.error == "expected Java's IllegalStateException, got NullPointerException"
    # an error that is not one of Kafka's (bad input, a bug) never matches an expected exception
    monkeypatch.setattr(_FailingAssignor, "raises", KgroupError("members: cannot complete"))
    not_kafkas = check_vector(expected_ise)
    assert not not_kafkas.exact
    assert not_kafkas.error == "expected Java's IllegalStateException, got members: cannot complete"
    unexpected = check_vector(_file(members, assignor="failing", expected={"assignment": {"c": []}}))
    assert not unexpected.exact
    assert unexpected.error == "members: cannot complete"
    no_error = check_vector(_file(members, expected={"error": "IllegalStateException: boom"}))
    assert not no_error.exact and no_error.error is not None and "expected the error" in no_error.error


def test_a_real_kafka_null_pointer_failure_is_checked_by_kind() -> None:
    """The stale-owner case of test_sticky_rules: Kafka's cooperative-sticky throws a
    NullPointerException; a vector expecting it is exact, one expecting another exception is not."""
    data = {
        "assignor": "cooperative-sticky",
        "input": {
            "topics": [{"name": "t", "partitions": 4}, {"name": "u", "partitions": 1}],
            "members": [
                {"memberId": "c0", "topics": ["t"], "owned": ["t-0", "t-1", "t-2", "t-3"], "generation": 2},
                {"memberId": "c1", "topics": ["t"], "generation": 2},
                {"memberId": "c2", "topics": ["u"], "owned": ["t-0"], "generation": 1},
            ],
        },
    }
    npe = check_vector({**data, "expected": {"error": "NullPointerException: Cannot invoke size()"}})
    assert npe.exact, npe
    ise = check_vector({**data, "expected": {"error": "IllegalStateException: something else"}})
    assert not ise.exact
    assert ise.error == "expected Java's IllegalStateException, got NullPointerException"
