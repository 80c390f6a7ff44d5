"""Issue 22 with Kafka's own Java clients: a static member changes its subscription while a rebalance
is in flight, on kgroup's broker and on Apache Kafka.

Three static members (instance ids c0, c1, c2) of topics ``a`` (4 partitions) and ``b`` (8): c0 joins
first (the leader), c1 next; then one of them (the *target*: the leader c0 or the follower c1) drops
``b`` while its JoinGroup for the rebalance c2's arrival starts is in flight. The other one is held
out of ``poll()`` (``pause_polling``: its JoinGroup, and so the join, waits), and the target's
``subscribe([a])`` is taken only after the ``poll()`` that sent its JoinGroup returned (its log's
``(Re-)joining group`` line, written in that same ``poll()`` before the request is built), so the
generation is assigned from the target's old subscription every run.

With eager ``sticky`` (Kafka's ``StickyAssignor``) the target refuses that assignment
(``onJoinComplete``: "received assignment … does not match the current subscription") and keeps its
sticky user data (its generation-2 claim); every later generation hands part of that stale claim in
``b`` back to it, it refuses again, and the group rebalances again — for as long as the test watches.
Each generation's assignment is exactly what Kafka's own ``StickyAssignor`` (the oracle), and
kgroup's, computes from what the leader received: the members in the JoinGroup response's order,
each one's claim (its user data) and its subscription's ``generationId``, on an assignor that
already saw the leader's earlier generations (``maxGeneration`` lives in the leader's assignor
instance). The claims themselves are asserted to be what docs/member.md says: the target's
generation-2 one, the others' latest, every subscription at the generation before. With
``cooperative-sticky`` the target refuses the one generation assigned from its old subscription,
then revokes ``b`` in ``onJoinPrepare`` and the group settles (docs/member.md, "A changed
subscription and eager sticky's stale claims").
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from apache_kafka.conftest import Target
from apache_kafka.groups import FAST, all_partitions, show, wait_settled
from kgroup.assignors.fileformat import parse_assignment_file, run_assignment_file
from kgroup.assignors.sticky.userdata import decode_sticky_user_data
from kgroup.model import TopicPartition
from kgroup.testing.apache_kafka import ApacheKafka, KafkaOracle
from kgroup.testing.apache_kafka.java_client import JavaConsumer, Rebalance, close_all, start_all
from kgroup.wire.consumer_protocol import decode_subscription

pytestmark = pytest.mark.slow

PARTITIONS = {"a": 4, "b": 8}
#: how many refusals of eager sticky's stale claim the test watches for (each is a new generation)
LOOPS = 4
_SYNCED = re.compile(r"Successfully synced group in generation Generation\{generationId=(\d+)")
_REFUSED = re.compile(r"Request joining group due to: received assignment \[(.*?)\] does not match")
_JOINING = "(Re-)joining group"
_SYNC_FAILED = re.compile(r"SyncGroup failed: .*?Sent generation was Generation\{generationId=(\d+)")
_UPDATED = "Updated cluster metadata updateVersion"
#: the leader's JoinGroup answer (DEBUG): its generation, then each member's id and protocol metadata
_LEADER_JOINED = re.compile(
    r"Received successful JoinGroup response: JoinGroupResponseData\(.*?generationId=(\d+)"
)
_JOINED_MEMBER = re.compile(r"JoinGroupResponseMember\(memberId='([^']+)'[^\]]*?metadata=\[([-\d, ]*)\]")


def _log(consumer: JavaConsumer) -> str:
    try:
        return consumer.log_file.read_text(errors="replace")
    except FileNotFoundError:
        return ""


def _refusals(consumer: JavaConsumer) -> list[tuple[int, frozenset[TopicPartition]]]:
    """(generation, the partitions it was given) of each assignment ``onJoinComplete`` refused, from
    the client's log: Kafka logs the SyncGroup's generation, then the refusal with the assignment."""
    out: list[tuple[int, frozenset[TopicPartition]]] = []
    generation = -1
    for line in _log(consumer).splitlines():
        if found := _SYNCED.search(line):
            generation = int(found.group(1))
        elif found := _REFUSED.search(line):
            parts = [p.strip().rsplit("-", 1) for p in found.group(1).split(",") if p.strip()]
            out.append((generation, frozenset(TopicPartition(t, int(p)) for t, p in parts)))
    return out


def _accepted(consumer: JavaConsumer, generation: int) -> frozenset[TopicPartition]:
    """The consumer's whole assignment after ``generation``'s ``assigned`` callback."""
    found = [r for r in consumer.rebalances() if r.kind == "assigned" and r.generation == generation]
    assert found, f"{consumer.name} accepted no assignment in generation {generation}"
    return found[-1].assignment


@dataclass(frozen=True)
class _Joined:
    """One member as the leader's JoinGroup response gave it: its subscription and sticky claim."""

    member_id: str
    topics: tuple[str, ...]
    claim: frozenset[TopicPartition]
    claim_generation: int  # the user data's generation (-1: no user data)
    generation_id: int  # the subscription's own generationId field (the generation it last joined)


def _leader_joins(consumers: list[JavaConsumer]) -> dict[int, list[_Joined]]:
    """Every generation's members, in the order of the JoinGroup response the leader assigned from
    (parsed from the DEBUG log of whichever consumer led that generation)."""
    out: dict[int, list[_Joined]] = {}
    for consumer in consumers:
        for line in _log(consumer).splitlines():
            if not (found := _LEADER_JOINED.search(line)):
                continue
            members = []
            for member in _JOINED_MEMBER.finditer(line):
                metadata = bytes(int(b) & 0xFF for b in member.group(2).split(",") if b.strip())
                subscription = decode_subscription(metadata)
                claim, claim_generation = (
                    decode_sticky_user_data(subscription.user_data) if subscription.user_data else ([], None)
                )
                members.append(
                    _Joined(
                        member.group(1),
                        subscription.topics,
                        frozenset(claim),
                        -1 if claim_generation is None else claim_generation,
                        subscription.generation_id,
                    )
                )
            if members:  # only the leader's answer lists the members
                out[int(found.group(1))] = members
    return out


def _short(table: dict[str, frozenset[TopicPartition]], prefix: str) -> dict[str, str]:
    """``{"c0": "a0 a1 b2"}`` for an assertion message."""
    cut = len(prefix) + 1
    return {
        n: " ".join(sorted(f"{tp.topic[cut:]}{tp.partition}" for tp in parts)) for n, parts in table.items()
    }


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(0.05)


class _AfterOthers:
    """The target's ``onPartitionsRevoked`` at a rejoin returns only once every other member is done
    with the generation it refused: took it (its ``assigned`` callback, which Kafka calls after
    ``onAssignment``) or was told at SyncGroup that the group moved on (another member's own rejoin:
    cooperative's second rebalance). Its JoinGroup then never overtakes their SyncGroup, so in the
    eager case every member but the target accepts every generation — the interleaving in which the
    claims are as docs/member.md describes. (Without it the refusing member's rejoin may overtake
    their SyncGroup; then they miss the generation and send older claims, or none.)"""

    def __init__(self) -> None:
        self.others: list[JavaConsumer] = []
        #: generations whose wait ran out (the interleaving the test describes did not happen)
        self.timed_out: list[int] = []

    @staticmethod
    def _done_with(consumer: JavaConsumer, generation: int) -> bool:
        if any(r.kind == "assigned" and r.generation == generation for r in consumer.rebalances()):
            return True
        return any(int(g) == generation for g in _SYNC_FAILED.findall(_log(consumer)))

    def __call__(self, rebalance: Rebalance) -> None:
        if rebalance.kind != "revoked" or not self.others:
            return
        # below the Java driver's own 60 s wait for this callback's answer
        deadline = time.monotonic() + 45
        while time.monotonic() < deadline:
            if all(self._done_with(c, rebalance.generation) for c in self.others):
                return
            time.sleep(0.05)
        self.timed_out.append(rebalance.generation)


class _AfterTarget:
    """An other member's ``onPartitionsRevoked`` returns only once the target is done with the
    generation it revokes in: the target's SyncGroup of it answered, or failed. Cooperative's
    members revoke in ``onJoinComplete`` and rejoin at once; without this, under load the leader's
    rejoin may reach the broker before the target's SyncGroup, which then fails with
    REBALANCE_IN_PROGRESS — the target never receives the generation assigned from its old
    subscription, so there is nothing for it to refuse."""

    def __init__(self) -> None:
        self.target: JavaConsumer | None = None
        self.timed_out: list[int] = []

    def _done(self, generation: int) -> bool:
        assert self.target is not None
        log = _log(self.target)
        return any(int(g) == generation for g in (*_SYNCED.findall(log), *_SYNC_FAILED.findall(log)))

    def __call__(self, rebalance: Rebalance) -> None:
        if rebalance.kind != "revoked" or self.target is None:
            return
        deadline = time.monotonic() + 45  # below the Java driver's 60 s wait for the answer
        while time.monotonic() < deadline:
            if self._done(rebalance.generation):
                return
            time.sleep(0.05)
        self.timed_out.append(rebalance.generation)


def _members(
    target: Target,
    names: str,
    tmp_path: Path,
    strategy: str,
    who: int,
    hook: _AfterOthers,
    others_hook: _AfterTarget | None = None,
) -> tuple[dict[str, str], list[JavaConsumer]]:
    topics = {f"{names}-{t}": n for t, n in PARTITIONS.items()}
    for topic, count in topics.items():
        target.create_topic(topic, count)
    consumers = [
        JavaConsumer(
            target.bootstrap_servers,
            f"{names}-g",
            list(topics),
            group_instance_id=name,
            client_id=name,
            name=name,
            log_dir=tmp_path,
            subscribe=False,
            assignment_strategy=strategy,
            # DEBUG: the target's metadata updates (below) and the leader's JoinGroup answers
            log_level="DEBUG",
            on_rebalance=hook if k == who else others_hook,
            **FAST,
        )
        for k, name in enumerate(("c0", "c1", "c2"))
    ]
    return {t: f"{names}-{t}" for t in PARTITIONS}, consumers


def _change_in_flight(
    consumers: list[JavaConsumer],
    who: int,
    keep: list[str],
    hook: _AfterOthers,
    others_hook: _AfterTarget | None = None,
) -> None:
    """c0 and c1 settle; c1 (or c0) is held out of poll(); c2 joins; once the target has sent its
    JoinGroup, it subscribes to ``keep``; then the held member goes on."""
    c0, c1, c2 = consumers
    topics = list(c0.topics)
    everything = all_partitions({t: PARTITIONS[t.rsplit("-", 1)[1]] for t in topics})
    c0.subscribe()
    wait_settled([c0], everything)
    c1.subscribe()
    wait_settled([c0, c1], everything)
    assert c0.generation == c1.generation  # 2 (eager); cooperative hands over in a second rebalance
    target, held = (c0, c1) if who == 0 else (c1, c0)
    joins = _log(target).count(_JOINING)
    held.pause_polling()
    c2.subscribe()
    _wait(lambda: _log(target).count(_JOINING) > joins, f"{target.name}'s JoinGroup")
    hook.others = [c for c in consumers if c is not target]
    if others_hook is not None:
        others_hook.target = target
    target.subscribe(keep)
    # subscribe() asks for the new subscription's metadata; let that answer land before the join
    # completes (otherwise a leader may assign from metadata without the dropped topic: see the
    # module's docstring)
    changed = _log(target).rindex("Subscribed to topic(s): " + ", ".join(keep))
    _wait(lambda: _UPDATED in _log(target)[changed:], f"{target.name}'s metadata update")
    held.resume_polling()


def _leader_input(topics: dict[str, int], joined: list[_Joined], prior_max_generation: int) -> dict[str, Any]:
    """What the leader's StickyAssignor was given, as an assignment input (vectors/FORMAT.md): the
    members in the JoinGroup response's order (its ``HashMap``'s insertion order, which breaks ties),
    each claim as user data, each subscription's ``generationId``; ``prior_max_generation`` is what
    the leader's assignor instance kept from its earlier calls (``maxGeneration``)."""
    members = [
        {
            "memberId": m.member_id,
            "topics": list(m.topics),
            "generation": m.generation_id,
            "userData": (
                None
                if m.claim_generation < 0 and not m.claim
                else {
                    "partitions": [f"{tp.topic}-{tp.partition}" for tp in sorted(m.claim)],
                    "generation": m.claim_generation,
                }
            ),
        }
        for m in joined
    ]
    return {
        "topics": [{"name": t, "partitions": n} for t, n in topics.items()],
        "members": members,
        "priorMaxGeneration": prior_max_generation,
    }


def _kafka_sticky(oracle: KafkaOracle, data: dict[str, Any]) -> dict[str, frozenset[TopicPartition]]:
    """Kafka's own StickyAssignor (the oracle: kafka-clients in one JVM) on ``data``."""
    answer = oracle.assign("sticky", data)
    assert answer.error is None and answer.assignment is not None, answer.error
    return {m: frozenset(parts) for m, parts in answer.assignment.items()}


def _kgroup_sticky(data: dict[str, Any]) -> dict[str, frozenset[TopicPartition]]:
    """kgroup's StickyAssignor on the same input."""
    answer = run_assignment_file(parse_assignment_file({"assignor": "sticky", "input": data}))
    return {m: frozenset(parts) for m, parts in answer.items()}


@pytest.fixture
def target(apache_kafka: ApacheKafka) -> Target:
    """Apache Kafka only: the question is what Kafka does (kgroup's side is the simulator's)."""
    return Target("apache", apache_kafka)


@pytest.mark.parametrize("who", [0, 1], ids=["leader", "follower"])
def test_eager_sticky_hands_a_dropped_topic_back_at_every_generation(
    target: Target, names: str, tmp_path: Path, who: int, kafka_oracle: KafkaOracle
) -> None:
    hook = _AfterOthers()
    topic, consumers = _members(target, names, tmp_path, "sticky", who, hook)
    start_all(*consumers)
    try:
        _change_in_flight(consumers, who, [topic["a"]], hook)
        member = consumers[who]
        other = consumers[1 - who]
        c2 = consumers[2]
        _wait(lambda: len(_refusals(member)) >= LOOPS, f"{LOOPS} refusals by {member.name}", 45)
        refused = _refusals(member)[:LOOPS]
        # every generation from the one that was assigned from its old subscription on: refused
        assert [g for g, _ in refused] == list(range(3, 3 + LOOPS)), refused
        accepted = [r for r in member.rebalances() if r.kind == "assigned"]
        claim = accepted[-1]  # its last accepted assignment: generation 2's
        assert claim.generation == 2
        assert all(parts and {tp.topic for tp in parts} & {topic["b"]} for _, parts in refused), refused
        # from generation 4 on, what it gets of b is its own stale claim, handed back
        for _, parts in refused[1:]:
            assert {tp for tp in parts if tp.topic == topic["b"]} <= claim.assignment, refused
        # it never took them: after revoking generation 2's partitions (eager) its listener was only
        # told of empty revocations at each rejoin, and never of an assignment
        later = [(r.kind, r.partitions) for r in member.rebalances() if r.ts_ms >= claim.ts_ms][1:]
        assert later[0] == ("revoked", claim.assignment), later
        assert len(later) > 1 and set(later[1:]) == {("revoked", frozenset())}, later

        # the others accepted every generation; nobody consumes what was handed to the target. Their
        # callbacks reach the test through their own drivers' event streams, which can trail the
        # target's: wait (bounded) until both have reported every refused generation
        def accepted_table() -> dict[int, dict[str, frozenset[TopicPartition]]]:
            found: dict[int, dict[str, frozenset[TopicPartition]]] = {}
            for consumer in (other, c2):
                for rebalance in consumer.rebalances():
                    if rebalance.kind == "assigned" and rebalance.generation >= 3:
                        found.setdefault(rebalance.generation, {})[consumer.name] = rebalance.assignment
            return found

        def all_reported() -> bool:
            found = accepted_table()
            return all(len(found.get(g, {})) == 2 for g, _ in refused)

        deadline = time.monotonic() + 20
        while not all_reported() and time.monotonic() < deadline:
            time.sleep(0.1)
        table = accepted_table()
        for generation, parts in refused:
            assert generation in table, show(table)
            taken = table[generation][other.name] | table[generation][c2.name]
            assert not taken & parts and taken | parts == all_partitions(
                {t: n for t, n in ((topic[k], PARTITIONS[k]) for k in PARTITIONS)}
            ), generation
        # the claims below assume every other member took each generation before the target
        # rejoined (the hook's bounded wait); say so if that interleaving did not happen
        assert not hook.timed_out, f"the others did not take generations {hook.timed_out} within 45 s"
        # each generation's claims are as docs/member.md says — the target's generation-2 one, the
        # others' latest accepted assignment, every subscription at the generation before (a member
        # new to the group: none) — and the
        # assignment is what Kafka's StickyAssignor gives for them
        joins = _leader_joins(consumers)
        ids = {c.rebalances()[0].member_id: c.name for c in consumers}
        partitions = {topic[k]: n for k, n in PARTITIONS.items()}
        prior_max = max(
            (m.claim_generation for g, ms in joins.items() if g < refused[0][0] for m in ms), default=-1
        )
        for generation, parts in refused:
            assert generation in joins, f"no JoinGroup answer of generation {generation} in the leader's log"
            joined = joins[generation]
            for m in joined:
                consumer = next(c for c in consumers if c.name == ids[m.member_id])
                earlier = [
                    r for r in consumer.rebalances() if r.kind == "assigned" and r.generation < generation
                ]
                last = (earlier[-1].assignment, earlier[-1].generation) if earlier else (frozenset(), -1)
                assert (m.claim, m.claim_generation) == last, (generation, consumer.name, m)
                # the generation it joined last (the one before; a member new to the group: none)
                assert m.generation_id == (generation - 1 if earlier else -1), (generation, consumer.name, m)
                wanted = [topic["a"]] if consumer is member and generation > 3 else list(topic.values())
                assert sorted(m.topics) == sorted(wanted), (generation, consumer.name, m)
            data = _leader_input(partitions, joined, prior_max)
            expected = {ids[m]: p for m, p in _kafka_sticky(kafka_oracle, data).items()}
            assert {ids[m]: p for m, p in _kgroup_sticky(data).items()} == expected, generation
            prior_max = max([prior_max, *(m.claim_generation for m in joined)])
            got = {member.name: parts, **table[generation]}
            shown = {ids[m.member_id]: (_short({"": m.claim}, names)[""], m.claim_generation) for m in joined}
            assert got == expected, (generation, _short(got, names), _short(expected, names), shown)
    finally:
        close_all(*consumers)


@pytest.mark.parametrize("who", [0, 1], ids=["leader", "follower"])
def test_cooperative_sticky_refuses_once_then_revokes_the_dropped_topic(
    target: Target, names: str, tmp_path: Path, who: int
) -> None:
    hook, others_hook = _AfterOthers(), _AfterTarget()
    topic, consumers = _members(target, names, tmp_path, "cooperative-sticky", who, hook, others_hook)
    everything = all_partitions({topic[k]: n for k, n in PARTITIONS.items()})
    start_all(*consumers)
    try:
        _change_in_flight(consumers, who, [topic["a"]], hook, others_hook)
        member = consumers[who]
        settled = member.generation
        before = _accepted(member, settled)
        only_a = lambda: {tp.topic for tp in member.assignment} == {topic["a"]}  # noqa: E731
        owners = wait_settled(consumers, everything, settle_s=3.0, also=only_a, timeout_s=60)
        # the one generation assigned from its old subscription (3) is refused, and only that one
        refused = _refusals(member)
        late = others_hook.timed_out
        assert not late, f"{member.name} did not sync generations {late} within 45 s"
        assert [g for g, _ in refused] == [settled + 1], refused
        assert {tp.topic for tp in refused[0][1]} == {topic["a"], topic["b"]}, refused
        # then onJoinPrepare revokes the dropped topic's partitions (cooperative: only those)
        revoked = [r for r in member.rebalances() if r.kind == "revoked" and r.generation > settled]
        assert revoked and revoked[0].partitions == {tp for tp in before if tp.topic == topic["b"]}
        # it never accepted a partition of b after the change; the others own b
        for rebalance in member.rebalances():
            if rebalance.kind == "assigned" and rebalance.generation > settled:
                assert {tp.topic for tp in rebalance.assignment} <= {topic["a"]}, rebalance
        assert {tp.topic for name, parts in owners.items() if name != member.name for tp in parts} >= {
            topic["b"]
        }
        assert len(_refusals(member)) == 1
    finally:
        close_all(*consumers)
