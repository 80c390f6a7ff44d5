"""Kafka's sticky rules, one readable case each (the vectors cover them in bulk)."""

from __future__ import annotations

import pytest

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.sticky import CooperativeStickyAssignor, StickyAssignmentError, StickyAssignor
from kgroup.assignors.sticky.userdata import encode_sticky_user_data
from kgroup.javacompat import hashmap_iteration_order
from kgroup.model import KgroupError, Member, TopicMetadata, TopicPartition


def tps(topic: str, *numbers: int) -> list[TopicPartition]:
    return [TopicPartition(topic, n) for n in numbers]


def eager(
    member_id: str, topics: tuple[str, ...], owned: list[TopicPartition], generation: int = 1
) -> Member:
    return Member(member_id, topics, user_data=encode_sticky_user_data(owned, generation))


def test_hashmap_order_decides_who_keeps_max_quota() -> None:
    """10 partitions, owned 3 / 3 / 4, one member joins: quotas 2..3, only two members may keep 3.

    The members are visited in Java ``HashMap`` order (c3, c0, c1, c2 — buckets 0, 13, 14, 15), not
    in the given order: c0 and c1 keep three, c2 (which owned four) is cut to two.
    """
    topics = {"t": TopicMetadata("t", 10)}
    members = [
        eager("c2", ("t",), tps("t", 6, 7, 8, 9)),
        eager("c1", ("t",), tps("t", 3, 4, 5)),
        eager("c0", ("t",), tps("t", 0, 1, 2)),
        Member("c3", ("t",)),
    ]
    assert hashmap_iteration_order(m.member_id for m in members) == ["c3", "c0", "c1", "c2"]
    request = AssignmentRequest(members, topics)
    expected = {"c0": tps("t", 0, 1, 2), "c1": tps("t", 3, 4, 5), "c2": tps("t", 6, 7), "c3": tps("t", 8, 9)}
    assert StickyAssignor().assign(request) == expected

    owned = {"c2": tps("t", 6, 7, 8, 9), "c1": tps("t", 3, 4, 5), "c0": tps("t", 0, 1, 2), "c3": []}
    cooperative = [Member(m, ("t",), tuple(ps), 1) for m, ps in owned.items()]
    # cooperative: t-8 and t-9 leave c2 this round and reach c3 in the next
    assert CooperativeStickyAssignor().assign(AssignmentRequest(cooperative, topics)) == {
        **expected,
        "c3": [],
    }


def test_owned_partitions_are_kept_partition_number_first() -> None:
    """A member over quota keeps its owned partitions sorted by partition number, then topic."""
    topics = {"a": TopicMetadata("a", 2), "b": TopicMetadata("b", 2)}
    members = [eager("x", ("a", "b"), [*tps("b", 0), *tps("a", 1, 0)]), Member("y", ("a", "b"))]
    result = StickyAssignor().assign(AssignmentRequest(members, topics))
    assert result == {"x": [*tps("a", 0), *tps("b", 0)], "y": [*tps("a", 1), *tps("b", 1)]}


def test_rack_mismatched_owned_partitions_move_and_cooperative_withholds_them() -> None:
    racks = (frozenset({"a"}), frozenset({"b"}))
    topics = {"t": TopicMetadata("t", 2, racks)}
    members = [
        Member("x", ("t",), tuple(tps("t", 1)), 1, rack_id="a"),
        Member("y", ("t",), tuple(tps("t", 0)), 1, rack_id="b"),
    ]
    request = AssignmentRequest(members, topics)
    # eager: each member gives up its partition on the other rack and takes the one on its own
    eager_with_racks = [
        Member("x", ("t",), rack_id="a", user_data=encode_sticky_user_data(tps("t", 1), 1)),
        Member("y", ("t",), rack_id="b", user_data=encode_sticky_user_data(tps("t", 0), 1)),
    ]
    assert StickyAssignor().assign(AssignmentRequest(eager_with_racks, topics)) == {
        "x": tps("t", 0),
        "y": tps("t", 1),
    }
    # both partitions change owner, so the cooperative assignor withholds both for a follow-up round
    assert CooperativeStickyAssignor().assign(request) == {"x": [], "y": []}
    # without racks on the members nothing moves
    no_racks = [Member(m.member_id, m.topics, m.owned, m.generation) for m in members]
    assert CooperativeStickyAssignor().assign(AssignmentRequest(no_racks, topics)) == {
        "x": tps("t", 1),
        "y": tps("t", 0),
    }


def test_same_generation_double_claim_is_withheld_from_everyone_by_cooperative() -> None:
    topics = {"t": TopicMetadata("t", 3)}
    members = [
        Member("a", ("t",), tuple(tps("t", 0, 1)), 4),
        Member("b", ("t",), tuple(tps("t", 1, 2)), 4),
        Member("c", ("t",), (), 4),
    ]
    result = CooperativeStickyAssignor().assign(AssignmentRequest(members, topics))
    assert result["a"] == tps("t", 0) and result["b"] == tps("t", 2)
    assert result["c"] == []  # t-1 was claimed twice in generation 4: nobody gets it this round


def test_higher_generation_claim_wins() -> None:
    topics = {"t": TopicMetadata("t", 2)}
    members = [Member("a", ("t",), tuple(tps("t", 0, 1)), 3), Member("b", ("t",), tuple(tps("t", 1)), 5)]
    assert CooperativeStickyAssignor().assign(AssignmentRequest(members, topics)) == {
        "a": tps("t", 0),
        "b": tps("t", 1),
    }


def test_unsubscribed_and_missing_topics_are_skipped_and_every_member_appears() -> None:
    topics = {
        "t": TopicMetadata("t", 2),
        "empty": TopicMetadata("empty", 0),
        "other": TopicMetadata("other", 5),
    }
    members = [Member("x", ("t", "ghost", "empty")), Member("y", ("t",)), Member("idle", ())]
    result = StickyAssignor().assign(AssignmentRequest(members, topics))
    assert set(result) == {"x", "y", "idle"}
    assert sorted(tp for ps in result.values() for tp in ps) == tps("t", 0, 1)
    assert result["idle"] == []


def test_no_members_gives_an_empty_assignment() -> None:
    # Kafka divides by zero here; a real group always has its leader, kgroup answers {}.
    assert StickyAssignor().assign(AssignmentRequest([], {"t": TopicMetadata("t", 3)})) == {}


def test_duplicate_member_ids_are_a_clear_error() -> None:
    members = [Member("x", ("t",)), Member("x", ("t",))]
    with pytest.raises(KgroupError, match="appears twice"):
        StickyAssignor().assign(AssignmentRequest(members, {"t": TopicMetadata("t", 1)}))


def test_kafka_failure_on_a_stale_owner_outside_reassignment_is_reproduced() -> None:
    """Kafka's general path dereferences the previous owner's assignment without checking that the
    owner is still part of the reassignment; when it is not (here c2 moved to topic u, of which it is
    the only subscriber, after missing a generation in which it owned t-0) Kafka throws a
    NullPointerException. kgroup raises the same failure as a one-line error."""
    topics = {"t": TopicMetadata("t", 4), "u": TopicMetadata("u", 1)}
    members = [
        Member("c0", ("t",), tuple(tps("t", 0, 1, 2, 3)), 2),
        Member("c1", ("t",), (), 2),
        Member("c2", ("u",), tuple(tps("t", 0)), 1),
    ]
    with pytest.raises(StickyAssignmentError, match="NullPointerException") as failure:
        CooperativeStickyAssignor().assign(AssignmentRequest(members, topics))
    assert "\n" not in str(failure.value)
    # with c2 on the current generation it is no previous owner, and the assignment completes
    current = [*members[:2], Member("c2", ("u",), tuple(tps("t", 0)), 2)]
    result = CooperativeStickyAssignor().assign(AssignmentRequest(current, topics))
    assert result["c2"] == tps("u", 0)



def test_eager_sticky_gives_a_stale_claim_back_to_a_member_that_left_its_topic() -> None:
    """Issue 22. ``StickyAssignor`` (eager) reads a member's claims from its user data, which holds its
    last accepted assignment whatever it subscribes to now. A claim older than the newest generation
    becomes a "previous owner" (``prevAssignment``), and ``performReassignments`` moves a partition
    back to its previous owner when the current owner has 2+ more partitions — without checking that
    the previous owner still subscribes to the topic. So ``a``, which now subscribes to t0 only but
    whose user data (generation 1) still claims t1-0..2, gets t1-0.

    This is Kafka's answer: the same input run through ``StickyAssignor`` of kafka-clients 4.4.0 (one
    fresh instance) gives exactly ``expected`` (docs/member.md, "A changed subscription and eager
    sticky's stale claims")."""
    topics = {"t0": TopicMetadata("t0", 1), "t1": TopicMetadata("t1", 6)}
    members = [
        eager("a", ("t0",), tps("t1", 0, 1, 2), generation=1),
        eager("b", ("t0", "t1"), [*tps("t0", 0), *tps("t1", 3, 4)], generation=2),
        eager("c", ("t1",), tps("t1", 0, 1, 2, 5), generation=2),
    ]
    expected = {"a": [*tps("t0", 0), *tps("t1", 0)], "b": tps("t1", 3, 4), "c": tps("t1", 1, 2, 5)}
    assert StickyAssignor().assign(AssignmentRequest(members, topics)) == expected
    # with a's claim as new as the others' it is no previous owner: nothing outside its subscription
    current = [eager("a", ("t0",), tps("t1", 0, 1, 2), generation=2), *members[1:]]
    result = StickyAssignor().assign(AssignmentRequest(current, topics))
    assert {tp.topic for tp in result["a"]} == {"t0"}

def test_protocols_and_names() -> None:
    from kgroup.assignors import create_assignor
    from kgroup.model import RebalanceProtocol

    sticky, cooperative = create_assignor("sticky"), create_assignor("cooperative-sticky")
    assert isinstance(sticky, StickyAssignor) and isinstance(cooperative, CooperativeStickyAssignor)
    assert sticky.protocols == (RebalanceProtocol.EAGER,)
    assert cooperative.protocols == (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)
    assert cooperative.supports(RebalanceProtocol.COOPERATIVE) and not sticky.supports(
        RebalanceProtocol.COOPERATIVE
    )


def test_eager_sticky_stale_claim_with_the_member_ids_of_an_apache_kafka_run() -> None:
    """Generation 4 of tests/apache_kafka/test_java_subscription_change.py's leader run (Apache Kafka
    4.4.0, real clients): c0 subscribes to ``a`` only and its user data claims its generation-2
    partitions (it refused generation 3), c1 and c2 claim generation 3's. Kafka (the live leader, and
    the 4.4.0 jar through the oracle) hands c0 its stale b-0, b-1 back — and so does kgroup.

    The subscription's own ``generationId`` decides it. Members are visited in ``HashMap`` order
    (c2, c0, c1); c0 claims a-2 and b-2 after c2 did, and ``allSubscriptionsEqual`` (4.3.1 line 173)
    compares c0's *user-data* generation (2) with c2's *subscription* ``generationId``. A real client
    sends its current generation there (``ConsumerCoordinator.metadata``: ``generation().generationId``
    — 3 for all three, c0 included: refusing an assignment in ``onJoinComplete`` does not reset it), so
    c2 keeps a-2, b-2. A subscription without that field (v0/v1, before KIP-792: ``-1``) loses both
    to c0's claim, and then Kafka, like kgroup, gives c0 ``a-0 a-1 a-2 b-2``
    (``tests/apache_kafka/test_oracle_vectors.py`` asks the oracle both)."""
    a, b = "a", "b"
    topics = {a: TopicMetadata(a, 4), b: TopicMetadata(b, 8)}
    claims = [
        ("c0-c113810d-3ce1-45f2-9115-49bdc5a21172", (a,), [*tps(a, 0, 1, 2), *tps(b, 0, 1, 2)], 2),
        ("c1-2e14f84b-fa70-4ac5-80b0-7306a8484a51", (a, b), [*tps(a, 3), *tps(b, 3, 4, 5)], 3),
        ("c2-17848f14-cbfb-46b8-96be-946f9b983de5", (a, b), [*tps(a, 2), *tps(b, 2, 6, 7)], 3),
    ]
    ids = [member_id for member_id, *_ in claims]
    assert hashmap_iteration_order(ids) == [ids[2], ids[0], ids[1]]

    def members(sent: int) -> list[Member]:
        """``sent``: every subscription's own ``generationId`` (-1: the field is absent)."""
        return [
            Member(m, subscribed, generation=sent, user_data=encode_sticky_user_data(owned, g))
            for m, subscribed, owned, g in claims
        ]

    live = StickyAssignor().assign(AssignmentRequest(members(3), topics))
    assert live == {
        ids[0]: [*tps(a, 0, 1), *tps(b, 0, 1)],
        ids[1]: [*tps(a, 3), *tps(b, 3, 4, 5)],
        ids[2]: [*tps(a, 2), *tps(b, 2, 6, 7)],
    }
    without_field = StickyAssignor().assign(AssignmentRequest(members(-1), topics))
    assert without_field == {
        ids[0]: [*tps(a, 0, 1, 2), *tps(b, 2)],
        ids[1]: [*tps(a, 3), *tps(b, 3, 4, 5)],
        ids[2]: tps(b, 0, 1, 6, 7),
    }
