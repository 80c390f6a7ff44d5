"""What Kafka's ``ModernGroup`` keeps for both groups of the KIP-848 family, the consumer group
(:mod:`kgroup.group.consumer`) and the share group (:mod:`kgroup.group.share`): the group and
assignment epochs, the subscription's metadata hash, the members and their target assignment; and
how both compute a new target assignment (:func:`new_target_assignment`, :func:`changed_targets`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kgroup.group.assignors.api import GroupAssignment, GroupSpec, PartitionAssignorError, ServerAssignor
from kgroup.group.errors import ApiError
from kgroup.group.metadata import MetadataImage
from kgroup.group.records.consumer import TopicAssignment
from kgroup.javacompat import timeline_hashmap_order
from kgroup.model import ErrorCode, TopicId

__all__ = ["ModernGroupData", "changed_targets", "new_target_assignment", "same_assignment"]

_Member = TypeVar("_Member")


@dataclass(slots=True)
class ModernGroupData(Generic[_Member]):
    """The state both kinds' groups share; each kind's ``apply`` changes it."""

    group_id: str
    #: a new group starts at epoch 1 with its assignment at epoch 1 (``ModernGroup``,
    #: ``TargetAssignmentMetadata.INITIAL``): its first member joins at epoch 2
    group_epoch: int = 1
    metadata_hash: int = 0
    assignment_epoch: int = 1
    assignment_timestamp_ms: int = 0
    #: in the order the members were first put (since their last removal); Kafka iterates them in
    #: its ``TimelineHashMap``'s order instead: :meth:`member_ids_in_kafka_order`
    members: dict[str, _Member] = field(default_factory=dict)
    #: the slots of that ``TimelineHashMap`` (2 to start; it doubles on a put, never shrinks)
    members_table: int = 2
    target_assignment: dict[str, TopicAssignment] = field(default_factory=dict)

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member_ids_in_kafka_order(self) -> list[str]:
        """The member ids as ``ModernGroup.members()`` iterates them (a ``TimelineHashMap``): the order
        the target assignment's ``GroupSpec`` is filled in, which decides the order of members that
        share a bucket of its ``HashMap``."""
        return timeline_hashmap_order(self.members, self.members_table)


# --- a new target assignment (TargetAssignmentBuilder) ----------------------------------------------------


def new_target_assignment(
    assignor: ServerAssignor,
    spec: GroupSpec,
    image: MetadataImage,
    group_epoch: int,
    *,
    any_failure: bool = False,
) -> GroupAssignment:
    """The assignor's answer for ``spec`` over the topics of ``image``. Its
    :class:`PartitionAssignorError` is answered UNKNOWN_SERVER_ERROR "Failed to compute a new target
    assignment for epoch N: …"; with ``any_failure`` (the consumer group's path) any other failure is
    answered UNKNOWN_SERVER_ERROR too."""
    try:
        return assignor.assign(spec, image)
    except PartitionAssignorError as exc:
        raise ApiError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}",
        ) from exc
    except Exception as exc:
        if not any_failure:
            raise
        raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(exc).__name__}: {exc}") from exc


def same_assignment(a: Mapping[TopicId, Iterable[int]], b: Mapping[TopicId, Iterable[int]]) -> bool:
    """``Assignment.equals``: the same partitions per topic (a topic with no partitions counts)."""
    if a is b:  # a member the assignor left alone gets its own map back
        return True
    if a.keys() != b.keys():
        return False
    return all(set(a[t]) == set(b[t]) for t in a)


def changed_targets(
    member_ids: Iterable[str], result: GroupAssignment, targets: Mapping[str, TopicAssignment]
) -> Iterator[tuple[str, TopicAssignment]]:
    """Each of ``member_ids`` whose new target in ``result`` differs from its old one in ``targets`` (or
    who had none), with that new target: the members whose target assignment record is written. An
    answer that can hand every member's map in order at once (``answers_in_order``: the fast
    assignors' :class:`~kgroup.group.assignors.fast.answer.ArrayAssignment`) is read that way."""
    ids = list(member_ids)
    in_order = getattr(result, "answers_in_order", None)
    answers = in_order(ids) if in_order is not None else None
    if answers is None:
        answers = [result.get(member_id, {}) for member_id in ids]  # {}: a member left out
    for member_id, new in zip(ids, answers, strict=True):
        old = targets.get(member_id)
        if old is None or (old is not new and not same_assignment(old, new)):
            yield member_id, new
