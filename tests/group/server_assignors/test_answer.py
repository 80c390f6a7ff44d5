"""The fast ``uniform`` path's answer (:class:`ArrayAssignment`): a read-only ``Mapping`` that every
caller reads as the plain dict the reference answers."""

from __future__ import annotations

import copy
import pickle

import pytest

from kgroup.group.assignors import GroupSpec, MemberSpec, TopicDescriber, TopicId, UniformAssignor, group_spec
from kgroup.group.assignors.fast.answer import ArrayAssignment
from kgroup.group.modern import changed_targets


def _groups() -> tuple[GroupSpec, GroupSpec, TopicDescriber]:
    topics = {TopicId(0, i): 5 + i for i in range(4)}
    describer = TopicDescriber(topics)
    subscription = tuple(topics)
    first = group_spec([(f"m{i}", MemberSpec(subscription)) for i in range(5)])
    previous = UniformAssignor().assign(first, describer)
    # one joins: most members keep their own map, a few give partitions to the newcomer
    joined = group_spec(
        [
            *((m, MemberSpec(subscription, previous[m])) for m in first.members),
            ("new", MemberSpec(subscription)),
        ]
    )
    return first, joined, describer


@pytest.mark.parametrize("which", [0, 1], ids=["new group", "one joins"])
def test_the_answer_reads_as_the_references_dict(which: int) -> None:
    first, joined, describer = _groups()
    spec = (first, joined)[which]
    assignor = UniformAssignor()
    answer = assignor.assign(spec, describer)
    reference = assignor.assign_reference(spec, describer)
    assert isinstance(answer, ArrayAssignment)
    assert type(reference) is dict
    assert answer == reference and reference == answer
    assert list(answer) == list(reference) == list(spec.members)
    assert [(m, list(a.items())) for m, a in answer.items()] == [
        (m, list(a.items())) for m, a in reference.items()
    ]
    assert len(answer) == len(reference)
    assert "nobody" not in answer and answer.get("nobody", {}) == {} and answer.get("nobody") is None
    with pytest.raises(KeyError):
        answer["nobody"]
    member = next(iter(reference))
    assert member in answer
    assert answer[member] is answer.get(member) is answer[member]  # built once, then the same dict
    assert pickle.loads(pickle.dumps(answer)) == reference
    copied: object = copy.deepcopy(answer)
    assert type(copied) is dict
    assert repr(answer).startswith("ArrayAssignment({")


def test_a_member_left_alone_is_answered_its_own_map() -> None:
    _, joined, describer = _groups()
    answer = UniformAssignor().assign(joined, describer)
    kept = [m for m, spec in joined.members.items() if answer[m] is spec.assignment]
    changed = [m for m in joined.members if m not in kept]
    assert kept and "new" in changed


@pytest.mark.parametrize("which", [0, 1], ids=["new group", "one joins"])
def test_every_answer_in_order_at_once_is_each_member_s_read(which: int) -> None:
    """``answers_in_order``: the very objects reading member by member gives, for this answer's
    members in its order only; the changed targets a coordinator writes are found the same way from
    it as from the reference's plain dict."""
    first, joined, describer = _groups()
    spec = (first, joined)[which]
    assignor = UniformAssignor()
    answer = assignor.assign(spec, describer)
    assert isinstance(answer, ArrayAssignment)
    ids = list(spec.members)
    in_order = answer.answers_in_order(ids)
    assert in_order is not None
    assert all(a is answer[m] for m, a in zip(ids, in_order, strict=True))
    assert answer.answers_in_order(ids[::-1]) is None and answer.answers_in_order(ids[:-1]) is None
    targets = {m: s.assignment for m, s in spec.members.items() if s.assignment}
    reference = assignor.assign_reference(spec, describer)
    found = list(changed_targets(spec.members, answer, targets))
    assert found == list(changed_targets(spec.members, reference, targets))
    assert {m for m, _ in found} == {m for m in ids if m not in targets or answer[m] != targets[m]}
    if which:  # one joins: the members left alone are not written again
        assert 0 < len(found) < len(ids)
