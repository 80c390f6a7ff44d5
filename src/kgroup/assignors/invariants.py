"""What every assignment must satisfy, as library code: each check returns a list of violations.

An empty list means the assignment is sound. The checks are used by the unit and property tests,
by ``kgroup assign --compare`` (stickiness) and, later, after every simulator step.

* :func:`check_coverage` – every partition of a subscribed, existing topic is assigned exactly once,
  and nothing else is assigned (unknown topics, partitions out of range). With ``cooperative=True``
  a partition may stay unassigned while some member still owns it (Kafka's cooperative protocol
  withholds a moving partition until a follow-up rebalance).
* :func:`check_subscriptions` – members receive only topics they subscribe to.
* :func:`stale_sticky_claims` – what Kafka's eager ``sticky`` does give a member outside its
  subscription: its own stale claim, handed back (``docs/member.md``); a caller reports it apart.
* :func:`check_members` – the result names every member of the group, and only them.
* :func:`check_balance` – balance where Kafka promises it (see the function).
* :func:`check_cooperative` – no partition goes to a new owner while another member still owns it.
* :func:`stickiness` – how many owned partitions were kept, moved to another member, or released.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter

from kgroup.assignors.sticky.userdata import decode_sticky_user_data
from kgroup.javacompat import java_string_key
from kgroup.model import Member, TopicMetadata, TopicPartition, sorted_partitions

__all__ = [
    "Stickiness",
    "check_all",
    "check_balance",
    "check_balance_within_one",
    "check_cooperative",
    "check_coverage",
    "check_members",
    "check_range_balance",
    "check_sticky_balance",
    "check_subscriptions",
    "stale_sticky_claims",
    "stickiness",
    "subscriptions_equal",
]

Result = Mapping[str, Sequence[TopicPartition]]

_TOPIC = itemgetter(0)  # a TopicPartition's topic, read in C

#: at most this many violations of one kind are listed (a broken million-partition result would
#: otherwise produce a million lines)
MAX_LISTED = 20


def _limited(found: Iterable[str]) -> list[str]:
    out: list[str] = []
    extra = 0
    for text in found:
        if len(out) < MAX_LISTED:
            out.append(text)
        else:
            extra += 1
    if extra:
        out.append(f"... and {extra} more")
    return out


def _subscribed_existing(members: Sequence[Member], topics: Mapping[str, TopicMetadata]) -> list[str]:
    names: set[str] = set()
    for m in members:
        names.update(m.topics)
    return sorted((t for t in names if t in topics), key=java_string_key)


def check_coverage(
    members: Sequence[Member],
    topics: Mapping[str, TopicMetadata],
    assignment: Result,
    *,
    cooperative: bool = False,
) -> list[str]:
    """Every subscribed existing partition assigned exactly once; nothing unknown assigned."""
    if _covered_exactly(members, topics, assignment, cooperative):
        return []
    counts: Counter[TopicPartition] = Counter()
    for partitions in assignment.values():
        counts.update(partitions)
    owned: set[TopicPartition] = set()
    if cooperative:
        for m in members:
            owned.update(m.owned)

    def found() -> Iterable[str]:
        wanted = _subscribed_existing(members, topics)
        wanted_set = set(wanted)
        for tp, n in counts.items():
            if n > 1:
                yield f"{tp} is assigned {n} times"
            meta = topics.get(tp.topic)
            if tp.topic not in wanted_set or meta is None:
                yield f"{tp} is assigned but its topic is not a subscribed, existing topic"
            elif not 0 <= tp.partition < meta.partitions:
                yield f"{tp} is assigned but topic {tp.topic!r} has {meta.partitions} partitions"
        for topic in wanted:
            for p in range(topics[topic].partitions):
                tp = TopicPartition(topic, p)
                if tp not in counts and tp not in owned:
                    yield f"{tp} is not assigned"

    return _limited(found())


def _covered_exactly(
    members: Sequence[Member],
    topics: Mapping[str, TopicMetadata],
    assignment: Result,
    cooperative: bool,
) -> bool:
    """Whether :func:`check_coverage` has nothing to report, decided with set operations only (the
    usual case; when it is not, the checks run one by one to list what is wrong)."""
    assigned: set[TopicPartition] = set()
    for partitions in assignment.values():
        assigned.update(partitions)
    if sum(map(len, assignment.values())) != len(assigned):
        return False  # a partition assigned twice
    expected: set[tuple[str, int]] = set()
    for topic in _subscribed_existing(members, topics):
        # plain (topic, partition) tuples equal and hash like TopicPartitions
        expected.update(zip(repeat(topic), range(topics[topic].partitions)))
    if not expected.issuperset(assigned):
        return False  # an unknown topic or partition
    missing = expected.difference(assigned)
    if not missing:
        return True
    if not cooperative:
        return False
    owned: set[TopicPartition] = set()  # (only read when something is unassigned)
    for m in members:
        owned.update(m.owned)
    return missing.issubset(owned)


def check_subscriptions(members: Sequence[Member], assignment: Result) -> list[str]:
    """No member receives a partition of a topic it does not subscribe to."""
    subscribed = {m.member_id: set(m.topics) for m in members}
    if all(
        mine.issuperset(map(_TOPIC, partitions))
        for member_id, partitions in assignment.items()
        if (mine := subscribed.get(member_id)) is not None
    ):
        return []  # the usual case, decided with set operations (in C)

    def found() -> Iterable[str]:
        for member_id, partitions in assignment.items():
            mine = subscribed.get(member_id)
            if mine is None:
                continue
            for tp in partitions:
                if tp.topic not in mine:
                    yield f"{member_id} got {tp} but does not subscribe to {tp.topic!r}"

    return _limited(found())


def stale_sticky_claims(members: Sequence[Member], assignment: Result) -> dict[str, list[TopicPartition]]:
    """The partitions outside a member's subscription that it claims itself in eager ``sticky`` user
    data: Kafka's ``StickyAssignor`` gives exactly those back (issue 22, ``docs/member.md``).

    Its user data is the member's last *accepted* assignment, whatever it subscribes to now. A claim
    older than the newest generation becomes a previous owner (``prevAssignment``) and
    ``performReassignments`` moves a partition back to its previous owner when the current owner has
    two more — without asking whether the previous owner still subscribes to the topic. Any other
    partition outside a subscription is not Kafka's doing and stays a :func:`check_subscriptions`
    violation. Only for an assignment made by ``sticky`` (the caller knows the selected protocol);
    unreadable user data claims nothing, as in Kafka.
    """
    found: dict[str, list[TopicPartition]] = {}
    for m in members:
        outside = [tp for tp in assignment.get(m.member_id, ()) if tp.topic not in m.topics]
        if not outside or m.user_data is None:
            continue
        try:
            claimed = set(decode_sticky_user_data(m.user_data)[0])
        except ValueError:
            continue
        mine = [tp for tp in outside if tp in claimed]
        if mine:
            found[m.member_id] = mine
    return found


def check_members(members: Sequence[Member], assignment: Result) -> list[str]:
    """Every member is in the result (maybe with nothing), and no one else is."""
    ids = [m.member_id for m in members]
    missing = [f"member {m} is missing from the assignment" for m in ids if m not in assignment]
    known = set(ids)
    unknown = [f"{m} is in the assignment but not in the group" for m in assignment if m not in known]
    return _limited(missing + unknown)


def subscriptions_equal(members: Sequence[Member]) -> bool:
    """Whether every member subscribes to the same set of topics."""
    return len({frozenset(m.topics) for m in members}) <= 1


def check_balance_within_one(members: Sequence[Member], assignment: Result) -> list[str]:
    """All members' partition counts within one of each other."""
    if not members:
        return []
    sizes = {m.member_id: len(assignment.get(m.member_id, ())) for m in members}
    low = min(sizes, key=lambda m: sizes[m])
    high = max(sizes, key=lambda m: sizes[m])
    if sizes[high] - sizes[low] > 1:
        return [
            f"unbalanced: {high} has {sizes[high]} partitions, {low} has {sizes[low]} (more than one apart)"
        ]
    return []


def check_range_balance(
    members: Sequence[Member], topics: Mapping[str, TopicMetadata], assignment: Result
) -> list[str]:
    """Range's promise: per topic, the topic's subscribers' counts are within one of each other."""
    per_topic: dict[str, Counter[str]] = {}
    for member_id, partitions in assignment.items():
        for tp in partitions:
            per_topic.setdefault(tp.topic, Counter())[member_id] += 1

    def found() -> Iterable[str]:
        for topic in _subscribed_existing(members, topics):
            counts = per_topic.get(topic, Counter())
            sizes = [counts[m.member_id] for m in members if topic in m.topics]
            if sizes and max(sizes) - min(sizes) > 1:
                yield f"topic {topic!r}: subscribers hold between {min(sizes)} and {max(sizes)} partitions"

    return _limited(found())


def check_sticky_balance(members: Sequence[Member], assignment: Result) -> list[str]:
    """The sticky assignors' promise for any subscriptions: if member ``a`` holds at least two more
    partitions than member ``b``, none of ``a``'s partitions is of a topic ``b`` subscribes to
    (otherwise moving it would improve balance). With equal subscriptions this is "within one"."""
    subscribed = {m.member_id: set(m.topics) for m in members}
    sizes = {m.member_id: len(assignment.get(m.member_id, ())) for m in members}

    def found() -> Iterable[str]:
        for a in members:
            topics_of_a = {tp.topic for tp in assignment.get(a.member_id, ())}
            for b in members:
                if sizes[a.member_id] < sizes[b.member_id] + 2:
                    continue
                shared = topics_of_a & subscribed[b.member_id]
                if shared:
                    topic = min(shared, key=java_string_key)
                    yield (
                        f"unbalanced: {a.member_id} has {sizes[a.member_id]} partitions, {b.member_id} has "
                        f"{sizes[b.member_id]} and could take one of topic {topic!r}"
                    )

    return _limited(found())


def check_balance(
    assignor: str, members: Sequence[Member], topics: Mapping[str, TopicMetadata], assignment: Result
) -> list[str]:
    """Balance where Kafka promises it, by assignor name.

    * ``range``: per topic, within one among the topic's subscribers.
    * ``roundrobin``: within one when all subscriptions are equal.
    * ``sticky`` / ``cooperative-sticky``: :func:`check_sticky_balance` (within one when all
      subscriptions are equal). For ``cooperative-sticky`` check the result of the follow-up
      rebalance: the first round withholds moving partitions.
    * other names: no promise checked here. (The ZooKeeper-era assignors balance *threads*, not
      consumers; check :attr:`kgroup.assignors.legacy.ThreadAssignment.threads` for them.)
    """
    if assignor == "range":
        return check_range_balance(members, topics, assignment)
    if assignor == "roundrobin":
        return check_balance_within_one(members, assignment) if subscriptions_equal(members) else []
    if assignor in ("sticky", "cooperative-sticky"):
        return check_sticky_balance(members, assignment)
    return []


def check_cooperative(members: Sequence[Member], assignment: Result) -> list[str]:
    """No partition is given to a member while another member still owns (claims) it this round."""
    claimed_by: dict[TopicPartition, list[str]] = {}
    for m in members:
        for tp in m.owned:
            claimed_by.setdefault(tp, []).append(m.member_id)

    def found() -> Iterable[str]:
        for member_id, partitions in assignment.items():
            for tp in partitions:
                others = [o for o in claimed_by.get(tp, ()) if o != member_id]
                if others:
                    yield f"{tp} goes to {member_id} while {others[0]} still owns it"

    return _limited(found())


def check_all(
    members: Sequence[Member],
    topics: Mapping[str, TopicMetadata],
    assignment: Result,
    assignor: str | None = None,
) -> list[str]:
    """Coverage, subscriptions, members, and (with an assignor name) balance and the cooperative rule."""
    cooperative = assignor == "cooperative-sticky"
    problems = check_members(members, assignment)
    problems += check_coverage(members, topics, assignment, cooperative=cooperative)
    problems += check_subscriptions(members, assignment)
    if assignor is not None:
        if cooperative:
            problems += check_cooperative(members, assignment)
        else:
            problems += check_balance(assignor, members, topics, assignment)
    return problems


@dataclass(frozen=True, slots=True)
class Stickiness:
    """How an assignment treats the partitions members reported as owned.

    ``kept``: owned and assigned to the same member again. ``moved``: owned by one member, assigned
    to another. ``released``: owned but assigned to no one (a withheld cooperative partition, or a
    partition of a topic no longer subscribed or gone). ``gained``: assigned partitions the member did
    not own (includes ``moved``). ``moved_partitions`` lists the moved ones, sorted.
    """

    kept: int
    moved: int
    released: int
    gained: int
    moved_partitions: tuple[TopicPartition, ...]

    @property
    def owned(self) -> int:
        return self.kept + self.moved + self.released


def stickiness(members: Sequence[Member], assignment: Result) -> Stickiness:
    """Count kept / moved / released owned partitions and newly gained ones.

    A partition claimed by several members counts once per claim (each claim is either kept by its
    claimant or lost by it).
    """
    owner_now: dict[TopicPartition, str] = {}
    for member_id, partitions in assignment.items():
        for tp in partitions:
            owner_now[tp] = member_id
    kept = moved = released = 0
    moved_partitions: set[TopicPartition] = set()
    for m in members:
        for tp in set(m.owned):
            now = owner_now.get(tp)
            if now == m.member_id:
                kept += 1
            elif now is None:
                released += 1
            else:
                moved += 1
                moved_partitions.add(tp)
    owned_by = {m.member_id: set(m.owned) for m in members}
    gained = sum(
        1 for member_id, ps in assignment.items() for tp in ps if tp not in owned_by.get(member_id, set())
    )
    return Stickiness(kept, moved, released, gained, tuple(sorted_partitions(moved_partitions)))
