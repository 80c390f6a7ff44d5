"""What the coordinator answers across every group kind: a group DescribeGroups cannot describe.

ConsumerGroupDescribe and ShareGroupDescribe list a member's partitions alike
(:func:`described_topics`), word a group they cannot describe alike (:func:`not_found_message`) and
keep their members' descriptions alike (:class:`DescribedMembers`).

FindCoordinator is not the coordinator's to answer: which node coordinates a group is the cluster's
knowledge, so each host answers it (the broker's ``find_coordinator`` handler, the simulator's
runner)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from kgroup.group.metadata import MetadataImage
from kgroup.group.states import GroupState
from kgroup.javacompat import hash_set_order, java_integer_hash
from kgroup.messages import DescribedGroup, DescribedTopicPartitions
from kgroup.model import ErrorCode, TopicId

__all__ = [
    "DESCRIBE_GROUP_NOT_FOUND_VERSION",
    "DescribedMembers",
    "described_groups",
    "described_topics",
    "not_described",
    "not_found_message",
]

#: the first DescribeGroups version that answers a group it cannot describe with GROUP_ID_NOT_FOUND
DESCRIBE_GROUP_NOT_FOUND_VERSION = 6


def not_described(group_id: str, api_version: int, message: str) -> DescribedGroup:
    """A group DescribeGroups cannot describe (none, or not a classic one): Dead with no error before
    v6, and from v6 GROUP_ID_NOT_FOUND with ``message`` (``GroupMetadataManager.describeGroups``)."""
    dead = GroupState.DEAD.kafka_name
    if api_version < DESCRIBE_GROUP_NOT_FOUND_VERSION:
        return DescribedGroup(ErrorCode.NONE, group_id, dead, "", "")
    return DescribedGroup(ErrorCode.GROUP_ID_NOT_FOUND, group_id, dead, "", "", error_message=message)


def described_topics(
    assignment: Mapping[TopicId, Iterable[int]], image: MetadataImage
) -> tuple[DescribedTopicPartitions, ...]:
    """A member's partitions as Consumer/ShareGroupDescribe list them: the topics in the iteration
    order of a ``HashSet<Uuid>`` copied from ``assignment``, each topic's partitions in that of a
    ``HashSet<Integer>``; a topic the metadata no longer has is left out (as Kafka leaves it out)."""
    described = []
    for topic_id in hash_set_order(lambda t: t.java_hash, assignment):
        topic = image.topic_by_id(topic_id)
        if topic is None:
            continue
        partitions = hash_set_order(java_integer_hash, assignment[topic_id])
        described.append(DescribedTopicPartitions(topic_id, topic.name, partitions))
    return tuple(described)


def not_found_message(group_id: str, kind: str, other_kind_owns: bool) -> str:
    """How Consumer/ShareGroupDescribe word a group id they have no group of ``kind`` for
    (``GroupMetadataManager.consumerGroup`` / ``shareGroup``: ``group(id)`` first)."""
    if other_kind_owns:
        return f"Group {group_id} is not a {kind} group."
    return f"Group {group_id} not found."


class _Member(Protocol):
    @property
    def member_id(self) -> str: ...


_M = TypeVar("_M", bound=_Member)
_X = TypeVar("_X")
_MD = TypeVar("_MD")


class DescribedMembers(Generic[_M, _X, _MD]):
    """A group's members as its last Consumer/ShareGroupDescribe described them: a cache, not state.

    A member's description depends on the member, on what else its kind describes it from (``extra``:
    a consumer member's target assignment; ``None`` when it has none) and on the metadata image (a
    topic's name). All three are replaced, never changed, so a description is handed again while they
    are the very objects it was built from, and built again otherwise by ``describe(member, extra,
    image, previous)`` (``previous``: the entry it replaces, whose parts it may reuse where they come
    from the same objects). A 5,000-member group's description was ~38 ms of the coordinators' thread,
    polled every 0.5 s while its members reconcile (docs/performance.md, issue 37 item 2)."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        #: member id -> (member, extra, image, description)
        self._known: dict[str, tuple[_M, _X | None, MetadataImage, _MD]] = {}

    def describe(
        self,
        members: Mapping[str, _M],
        order: Iterable[str],
        extras: Mapping[str, _X],
        image: MetadataImage,
        describe: Callable[
            [_M, _X | None, MetadataImage, tuple[_M, _X | None, MetadataImage, _MD] | None], _MD
        ],
    ) -> tuple[_MD, ...]:
        """The descriptions of ``members`` in ``order`` (their ids); ``extras``: each one's extra."""
        known = self._known
        described = []
        for member_id in order:
            member = members[member_id]
            extra = extras.get(member_id)
            entry = known.get(member_id)
            if entry is None or entry[0] is not member or entry[1] is not extra or entry[2] is not image:
                entry = (member, extra, image, describe(member, extra, image, entry))
                known[member_id] = entry
            described.append(entry[3])
        if len(known) != len(members):  # members gone since the last describe
            for gone in known.keys() - members.keys():
                del known[gone]
        return tuple(described)

    def member_ids(self) -> Iterable[str]:
        """The members described (those of the last describe)."""
        return self._known.keys()


class _EpochGroup(Protocol):
    @property
    def state(self) -> _NamedState: ...

    @property
    def group_epoch(self) -> int: ...

    @property
    def assignment_epoch(self) -> int: ...


class _NamedState(Protocol):
    @property
    def kafka_name(self) -> str: ...


_G = TypeVar("_G", bound=_EpochGroup)
_D = TypeVar("_D")


def described_groups(
    group_ids: Iterable[str],
    groups: Mapping[str, _G],
    *,
    kind: str,
    owned_elsewhere: Callable[[str], bool],
    described_type: Callable[..., _D],
    assignor: Callable[[_G], str],
    members: Callable[[_G], tuple[Any, ...]],
) -> tuple[_D, ...]:
    """Consumer/ShareGroupDescribe's groups: each of ``group_ids`` of this ``kind``, with its state,
    epochs, ``assignor`` and ``members``, or GROUP_ID_NOT_FOUND (:func:`not_found_message`;
    ``owned_elsewhere``: another kind has the id)."""
    described = []
    for group_id in group_ids:
        group = groups.get(group_id)
        if group is None:
            message = not_found_message(group_id, kind, owned_elsewhere(group_id))
            described.append(described_type(ErrorCode.GROUP_ID_NOT_FOUND, group_id, message))
            continue
        described.append(
            described_type(
                ErrorCode.NONE,
                group_id,
                None,
                group.state.kafka_name,
                group.group_epoch,
                group.assignment_epoch,
                assignor(group),
                members(group),
            )
        )
    return tuple(described)
