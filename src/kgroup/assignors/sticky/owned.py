"""Which previously owned partitions count, and whether all subscriptions are equal.

This is ``AbstractStickyAssignor.allSubscriptionsEqual``: one pass over the members in Java
``HashMap`` iteration order that (1) compares the raw subscription lists, (2) raises the assignor's
carried-over maximum generation and (3) resolves partitions claimed by more than one member:

* claimed by a member of the *same* generation as the earlier claimant: nobody keeps it (it is
  recorded as claimed by multiple owners);
* the current member's generation is higher: it moves to the current member;
* lower: the earlier claimant keeps it.

The current member's generation comes from its ``MemberData`` (user data for eager ``sticky``), the
earlier claimant's from its subscription's ``generationId`` field: Kafka's asymmetry, kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from kgroup.model import Member, TopicPartition

__all__ = [
    "DEFAULT_GENERATION",
    "MemberData",
    "OwnedPartitions",
    "subscription_generation",
    "validate_owned_partitions",
]

DEFAULT_GENERATION = -1


def subscription_generation(member: Member) -> int | None:
    """``Subscription.generationId()``: absent (``None``) when the member sent none (negative)."""
    return None if member.generation < 0 else member.generation


@dataclass(frozen=True, slots=True)
class MemberData:
    """What an assignor reads from one member: claimed partitions and generation (``None``: absent)."""

    partitions: tuple[TopicPartition, ...]
    generation: int | None


@dataclass(slots=True)
class OwnedPartitions:
    """The outcome of the validation pass."""

    all_subscriptions_equal: bool
    #: member -> its valid previously owned partitions (every member present, in iteration order)
    owned: dict[str, list[TopicPartition]]
    #: partitions claimed by two members of the same generation
    multiply_claimed: set[TopicPartition]
    #: the highest generation seen, starting from the assignor's carried-over value
    max_generation: int


def _same_topics(first: set[str], topics: Sequence[str]) -> bool:
    return len(topics) == len(first) and first.issuperset(topics)


def validate_owned_partitions(
    member_order: Sequence[str],
    members: Mapping[str, Member],
    member_data: Mapping[str, MemberData],
    assignable_topics: Set[str],
    max_generation: int,
) -> OwnedPartitions:
    subscribed: set[str] = set()
    all_equal = True
    owned: dict[str, list[TopicPartition]] = {}
    multiply_claimed: set[TopicPartition] = set()
    claimed_by: dict[TopicPartition, str] = {}

    for consumer in member_order:
        topics = members[consumer].topics
        # Kafka seeds the comparison set from the first member with a non-empty subscription.
        if not subscribed:
            subscribed.update(topics)
        elif all_equal and not _same_topics(subscribed, topics):
            all_equal = False

        data = member_data[consumer]
        generation = DEFAULT_GENERATION if data.generation is None else data.generation
        max_generation = max(max_generation, generation)

        mine: list[TopicPartition] = []
        owned[consumer] = mine
        for tp in data.partitions:
            if tp.topic not in assignable_topics:
                continue
            other = claimed_by.get(tp)
            if other is None:
                mine.append(tp)
                claimed_by[tp] = consumer
                continue
            other_subscription_generation = subscription_generation(members[other])
            other_generation = (
                DEFAULT_GENERATION if other_subscription_generation is None else other_subscription_generation
            )
            if generation == other_generation:
                multiply_claimed.add(tp)
                _remove_first(owned[other], tp)
                claimed_by[tp] = consumer
            elif generation > other_generation:
                mine.append(tp)
                _remove_first(owned[other], tp)
                claimed_by[tp] = consumer
            # else: the other, newer claimant keeps it
    return OwnedPartitions(all_equal, owned, multiply_claimed, max_generation)


def _remove_first(partitions: list[TopicPartition], tp: TopicPartition) -> None:
    """Java's ``List.remove(Object)``: drop the first occurrence, if any."""
    with contextlib.suppress(ValueError):
        partitions.remove(tp)
