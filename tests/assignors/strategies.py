"""Hypothesis strategies for consumer groups, shared by the assignor tests (and anyone else's).

``groups()`` draws an :class:`~kgroup.assignors.api.AssignmentRequest`: topics (some with replica
racks, some with zero partitions), members with subscriptions (sometimes to missing topics, sometimes
listing a topic twice), static instance ids (sometimes duplicated), racks (``""`` included), owned
partitions and generations. Names include characters on which Java's ``String`` order differs from
Python's (a supplementary character versus one at or above U+E000).
"""

from __future__ import annotations

from hypothesis import strategies as st

from kgroup.assignors.api import AssignmentRequest
from kgroup.model import Member, TopicMetadata, TopicPartition

__all__ = ["RACKS", "TOPIC_NAMES", "groups", "member_ids", "topic_metadata"]

#: topic names: dashes (partition strings split at the last one), digits that sort as strings, and
#: the Java-versus-Python order trap (U+1F600 sorts *before* U+E000 in Java, after it in Python)
TOPIC_NAMES = ("t0", "t1", "t10", "t2", "a-b", "a-b-1", "Z", "\ue000x", "\U0001f600x")
#: a topic members may subscribe to that never exists in the metadata
MISSING_TOPIC = "ghost"
RACKS = ("a", "b", "c")
_ID_POOL = ("c0", "c1", "c10", "c2", "consumer-1", "m", "\ue000", "\U0001f600", "C9", "c-3-x")
_INSTANCE_POOL = ("i0", "i1", "i2", "\ue001", "\U0001f601")


def member_ids(max_members: int) -> st.SearchStrategy[list[str]]:
    """Distinct member ids, mixing a fixed tricky pool with generated ones."""
    pooled = st.sampled_from(_ID_POOL)
    generated = st.text(alphabet="abcxyz-019", min_size=1, max_size=6)
    return st.lists(st.one_of(pooled, generated), min_size=1, max_size=max_members, unique=True)


@st.composite
def topic_metadata(
    draw: st.DrawFn,
    name: str,
    max_partitions: int,
    racks: bool,
    count: int | None = None,
    always: bool = False,
) -> TopicMetadata:
    if count is None:
        count = draw(st.integers(min_value=0, max_value=max_partitions))
    rack_sets: tuple[frozenset[str], ...] | None = None
    if racks and (always or draw(st.booleans())):
        one = st.frozensets(st.sampled_from(RACKS), max_size=len(RACKS))
        rack_sets = tuple(draw(st.lists(one, min_size=count, max_size=count)))
    return TopicMetadata(name, count, rack_sets)


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    max_topics: int = 5,
    max_partitions: int = 12,
    max_members: int = 8,
    racks: bool = True,
    static: bool = True,
    owned: bool = True,
    equal_subscriptions: bool = False,
    co_partitioned: bool = False,
) -> AssignmentRequest:
    """A random group and its topic metadata (see the module docstring).

    ``equal_subscriptions``: every member subscribes to the same list. ``co_partitioned``: every
    topic has the same partition count and replica racks (with equal subscriptions, Range's
    co-partitioned case).
    """
    names = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=max_topics, unique=True))
    count = draw(st.integers(min_value=1, max_value=max_partitions)) if co_partitioned else None
    topics = {n: draw(topic_metadata(n, max_partitions, racks, count, co_partitioned)) for n in names}
    ids = draw(member_ids(max_members))
    choices = [*names, MISSING_TOPIC]
    subscription = st.lists(st.sampled_from(choices), min_size=0, max_size=len(choices) + 1)
    shared = draw(subscription) if equal_subscriptions else None
    existing = [TopicPartition(n, p) for n in names for p in range(topics[n].partitions)]
    members: list[Member] = []
    for member_id in ids:
        subscribed = shared if shared is not None else draw(subscription)
        instance = draw(st.none() | st.sampled_from(_INSTANCE_POOL)) if static else None
        rack = draw(st.sampled_from((None, "", *RACKS, "d"))) if racks else None
        mine: tuple[TopicPartition, ...] = ()
        generation = -1
        if owned and existing:
            mine = tuple(draw(st.lists(st.sampled_from(existing), max_size=6, unique=True)))
            generation = draw(st.integers(min_value=-1, max_value=4))
        members.append(Member(member_id, tuple(subscribed), mine, generation, instance, rack))
    prefer = draw(st.booleans()) if racks else False
    return AssignmentRequest(members, topics, prefer)
