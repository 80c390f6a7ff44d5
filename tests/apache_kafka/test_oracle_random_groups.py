"""Thousands of random groups per run, each answered by Apache Kafka 4.4.0's own assignor (through
the oracle) and by kgroup's: the assignments must be identical.

Each Hypothesis example is a *batch* of groups sent to the JVM in one round trip. On a difference the
test shrinks the differing group itself (:func:`_minimize`: drop members, topics, subscriptions,
owned partitions, racks, partitions, one at a time, while Kafka and kgroup still disagree; every
candidate of a pass in one round trip) and fails with that minimal group, the original one, and
the seed that reproduces the run (``KGROUP_ORACLE_SEED=<seed>``; a fresh one each run otherwise).
Hypothesis' own shrinker is off:
shrinking a batch of 25 groups one JVM round trip at a time takes minutes.

Covered: Range, RoundRobin, Sticky and CooperativeSticky on random groups (racks, static members,
owned partitions and generations, topics with 0 partitions, subscriptions to missing topics, Kafka's
test-only rack switch); sticky chains (each round's answer becomes the next round's owned
partitions, with joins, leaves, subscription changes, partition growth, a member reporting an older
generation, two members claiming the same partition); issue 22's family (sticky user data claiming
partitions of topics a member no longer subscribes to, at mixed generations, and the rounds in which
such a member keeps refusing); murmur2 and ``partitionForKey`` on random
keys; ``RoundRobinPartitioner`` on random leader sets. The per-run counts are in
``docs/apache-kafka.md``.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from assignors.strategies import TOPIC_NAMES, groups
from kgroup.assignors import AssignmentRequest
from kgroup.assignors.fileformat import (
    compare_assignments,
    java_exception_of,
    parse_assignment_file,
    run_assignment_file,
)
from kgroup.assignors.sticky.errors import StickyReassignmentLoops
from kgroup.model import Assignment, Member, TopicMetadata, TopicPartition
from kgroup.partitioning import ClusterView, create_partitioner, murmur2, partition_for_key
from kgroup.testing.apache_kafka import KafkaOracle, OracleAnswer, OracleError, vector_input

#: groups per Hypothesis example (one JVM round trip)
BATCH = 25
#: examples per test; with BATCH, the groups per assignor per run
EXAMPLES = 30
#: every run explores new groups; a failure names the seed that replays it
SEED = int(os.environ.get("KGROUP_ORACLE_SEED") or random.SystemRandom().randrange(2**32))
_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

#: small groups mostly (the answers are compared, not timed), a few larger ones
small_groups = groups(max_topics=4, max_partitions=8, max_members=6)
larger_groups = groups(max_topics=5, max_partitions=24, max_members=10)
any_group = st.one_of(small_groups, small_groups, small_groups, larger_groups)


def _kgroup(assignor: str, data: dict[str, Any]) -> tuple[Assignment | None, str | None]:
    """kgroup's answer for one vector input, through the same path the vectors take."""
    af = parse_assignment_file({"assignor": assignor, "input": data}, source="random group")
    try:
        return run_assignment_file(af), None
    except Exception as exc:
        return None, java_exception_of(exc) or f"not Kafka's: {type(exc).__name__}: {exc}"


def _difference(assignor: str, data: dict[str, Any], kafka: OracleAnswer) -> str | None:
    got, error = _kgroup(assignor, data)
    if kafka.error is not None:
        wanted = kafka.error.split(":")[0]
        return None if error == wanted else f"Kafka threw {kafka.error}; kgroup gave {error or got}"
    if error is not None:
        return f"kgroup failed ({error}); Kafka assigned {kafka.assignment}"
    assert got is not None and kafka.assignment is not None
    mismatches = compare_assignments(kafka.assignment, got)
    if not mismatches:
        return None
    lines = [
        f"{m.member}: Kafka {[str(tp) for tp in m.expected or ()]}, kgroup {[str(tp) for tp in m.got or ()]}"
        for m in mismatches[:4]
    ]
    return "; ".join(lines)


class _Differs(Exception):
    """kgroup differs from Kafka; the message has the minimal input and the seed.

    Raised inside a Hypothesis example and caught there (see :func:`_run_until_different`): Hypothesis
    would otherwise print the whole batch (tens of kB) as the falsifying example."""


def _never_ends(assignor: str, data: dict[str, Any]) -> bool:
    """Kafka's sticky assignor never finishes on ``data``: kgroup found its reassignment passes
    repeating (:class:`StickyReassignmentLoops`). Asked, Kafka's JVM would spin past the oracle's bound
    and be stopped, so such a group is not sent; ``test_sticky_endless_loop.py`` shows Kafka spinning
    on one."""
    if "sticky" not in assignor:
        return False
    try:
        run_assignment_file(
            parse_assignment_file({"assignor": assignor, "input": data}, source="random group")
        )
    except StickyReassignmentLoops:
        return True
    except Exception:
        return False
    return False


def _check_batch(
    oracle: KafkaOracle, assignor: str, inputs: Sequence[dict[str, Any]]
) -> list[Assignment | None]:
    """Ask Kafka and kgroup about every input; raise :class:`_Differs` on the first difference,
    shrunk to a minimal group. An input Kafka never finishes (:func:`_never_ends`) is not asked: its
    answer is ``None``."""
    asked = [data for data in inputs if not _never_ends(assignor, data)]
    answers = iter(oracle.assign_many([(assignor, data) for data in asked]))
    results: list[Assignment | None] = []
    for data in inputs:
        if asked and data is asked[0]:
            asked.pop(0)
        else:
            results.append(None)
            continue
        answer = next(answers)
        if _difference(assignor, data, answer) is not None:
            small = _minimize(oracle, assignor, data)
            difference = _difference(assignor, small, oracle.assign(assignor, small))
            raise _Differs(
                f"{assignor} differs from Kafka {oracle.version}: {difference}\n"
                f"minimal input: {json.dumps(small)}\noriginal input: {json.dumps(data)}\n"
                f"replay: KGROUP_ORACLE_SEED={SEED} pytest {__file__}"
            )
        results.append(answer.assignment or {})
    return results


def _run_until_different(
    check: Callable[[Any], object],
) -> tuple[Callable[[Any], None], Callable[[], None]]:
    """Wrap a Hypothesis example body: after the first difference (or the oracle stopped under a batch)
    the remaining examples do nothing, and the test fails with it once Hypothesis is done — raised
    inside the example, it would reach pytest only as Hypothesis' warning about the batch's size."""
    found: list[str] = []

    def example(drawn: Any) -> None:
        if found:
            return
        try:
            check(drawn)
        except _Differs as exc:
            found.append(str(exc))
        except OracleError as exc:  # the JVM died or spun past its bound: name the run's seed
            found.append(f"{exc}\nreplay: KGROUP_ORACLE_SEED={SEED} pytest {__file__}")

    def verdict() -> None:
        if found:
            pytest.fail(found[0], pytrace=False)

    return example, verdict


#: at most this many shrinking passes (each one round trip with every candidate)
_SHRINK_PASSES = 200


def _drop_owned(data: dict[str, Any], keep: Callable[[TopicPartition], bool]) -> None:
    for m in data["members"]:
        if "owned" in m:
            m["owned"] = [p for p in m["owned"] if keep(TopicPartition.parse(p))]


def _simplified(data: dict[str, Any], step: tuple[str, int, Any]) -> dict[str, Any]:
    """``data`` with one simplification applied (a copy)."""
    out: dict[str, Any] = json.loads(json.dumps(data))
    kind, index, arg = step
    members, topics = out["members"], out["topics"]
    if kind == "member":
        members.pop(index)
    elif kind == "member-field":
        members[index].pop(arg)
    elif kind == "subscription":
        members[index]["topics"].pop(arg)
    elif kind == "owned":
        members[index]["owned"].pop(arg)
    elif kind == "topic":
        name = topics.pop(index)["name"]
        _drop_owned(out, lambda tp: tp.topic != name)
    elif kind == "racks":
        topics[index].pop("racks")
    elif kind == "partition":
        entry = topics[index]
        entry["partitions"] -= 1
        if "racks" in entry:
            entry["racks"].pop()
        _drop_owned(out, lambda tp: tp.topic != entry["name"] or tp.partition < entry["partitions"])
    elif kind == "prefer":
        out.pop("preferRackAwareLogic")
    return out


def _simpler(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every input one step simpler than ``data``: one member, topic, subscription, owned partition,
    rack list, partition or optional field fewer."""
    steps: list[tuple[str, int, Any]] = []
    members = data["members"]
    for i, member in enumerate(members):
        if len(members) > 1:
            steps.append(("member", i, None))
        steps += [
            ("member-field", i, f)
            for f in ("rackId", "groupInstanceId", "generation", "owned")
            if f in member
        ]
        steps += [("subscription", i, j) for j in range(len(member["topics"]))]
        steps += [("owned", i, j) for j in range(len(member.get("owned", ())))]
    for t, topic in enumerate(data["topics"]):
        steps.append(("topic", t, None))
        if "racks" in topic:
            steps.append(("racks", t, None))
        if topic["partitions"] > 0:
            steps.append(("partition", t, None))
    if data.get("preferRackAwareLogic"):
        steps.append(("prefer", 0, None))
    return [_simplified(data, step) for step in steps]


def _minimize(oracle: KafkaOracle, assignor: str, data: dict[str, Any]) -> dict[str, Any]:
    """The smallest input reachable by :func:`_simpler` steps on which kgroup still differs from Kafka."""
    for _ in range(_SHRINK_PASSES):
        candidates = [c for c in _simpler(data) if not _never_ends(assignor, c)]
        if not candidates:
            break
        answers = oracle.assign_many([(assignor, c) for c in candidates])
        found = next(
            (c for c, a in zip(candidates, answers, strict=True) if _difference(assignor, c, a) is not None),
            None,
        )
        if found is None:
            break
        data = found
    return data


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_random_groups_match_kafka(kafka_oracle: KafkaOracle, assignor: str) -> None:
    def check(batch: list[AssignmentRequest]) -> None:
        _check_batch(kafka_oracle, assignor, [vector_input(request) for request in batch])

    example, verdict = _run_until_different(check)
    seed(SEED)(_SETTINGS(given(st.lists(any_group, min_size=BATCH, max_size=BATCH))(example)))()
    verdict()


# --- sticky chains --------------------------------------------------------------------------------

PERTURBATIONS = ("join", "leave", "subscribe", "grow", "stale", "double-claim", "nothing")


def _next_round(
    request: AssignmentRequest, result: Assignment, step: tuple[str, int], round_no: int
) -> AssignmentRequest:
    """Round r+1: every member owns what round r gave it, one generation later; then one change.
    Member order is rotated (the JoinGroup order changes from round to round)."""
    kind, pick = step
    generation = max((m.generation for m in request.members), default=0) + 1
    members = [
        replace(m, owned=tuple(result.get(m.member_id, ())), generation=generation) for m in request.members
    ]
    topics = dict(request.topics)
    if kind == "join":
        subscribed = members[pick % len(members)].topics
        members.append(Member(f"joined-{round_no}", subscribed, rack_id=("a", "b", None)[pick % 3]))
    elif kind == "leave" and len(members) > 1:
        del members[pick % len(members)]
    elif kind == "subscribe":
        i = pick % len(members)
        members[i] = replace(members[i], topics=(*members[i].topics, TOPIC_NAMES[pick % len(TOPIC_NAMES)]))
    elif kind == "grow" and topics:
        name = sorted(topics)[pick % len(topics)]
        old = topics[name]
        grown = old.partitions + 1 + pick % 3
        racks = None if old.racks is None else (*old.racks, *((frozenset({"a"}),) * (grown - old.partitions)))
        topics[name] = TopicMetadata(name, grown, racks)
    elif kind == "stale":  # a member that missed the last assignment: older owned partitions and generation
        i = pick % len(members)
        previous = next((m for m in request.members if m.member_id == members[i].member_id), None)
        if previous is not None:
            members[i] = replace(members[i], owned=previous.owned, generation=previous.generation)
    elif kind == "double-claim" and len(members) > 1:  # two members claim one partition, same generation
        i, j = pick % len(members), (pick + 1) % len(members)
        if members[i].owned:
            stolen = members[i].owned[pick % len(members[i].owned)]
            if stolen not in members[j].owned:
                members[j] = replace(members[j], owned=(*members[j].owned, stolen))
    shift = pick % len(members)
    members = members[shift:] + members[:shift]
    return AssignmentRequest(members, topics, request.prefer_rack_aware_logic)


chain_steps = st.lists(
    st.tuples(st.sampled_from(PERTURBATIONS), st.integers(min_value=0, max_value=1000)),
    min_size=1,
    max_size=5,
)


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_chains_match_kafka(kafka_oracle: KafkaOracle, assignor: str) -> None:
    """Chains of rebalances, all chains of a batch advanced in lock step (one round trip per round)."""

    def check(chains: list[tuple[AssignmentRequest, list[tuple[str, int]]]]) -> None:
        requests = [start for start, _ in chains]
        for round_no in range(max(len(steps) for _, steps in chains) + 1):
            live = [i for i, (_, steps) in enumerate(chains) if round_no <= len(steps)]
            results = _check_batch(kafka_oracle, assignor, [vector_input(requests[i]) for i in live])
            for i, result in zip(live, results, strict=True):
                steps = chains[i][1]
                if result is None:  # Kafka never answers this round: the chain ends here
                    chains[i] = (chains[i][0], steps[:round_no])
                elif round_no < len(steps):
                    requests[i] = _next_round(requests[i], result, steps[round_no], round_no)

    example, verdict = _run_until_different(check)
    starts = st.tuples(groups(max_members=6, owned=False), chain_steps)
    seed(SEED)(_SETTINGS(given(st.lists(starts, min_size=10, max_size=10))(example)))()
    verdict()


# --- eager sticky's stale claims (issue 22) -------------------------------------------------------

#: stale-claim groups per run, per assignor (batches of STALE_BATCH, one round trip per round)
STALE_GROUPS = 300
STALE_BATCH = 50
#: rounds per group: the first, then the members whose subscription changed refuse and claim again
STALE_ROUNDS = 3


def _stale_member_id(rng: random.Random, index: int) -> str:
    """A short id or a real client's ``<client.id>-<uuid>``: the ids decide Java ``HashMap`` order."""
    if rng.random() < 0.5:
        return f"c{index}"
    return f"c{index}-" + "-".join(
        "".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12)
    )


def _stale_claim_group(rng: random.Random) -> tuple[dict[str, Any], set[str]]:
    """A group like issue 22's: every member's sticky user data claims what it owned at some recent
    generation under its *old* subscription; some members have since dropped (or added) topics, so
    their claims hold partitions of topics they no longer subscribe to. Claims come from up to three
    past generations (two members may claim one partition at different generations, rarely at the
    same one); the subscription's own ``generationId`` is absent (a v0/v1 subscription), the claim's
    generation, or newer (a member that refused its last assignment, as a real client sends it).
    Returns the vector input and the ids of the members whose subscription changed."""
    chosen = rng.sample(("a", "b", "t0", "t1", "t10", "Z"), rng.randint(2, 4))
    topics = {name: rng.randint(1, 10) for name in chosen}
    names = list(topics)
    ids = [_stale_member_id(rng, i) for i in range(rng.randint(2, 7))]
    old = {m: rng.sample(names, rng.randint(1, len(names))) for m in ids}
    current = rng.randint(2, 6)
    # who owned each partition at each of the last three generations (subscribers of the old lists)
    history: dict[int, dict[str, list[str]]] = {}
    for generation in range(current - 2, current + 1):
        owned: dict[str, list[str]] = {m: [] for m in ids}
        for topic, count in topics.items():
            takers = [m for m in ids if topic in old[m]]
            for p in range(count):
                if takers and rng.random() < 0.9:
                    owned[rng.choice(takers)].append(f"{topic}-{p}")
        history[generation] = owned
    members: list[dict[str, Any]] = []
    changed: set[str] = set()
    for m in ids:
        subscription = list(old[m])
        if rng.random() < 0.5:  # drops topics (and sometimes picks up another)
            keep = rng.sample(subscription, rng.randint(0, len(subscription) - 1))
            others = [t for t in names if t not in subscription]
            if others and (not keep or rng.random() < 0.3):
                keep.append(rng.choice(others))
            if keep and keep != subscription:
                subscription = keep
                changed.add(m)
        member: dict[str, Any] = {"memberId": m, "topics": subscription}
        if rng.random() < 0.1:  # a new member: no user data, no generation
            member["userData"] = None
        else:
            claimed_at = rng.randint(current - 2, current)
            claim = list(history[claimed_at][m])
            if rng.random() < 0.1 and len(ids) > 1:  # a double claim in the same generation
                other = history[claimed_at][rng.choice([o for o in ids if o != m])]
                claim += rng.sample(other, min(len(other), 1))
            member["owned"] = claim
            member["userData"] = {"partitions": claim, "generation": claimed_at}
            kind = rng.random()
            if kind < 0.6:
                member["generation"] = claimed_at + (rng.randint(1, 2) if kind < 0.3 else 0)
        members.append(member)
    data: dict[str, Any] = {
        "topics": [{"name": t, "partitions": n} for t, n in topics.items()],
        "members": members,
    }
    if rng.random() < 0.2:  # the leader's assignor remembers a newer generation
        data["priorMaxGeneration"] = current + 1
    return data, changed


def _after_refusals(data: dict[str, Any], result: Assignment, refusing: set[str]) -> dict[str, Any]:
    """The next generation as Kafka's members send it: the refusing members (their subscription changed
    mid-join, ``onJoinComplete`` refused) keep their user data and send the generation they refused;
    the others claim what they got, at that generation."""
    out: dict[str, Any] = json.loads(json.dumps(data))
    refused = max((m.get("generation", -1) for m in out["members"]), default=-1)
    refused = max(refused, data.get("priorMaxGeneration", -1)) + 1
    for m in out["members"]:
        if m["memberId"] in refusing:
            m["generation"] = refused
        else:
            got = [str(tp) for tp in result.get(m["memberId"], ())]
            m["owned"] = got
            m["userData"] = {"partitions": got, "generation": refused}
            m["generation"] = refused
    out.pop("priorMaxGeneration", None)
    return out


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_stale_sticky_claims_match_kafka(kafka_oracle: KafkaOracle, assignor: str) -> None:
    """Issue 22's family against Kafka: members whose sticky user data claims partitions of topics they
    no longer subscribe to, at mixed generations, with and without the subscription's own
    ``generationId``; then rounds in which the members whose subscription changed keep refusing and
    claiming the same (Kafka's loop, docs/member.md). Each round of a batch in one round trip."""
    rng = random.Random(SEED)
    for _ in range(STALE_GROUPS // STALE_BATCH):
        drawn = [_stale_claim_group(rng) for _ in range(STALE_BATCH)]
        inputs = [data for data, _ in drawn]
        for round_no in range(STALE_ROUNDS):
            try:
                results = _check_batch(kafka_oracle, assignor, inputs)
            except _Differs as exc:
                pytest.fail(f"round {round_no}: {exc}", pytrace=False)
            except OracleError as exc:  # the JVM died or hung on this batch: name the batch's seed
                pytest.fail(
                    f"round {round_no}: {exc}\nreplay: KGROUP_ORACLE_SEED={SEED} pytest {__file__}",
                    pytrace=False,
                )
            inputs = [
                data if result is None else _after_refusals(data, result, refusing)
                for data, result, (_, refusing) in zip(inputs, results, drawn, strict=True)
            ]


# --- partitioning ---------------------------------------------------------------------------------

PARTITION_COUNTS = st.lists(st.integers(min_value=1, max_value=2**31 - 1), min_size=1, max_size=4)


@seed(SEED)
@_SETTINGS
@given(
    keys=st.lists(st.binary(max_size=80) | st.text(max_size=20).map(str.encode), min_size=50, max_size=50),
    counts=st.lists(
        st.integers(min_value=1, max_value=1000) | PARTITION_COUNTS.map(max), min_size=1, max_size=6
    ),
)
def test_murmur2_on_random_keys_matches_kafka(
    kafka_oracle: KafkaOracle, keys: list[bytes], counts: list[int]
) -> None:
    answers = kafka_oracle.murmur2(keys, counts)
    for key, answer in zip(keys, answers, strict=True):
        assert murmur2(key) == answer.murmur2, key
        assert answer.to_positive == answer.murmur2 & 0x7FFFFFFF
        assert {n: partition_for_key(key, n) for n in counts} == dict(answer.partitions), key


@seed(SEED)
@_SETTINGS
@given(
    n=st.integers(min_value=1, max_value=40),
    data=st.data(),
)
def test_round_robin_partitioner_on_random_leader_sets_matches_kafka(
    kafka_oracle: KafkaOracle, n: int, data: st.DataObject
) -> None:
    available = sorted(data.draw(st.sets(st.integers(min_value=0, max_value=n - 1))))
    calls = data.draw(st.integers(min_value=1, max_value=3 * n + 5))
    kafka = kafka_oracle.round_robin_partitioner(n, available, calls)
    partitioner = create_partitioner("round-robin")
    cluster = ClusterView.single("t", n, available=available)
    assert [partitioner.partition("t", None, None, cluster) for _ in range(calls)] == kafka


def test_the_oracle_is_the_pinned_release(kafka_oracle: KafkaOracle) -> None:
    from kgroup.testing.apache_kafka import KAFKA_VERSION

    assert kafka_oracle.version == KAFKA_VERSION
    assert kafka_oracle.pid is not None
