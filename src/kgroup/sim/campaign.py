"""Fault campaigns: many random scenarios, each checked against the invariants, failures shrunk.

``kgroup simulate --campaign N --seed S`` runs the scenarios :func:`random_scenario` draws for seeds
``S .. S+N-1`` (locally or one Spark task each), checks every run (:func:`check_scenario`), and for
every failing seed shrinks the scenario (:func:`shrink`) to a small file that still fails, with the
command that replays it. Everything here is pure and deterministic: a seed always draws the same
scenario, and the simulator is a pure function of its scenario.

The distribution (documented in ``docs/simulator.md``):

* 2–20 consumers (three in four runs 2–8), in one or two groups subscribing to different topic
  lists; 1–4 topics of 1–24 partitions; 2–10 minutes of virtual time;
* the assignor list: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, or an upgrade
  list (``[range, cooperative-sticky]``, ``[cooperative-sticky, range]``); a quarter of the runs are
  an *upgrade*: they start on ``[range]`` or ``[sticky]`` and roll to the two-assignor list and then
  to ``[cooperative-sticky]``;
* static membership in 30 % of runs; session timeout 6–45 s (heartbeat a third of it), poll
  interval 10 s–5 min; auto-commit on in 80 % of runs;
* network: latency 1–50 ms, jitter 0–20 ms; loss (0, or up to 5 %) in half the runs; connection
  resets (up to 30 per connection-hour) in a quarter;
* 0–6 events, each kind as likely: crash, restart (downtime 0–60 s, graceful or not), rolling
  restart, scale out / in, slow poll, network partition (1–40 s), add partitions, subscribe, stop,
  start.

A third of the seeds (:data:`SUBSCRIPTION_SHARE`, decided by a stream of their own) draw instead the
*subscription-change family* (:func:`subscription_change_scenario`, issue 22): static members of
one assignor (``range``, ``roundrobin``, ``sticky`` or ``cooperative-sticky``, as likely each), the
first consumer started first (so the group's leader), and 1–3 rounds of a rebalance held open (a
member stuck in ``poll()`` while a new member joins, partitions are added, or another member's
subscription changes) during which the leader or a follower drops topics from its subscription
or adds them back. The other seeds draw the scenario :func:`base_scenario` always drew for them.

A run *fails* when the simulator raises, or reports an invariant violation (a partition with two
current owners, a Stable assignment that breaks the assignor invariants, a generation going back).
Disturbances that never settle are counted, not failed (a scenario may end mid-rebalance).

A share of the seeds (:data:`CONSUMER_PROTOCOL_SHARE`, drawn by :func:`campaign_scenario`) runs the
same drawn scenario on the consumer protocol (KIP-848, :func:`random_consumer_scenario`): a server
assignor instead of the client's list, the coordinator's session timeout and heartbeat interval,
and a quiet tail after the last fault, at the end of which every running member must have reconciled
to the target assignment (else the run fails: ``unreconciled``). Its invariants besides the classic
ones: member, group and assignment epochs never go back (a member's own epoch only to 0, fenced and
rejoining); at every Stable every subscribed partition is owned exactly once.

A share of the other seeds (:data:`SHARE_GROUP_SHARE` of those not on the consumer protocol, decided
by a stream of its own, so the consumer protocol's seeds are the same and every seed left classic draws
what it drew before) runs the base draw as a *share group* (KIP-932,
:func:`random_share_scenario`): the same topics, consumers (dynamic: a share consumer has no
``group.instance.id``), network and events, the share coordinator's session and heartbeat, a lock
duration, a delivery-count limit, and records that fail once or always (poison), released or
rejected. Its invariants, checked by the simulator on every operation: no record accepted twice, a
delivery count never above the limit, one holder at a time for an acquired record, and no record
lost (every record below a partition's start offset accepted or archived).

A share of the consumer-group seeds (:data:`EXACTLY_ONCE_SHARE`, classic or consumer protocol, decided
by a stream of its own) runs its scenario with *exactly-once processing*
(:func:`with_exactly_once`: ``workload.processing: exactly_once``, a commit interval of 100 ms,
500 ms or 2 s and a transaction timeout of 10 or 60 s). Its invariants: no output record committed
twice, none skipped, and at the end every partition's committed offset where its committed output
ends (:mod:`kgroup.sim.exactly_once`). The other seeds draw what they drew before.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

from kgroup.model import KgroupError
from kgroup.sim.runner import simulate
from kgroup.sim.scenario import parse_scenario

__all__ = [
    "ASSIGNOR_LISTS",
    "CONSUMER_PROTOCOL_SHARE",
    "EXACTLY_ONCE_SHARE",
    "FAMILY_ASSIGNORS",
    "SHARE_GROUP_SHARE",
    "SUBSCRIPTION_SHARE",
    "CampaignRun",
    "base_scenario",
    "campaign_scenario",
    "check_scenario",
    "check_seed",
    "random_consumer_scenario",
    "random_scenario",
    "random_share_scenario",
    "run_on_spark",
    "shrink",
    "subscription_change_scenario",
    "with_exactly_once",
    "without_pointless_events",
]

#: the assignor lists a campaign draws from (the last two are the upgrade lists)
ASSIGNOR_LISTS: tuple[tuple[str, ...], ...] = (
    ("range",),
    ("roundrobin",),
    ("sticky",),
    ("cooperative-sticky",),
    ("range", "cooperative-sticky"),
    ("cooperative-sticky", "range"),
)
_EVENT_FIELD = re.compile(r"events\[(\d+)\]")
_EVENT_KINDS = (
    "crash",
    "restart",
    "rolling_restart",
    "scale",
    "slow_poll",
    "network_partition",
    "add_partitions",
    "subscribe",
    "stop",
    "start",
)


@dataclass(frozen=True, slots=True)
class CampaignRun:
    """One checked run: its seed, whether it failed and why, and a few metrics."""

    seed: int
    violation_count: int
    violations: tuple[str, ...]
    crashed: str | None  # the exception, if the simulator raised
    unsettled: int  # disturbances that never settled
    double_owned_ms: int
    zombie_owned_ms: int
    #: eager sticky's stale claims handed back outside a subscription (partition-ms; not a failure)
    outside_subscription_ms: int = 0
    #: consumer protocol: some running member had not reconciled to the target when the run ended
    #: (after the quiet tail :func:`random_consumer_scenario` leaves after the last fault)
    unreconciled: bool = False
    protocol: str = "classic"
    #: the run used exactly-once processing; its output records committed twice (always a violation too)
    exactly_once: bool = False
    output_duplicates: int = 0

    @property
    def failed(self) -> bool:
        return (
            self.crashed is not None
            or self.violation_count > 0
            or self.output_duplicates > 0
            or self.double_owned_ms > 0
            or self.unreconciled
        )


# --- the distribution ----------------------------------------------------------------------------------


#: the share of seeds that draw the subscription-change family instead of the base distribution
SUBSCRIPTION_SHARE = 1 / 3
#: the family's assignors: every client-side assignor, each alone
FAMILY_ASSIGNORS: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")


def random_scenario(seed: int) -> dict[str, Any]:
    """The scenario (plain data, as a YAML file holds it) that ``seed`` draws: the subscription-change
    family for a third of the seeds, the base distribution for the rest."""
    family = Random(f"kgroup-campaign-subscription:{seed}")
    if family.random() < SUBSCRIPTION_SHARE:
        return subscription_change_scenario(seed, family)
    return base_scenario(seed)


def base_scenario(seed: int) -> dict[str, Any]:
    """The base distribution's scenario for ``seed`` (every seed drew it before the family existed)."""
    rng = Random(f"kgroup-campaign:{seed}")
    duration = rng.randint(120, 600) * 1000
    n_topics = rng.randint(1, 4)
    topics = {f"t{k}": rng.randint(1, 24) for k in range(n_topics)}
    names = list(topics)
    n_consumers = rng.randint(2, 8) if rng.random() < 0.75 else rng.randint(9, 20)
    static = rng.random() < 0.3
    upgrade = rng.random() < 0.25
    assignors = list(rng.choice((("range",), ("sticky",)))) if upgrade else list(rng.choice(ASSIGNOR_LISTS))
    session = rng.randint(6, 45) * 1000
    group: dict[str, Any] = {
        "assignors": assignors,
        "session_timeout_ms": session,
        "heartbeat_interval_ms": session // 3,
        "max_poll_interval_ms": rng.choice((10_000, 30_000, 60_000, 300_000)),
        "enable_auto_commit": rng.random() < 0.8,
    }
    first_topics = sorted(rng.sample(names, rng.randint(1, n_topics)))
    consumers: list[dict[str, Any]] = []
    split = rng.randint(1, n_consumers - 1) if n_consumers > 2 and rng.random() < 0.3 else n_consumers
    consumers.append({"count": split, "prefix": "c", "topics": first_topics, "static": static})
    if split < n_consumers:
        other = sorted(rng.sample(names, rng.randint(1, n_topics)))
        consumers.append({"count": n_consumers - split, "prefix": "d", "topics": other, "static": static})
    ids = [f"c{k}" for k in range(split)] + [f"d{k}" for k in range(n_consumers - split)]
    network: dict[str, Any] = {"latency_ms": rng.randint(1, 50), "jitter_ms": rng.randint(0, 20)}
    if rng.random() < 0.5:
        network["loss"] = round(rng.uniform(0.0, 0.05), 4)
    if rng.random() < 0.25:
        network["resets_per_hour"] = rng.randint(1, 30)
    events: list[dict[str, Any]] = []
    if upgrade:
        # roll to the two-assignor list, then to cooperative-sticky alone (KIP-429's upgrade path)
        gap = rng.randint(5, 40) * 1000
        first = rng.randint(10, 60) * 1000
        for k, step in enumerate(([assignors[0], "cooperative-sticky"], ["cooperative-sticky"])):
            events.append(
                {
                    "at_ms": min(first + k * (gap * len(ids) + 30_000), duration - 1),
                    "kind": "rolling_restart",
                    "gap_ms": gap,
                    "assignors": step,
                }
            )
    scaled = 0
    for _ in range(rng.randint(0, 6)):
        events.append(_random_event(rng, duration, ids, topics, scaled))
        if events[-1]["kind"] == "scale" and events[-1]["count"] > 0:
            scaled += 1
    return _scenario(seed, duration, topics, group, consumers, network, events)


def _scenario(
    seed: int,
    duration: int,
    topics: Any,
    group: Any,
    consumers: Any,
    network: Any,
    events: list[dict[str, Any]],
) -> dict[str, Any]:
    """A campaign's scenario: its events in time order, those that change nothing left out."""
    events.sort(key=lambda e: e["at_ms"])
    data = {
        "name": f"campaign-{seed}",
        "seed": seed,
        "duration_ms": duration,
        "topics": topics,
        "group": group,
        "consumers": consumers,
        "network": network,
        "events": events,
    }
    return without_pointless_events(data)


def subscription_change_scenario(seed: int, rng: Random | None = None) -> dict[str, Any]:
    """Issue 22's family: static members, one client-side assignor, and subscription changes on the
    leader (``c0``, started first) or a follower (``f0``, ``f1`` …, started a second later) that land
    while a rebalance is in flight.

    Each round holds a rebalance open: a follower other than the target is stuck in ``poll()`` (its
    JoinGroup waits), a rebalance is triggered (a static member joins, partitions are added, or
    another member's subscription changes), and the target drops topics (or adds them back) after
    the others have most likely rejoined and before the stuck member has. ``rng`` defaults to the
    seed's family stream (after the draw that chose the family)."""
    if rng is None:
        rng = Random(f"kgroup-campaign-subscription:{seed}")
        rng.random()
    duration = rng.randint(120, 300) * 1000
    n_topics = rng.randint(2, 3)
    topics = {f"t{k}": rng.randint(1, 24) for k in range(n_topics)}
    names = list(topics)
    n_followers = rng.randint(1, 7)
    assignor = rng.choice(FAMILY_ASSIGNORS)
    session = rng.randint(6, 45) * 1000
    heartbeat = session // 3
    group: dict[str, Any] = {
        "assignors": [assignor],
        "session_timeout_ms": session,
        "heartbeat_interval_ms": heartbeat,
        "max_poll_interval_ms": rng.choice((30_000, 60_000, 300_000)),
        "enable_auto_commit": rng.random() < 0.8,
    }
    consumers: list[dict[str, Any]] = [
        {"id": "c0", "topics": list(names), "static": True},
        {"count": n_followers, "prefix": "f", "topics": list(names), "static": True, "autostart": False},
    ]
    followers = [f"f{k}" for k in range(n_followers)]
    events: list[dict[str, Any]] = [{"at_ms": 1000, "kind": "start", "consumer": f} for f in followers]
    network: dict[str, Any] = {"latency_ms": rng.randint(1, 50), "jitter_ms": rng.randint(0, 20)}
    if rng.random() < 0.5:
        network["loss"] = round(rng.uniform(0.0, 0.05), 4)
    if rng.random() < 0.25:
        network["resets_per_hour"] = rng.randint(1, 30)
    subscribed = {c: list(names) for c in ["c0", *followers]}
    at = rng.randint(20, 40) * 1000
    for round_ in range(rng.randint(1, 3)):
        if at > duration - 30_000:
            break
        target = "c0" if rng.random() < 0.5 else rng.choice(followers)
        held = [f for f in followers if f != target]
        hold_ms = rng.randint(3, 30) * 1000
        if held:
            stuck = rng.choice(held)
            events.append({"at_ms": at, "kind": "slow_poll", "consumer": stuck, "duration_ms": hold_ms})
        trigger = at + rng.randint(0, 2000)
        how = rng.choice(("scale", "add_partitions", "subscribe"))
        others = [c for c in subscribed if c != target]
        if how == "subscribe" and others:
            who = rng.choice(others)
            subscribed[who] = _changed_subscription(rng, names, subscribed[who])
            events.append({"at_ms": trigger, "kind": "subscribe", "consumer": who,
                           "topics": list(subscribed[who])})  # fmt: skip
        elif how == "add_partitions":
            events.append({"at_ms": trigger, "kind": "add_partitions", "topic": rng.choice(names),
                           "count": rng.randint(1, 4)})  # fmt: skip
        else:
            events.append({"at_ms": trigger, "kind": "scale", "count": 1, "topics": list(names),
                           "static": True, "prefix": f"s{round_}-"})  # fmt: skip
        # after the others' next heartbeat (they rejoin then), before the stuck member's poll()
        early, late = min(heartbeat + 500, hold_ms - 500), hold_ms - 200
        change = trigger + rng.randint(max(0, early), max(early, late))
        subscribed[target] = _changed_subscription(rng, names, subscribed[target])
        events.append({"at_ms": change, "kind": "subscribe", "consumer": target,
                       "topics": list(subscribed[target])})  # fmt: skip
        at = change + rng.randint(15, 60) * 1000
    ids = list(subscribed)
    for _ in range(rng.randint(0, 2)):  # a background fault or two
        events.append(_random_event(rng, duration, ids, topics, 9))
    return _scenario(seed, duration, topics, group, consumers, network, events)


def _changed_subscription(rng: Random, names: list[str], current: list[str]) -> list[str]:
    """Drop topics (to a non-empty part of ``current``) or, when nothing can be dropped or one time in
    three, subscribe to every topic again."""
    if len(current) > 1 and (len(current) == len(names) or rng.random() < 2 / 3):
        return sorted(rng.sample(current, rng.randint(1, len(current) - 1)))
    return list(names)


def without_pointless_events(data: dict[str, Any]) -> dict[str, Any]:
    """Drop the events the scenario parser refuses as doing nothing (crashing a consumer that is
    already down, scaling in more consumers than are deployed …), one at a time, deterministically."""
    for _ in range(len(data["events"]) + 1):
        try:
            parse_scenario(copy.deepcopy(data))
            return data
        except KgroupError as exc:
            found = _EVENT_FIELD.match(str(exc))
            if found is None:
                raise
            del data["events"][int(found.group(1))]
    raise AssertionError("unreachable: every event was dropped and the scenario still fails")


def _random_event(
    rng: Random, duration: int, ids: list[str], topics: dict[str, int], scaled: int
) -> dict[str, Any]:
    kind = rng.choice(_EVENT_KINDS)
    at = rng.randint(5, max(6, duration // 1000 - 30)) * 1000
    who = rng.choice(ids)
    names = list(topics)
    if kind in ("crash", "stop", "start"):
        return {"at_ms": at, "kind": kind, "consumer": who}
    if kind == "restart":
        return {
            "at_ms": at,
            "kind": kind,
            "consumer": who,
            "downtime_ms": rng.choice((0, rng.randint(1, 60) * 1000)),
            "graceful": rng.random() < 0.5,
        }
    if kind == "rolling_restart":
        return {
            "at_ms": at,
            "kind": kind,
            "gap_ms": rng.randint(2, 30) * 1000,
            "downtime_ms": rng.randint(0, 10) * 1000,
        }
    if kind == "scale":
        if rng.random() < 0.5:
            topics_for = sorted(rng.sample(names, rng.randint(1, len(names))))
            # a distinct prefix per scale-out keeps the new ids apart from every other id
            return {"at_ms": at, "kind": kind, "count": rng.randint(1, 3), "topics": topics_for,
                    "prefix": f"s{scaled}-"}  # fmt: skip
        return {"at_ms": at, "kind": kind, "count": -rng.randint(1, 2)}
    if kind == "slow_poll":
        return {"at_ms": at, "kind": kind, "consumer": who, "duration_ms": rng.randint(1, 90) * 1000}
    if kind == "network_partition":
        return {"at_ms": at, "kind": kind, "consumer": who, "duration_ms": rng.randint(1, 40) * 1000}
    if kind == "add_partitions":
        return {"at_ms": at, "kind": kind, "topic": rng.choice(names), "count": rng.randint(1, 6)}
    # subscribe
    return {
        "at_ms": at,
        "kind": kind,
        "consumer": who,
        "topics": sorted(rng.sample(names, rng.randint(1, len(names)))),
    }


# --- the consumer protocol's share ------------------------------------------------------------------------

#: the share of the campaign seeds not on the consumer protocol that run as a share group (KIP-932)
SHARE_GROUP_SHARE = 0.2
#: the share of campaign seeds that run on the consumer protocol (KIP-848)
CONSUMER_PROTOCOL_SHARE = 0.25
#: the share of the consumer-group seeds (classic or consumer protocol) run with exactly-once processing
EXACTLY_ONCE_SHARE = 0.2
_SERVER_ASSIGNOR_CHOICES = (None, "uniform", "range")


def campaign_scenario(seed: int) -> dict[str, Any]:
    """The scenario a campaign runs for ``seed``: :func:`random_scenario`'s, on the consumer protocol
    for a share of the seeds (drawn from a stream of its own, so the classic draw is unchanged)."""
    if Random(f"kgroup-campaign-protocol:{seed}").random() < CONSUMER_PROTOCOL_SHARE:
        data = random_consumer_scenario(seed)
    elif Random(f"kgroup-campaign-share:{seed}").random() < SHARE_GROUP_SHARE:
        return random_share_scenario(seed)  # (of the other seeds: the consumer protocol's are unchanged)
    else:
        data = random_scenario(seed)
    if Random(f"kgroup-campaign-eos:{seed}").random() < EXACTLY_ONCE_SHARE:
        return with_exactly_once(data, seed)
    return data


def with_exactly_once(data: dict[str, Any], seed: int) -> dict[str, Any]:
    """A consumer-group scenario's data with exactly-once processing (the commit interval and the
    transaction timeout drawn from the seed's own stream)."""
    out = copy.deepcopy(data)
    rng = Random(f"kgroup-campaign-eos-settings:{seed}")
    workload = out.setdefault("workload", {})
    workload["processing"] = "exactly_once"
    workload["commit_interval_ms"] = rng.choice((100, 500, 2000))
    workload["transaction_timeout_ms"] = rng.choice((10_000, 60_000))
    out["name"] = f"{out.get('name', f'campaign-{seed}')}-eos"
    return out


def _base_for(seed: int, protocol: str) -> dict[str, Any]:
    """:func:`base_scenario`'s draw for ``seed`` (a copy) on ``protocol``: the classic protocol's
    client-side assignors, session timeout and heartbeat interval left out."""
    data = copy.deepcopy(base_scenario(seed))
    group = data["group"]
    for key in ("assignors", "session_timeout_ms", "heartbeat_interval_ms"):
        group.pop(key, None)
    group["protocol"] = protocol
    return data


def _draw_session(rng: Random, group: dict[str, Any], protocol: str) -> int:
    """The coordinator's session timeout (10–60 s) and heartbeat interval (1, 2 or 5 s, at most a third
    of it) for ``protocol`` (``consumer`` or ``share``); returns the session timeout."""
    session = rng.randint(10, 60) * 1000
    group[f"{protocol}_session_timeout_ms"] = session
    group[f"{protocol}_heartbeat_interval_ms"] = min(rng.choice((1000, 2000, 5000)), session // 3)
    return session


def random_consumer_scenario(seed: int) -> dict[str, Any]:
    """:func:`base_scenario`'s draw for ``seed`` on the consumer protocol: the same topics,
    consumers, network and events; a server assignor (the coordinator's default, ``uniform`` or
    ``range``) instead of client-side lists (an upgrade's rolling restarts stay, as plain restarts);
    the coordinator's session timeout (10–60 s) and heartbeat interval (1, 2 or 5 s, below a third of
    it); and a quiet tail after the last fault (session timeout + ``max.poll.interval.ms`` + 60 s),
    so that every member must have reconciled by the end."""
    data = _base_for(seed, "consumer")
    rng = Random(f"kgroup-campaign-consumer:{seed}")
    group = data["group"]
    assignor = rng.choice(_SERVER_ASSIGNOR_CHOICES)
    if assignor is not None:
        group["server_assignor"] = assignor
    session = _draw_session(rng, group, "consumer")
    for event in data["events"]:
        event.pop("assignors", None)
    consumers = sum(c["count"] for c in data["consumers"])
    consumers += sum(e["count"] for e in data["events"] if e["kind"] == "scale" and e["count"] > 0)
    last = 0
    for event in data["events"]:
        end = event["at_ms"] + event.get("downtime_ms", 0) + event.get("duration_ms", 0)
        if event["kind"] == "rolling_restart":
            end += event.get("gap_ms", 30_000) * consumers
        last = max(last, end)
    tail = session + group["max_poll_interval_ms"] + 60_000
    data["duration_ms"] = max(data["duration_ms"], last + tail)
    data["name"] = f"campaign-{seed}-consumer"
    return data


def random_share_scenario(seed: int) -> dict[str, Any]:
    """:func:`base_scenario`'s draw for ``seed`` as a share group: the same topics, consumers (all
    dynamic), network and events (an upgrade's rolling restarts stay, as plain restarts), a lighter
    load (10 records/s per partition, 300/s per consumer: a share group's records are each booked),
    and the share settings: session 10–60 s (heartbeat 1, 2 or 5 s, below a third of it), lock
    duration 2–60 s, delivery-count limit 2–10, and in half the runs records that fail once (up to
    5 %) or always (poison, up to 0.5 %), released or rejected."""
    data = _base_for(seed, "share")
    rng = Random(f"kgroup-campaign-share-group:{seed}")
    group = data["group"]
    _draw_session(rng, group, "share")
    group["share_record_lock_duration_ms"] = rng.randint(2, 60) * 1000
    group["share_delivery_count_limit"] = rng.randint(2, 10)
    for consumer in data["consumers"]:
        consumer.pop("static", None)
    for event in data["events"]:
        event.pop("assignors", None)
        event.pop("static", None)
    workload: dict[str, Any] = {"produce_per_partition_per_s": 10, "consume_per_consumer_per_s": 300}
    if rng.random() < 0.5:
        workload["failure_share"] = round(rng.uniform(0.0, 0.05), 4)
        workload["poison_share"] = round(rng.uniform(0.0, 0.005), 4)
        workload["failure_action"] = rng.choice(("release", "reject"))
    data["workload"] = workload
    data["name"] = f"campaign-{seed}-share"
    return data


# --- checking --------------------------------------------------------------------------------------------


def check_scenario(data: dict[str, Any], seed: int = 0) -> CampaignRun:
    """Run one scenario and check it. A scenario the parser refuses is a bug in the generator."""
    scenario = parse_scenario(copy.deepcopy(data), name=str(data.get("name", "campaign")))
    try:
        result = simulate(scenario)
    except Exception as exc:  # any exception out of the simulator is the finding
        return CampaignRun(seed, 0, (), f"{type(exc).__name__}: {exc}", 0, 0, 0)
    m = result.metrics
    consumer = scenario.group.consumer_protocol
    protocol = "consumer" if consumer else "share" if scenario.group.share_protocol else "classic"
    eos = scenario.workload.exactly_once
    return CampaignRun(
        seed=seed,
        violation_count=int(m["invariant_violation_count"]),
        violations=tuple(m["invariant_violations"][:5]),
        crashed=None,
        unsettled=sum(1 for t in m["time_to_stable_ms"] if t is None),
        double_owned_ms=int(m["double_owned_ms"]),
        zombie_owned_ms=int(m["zombie_owned_ms"]),
        outside_subscription_ms=int(m["outside_subscription_ms"]),
        unreconciled=consumer and not m["reconciled_at_end"],
        protocol=protocol,
        exactly_once=eos,
        output_duplicates=int(m.get("output_duplicates", 0)),
    )


def check_seed(seed: int) -> CampaignRun:
    """Draw the seed's scenario and check it (the unit of work of a campaign: one Spark task)."""
    return check_scenario(campaign_scenario(seed), seed)


def run_on_spark(spark: Any, seeds: list[int]) -> list[CampaignRun]:
    """Check ``seeds`` as Spark tasks on the given session (its ``sparkContext``; nothing here imports
    pyspark). Up to four slices per core, so uneven runs balance; results in seed order."""
    context = spark.sparkContext
    slices = max(1, min(len(seeds), 4 * int(context.defaultParallelism)))
    runs: list[CampaignRun] = context.parallelize(seeds, numSlices=slices).map(check_seed).collect()
    return sorted(runs, key=lambda r: r.seed)


# --- shrinking -------------------------------------------------------------------------------------------


def _candidates(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Smaller versions of ``data``, most promising first (each may fail to parse: then it is skipped)."""
    out: list[dict[str, Any]] = []

    def copied() -> dict[str, Any]:
        new = copy.deepcopy(data)
        out.append(new)
        return new

    events = data.get("events", [])
    for k in range(len(events) - 1, -1, -1):
        copied()["events"].pop(k)
    last = max((e["at_ms"] for e in events), default=0)
    if data["duration_ms"] > last + 60_000:
        copied()["duration_ms"] = max(last + 60_000, 60_000)
    for k, group in enumerate(data["consumers"]):
        count = group.get("count", 1)
        if count > 1:
            copied()["consumers"][k]["count"] = count - 1
            if count > 3:
                copied()["consumers"][k]["count"] = count // 2
    if len(data["consumers"]) > 1:
        copied()["consumers"].pop()
    for name, n in data["topics"].items():
        if n > 1:
            copied()["topics"][name] = max(1, n // 2)
    network = data.get("network", {})
    for key in ("resets_per_hour", "loss", "jitter_ms"):
        if network.get(key):
            copied()["network"].pop(key)
    if network.get("latency_ms", 1) > 1:
        copied()["network"]["latency_ms"] = 1
    assignors = data["group"].get("assignors", ())
    if len(assignors) > 1:
        for name in assignors:
            copied()["group"]["assignors"] = [name]
    for k, group in enumerate(data["consumers"]):
        if group.get("static"):
            copied()["consumers"][k]["static"] = False
    return out


def shrink(
    data: dict[str, Any], still_fails: Callable[[dict[str, Any]], bool], *, budget: int = 150
) -> dict[str, Any]:
    """Greedily make ``data`` smaller while ``still_fails`` holds (at most ``budget`` checks)."""
    current = copy.deepcopy(data)
    checks = 0
    improved = True
    while improved and checks < budget:
        improved = False
        for candidate in _candidates(current):
            if checks >= budget:
                break
            try:
                parse_scenario(copy.deepcopy(candidate))
            except KgroupError:
                continue  # e.g. an event names a consumer that no longer exists
            checks += 1
            if still_fails(candidate):
                current = candidate
                improved = True
                break
    return current
