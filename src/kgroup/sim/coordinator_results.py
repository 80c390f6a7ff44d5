"""The simulator's coordinator side: applying what :class:`kgroup.group.GroupCoordinator` returns.

Every request the simulator delivers and every coordinator timer it fires yields a
:class:`kgroup.group.CoordinatorResult`; :func:`apply_coordinator_result` carries it out on a
:class:`kgroup.sim.host.CoordinatorHost` (the simulation) — it schedules and cancels the
coordinator's timers, follows the group (state, generation, members) through the coordinator's
records with :class:`kgroup.sim.observer.GroupObserver`, checks the assignment each Stable
generation runs on, and sends the replies back over the network to the processes that asked.
Like :mod:`kgroup.sim.actions`, it holds no state of its own.
"""

from __future__ import annotations

from kgroup.assignors.invariants import (
    check_coverage,
    check_members,
    check_subscriptions,
    stale_sticky_claims,
)
from kgroup.group import ClassicGroups, CoordinatorResult
from kgroup.group.consumer.group import ConsumerGroupState
from kgroup.group.states import GroupState
from kgroup.messages import JoinGroupResponse, SyncGroupResponse
from kgroup.model import Member, TopicId, TopicPartition
from kgroup.sim.consumer_group import (
    CONSUMER_FOLLOWED,
    ConsumerGroupObserver,
    ConsumerObservation,
    topic_id_for,
)
from kgroup.sim.host import CoordinatorHost
from kgroup.sim.observer import FOLLOWED
from kgroup.sim.scheduler import TO_MEMBER
from kgroup.wire.consumer_protocol import decode_assignment, decode_subscription

__all__ = ["apply_coordinator_result"]


def apply_coordinator_result(sim: CoordinatorHost, result: CoordinatorResult) -> None:
    """Carry out one coordinator result: its timers, then its records, then its replies."""
    if result.timers:
        sim.coord_timers.apply(result.timers)
    records = result.records
    # (committed offsets are read from the coordinator when the lag is sampled; only records that
    # change the group's state, generation or members need a look here)
    group = sim.group
    if isinstance(group, ConsumerGroupObserver):
        if records and not CONSUMER_FOLLOWED.isdisjoint(map(type, records)):
            sim.group_records_observed()
            observe_consumer_records(sim, group.observe(records))
    elif records and not FOLLOWED.isdisjoint(map(type, records)):
        sim.group_records_observed()
        seen = group.observe(records)
        for before, after in seen.generation_went_back:
            sim.violation(f"generation went back from {before} to {after}")
        for state, generation in seen.states:
            _state_changed(sim, state, generation)
        if seen.membership_changed:
            sim.group_changed()
    procs, conn_owner, now = sim.procs, sim.conn_owner, sim.now
    for reply in result.replies:
        owner = conn_owner.get(reply.connection)
        if owner is None:
            continue
        proc = procs[owner[0]]
        if proc.incarnation != owner[1] or proc.member is None:
            continue  # the process that asked is gone
        if proc.conn != reply.connection:
            continue  # that connection closed: the answer is lost with it
        body = reply.body
        at = sim.net.transit(proc.id, proc.conn, False, now)
        if at is not None:
            sim.q.push(at, TO_MEMBER, (proc.index, proc.conn, reply.correlation_id, body))
        deadline = proc.inflight.get(reply.correlation_id)
        if (at is None or (deadline is not None and at >= deadline)) and not isinstance(
            body, (JoinGroupResponse, SyncGroupResponse)
        ):
            sim.arm_timeout(proc, owner[1], reply.correlation_id)
    # the coordinator's tasks (regex resolution) take no virtual time: done where they were asked
    for task in result.tasks:
        apply_coordinator_result(sim, sim.coord.complete(now, task, task.run()))


def _state_changed(sim: CoordinatorHost, state: GroupState, generation: int) -> None:
    if state is GroupState.PREPARING_REBALANCE:
        sim.rebalances += 1
        sim.rebalance_starts.append(sim.now)
    sim.log_event("group_state", state=state.kafka_name, generation=generation)
    sim.own.n_outside = 0  # (a new state: the Stable assignment it counted is gone)
    if state is GroupState.STABLE:
        sim.stable_marks.append(sim.now)
        sim.own.counting_unowned = True
        _check_stable_assignment(sim)


def _check_stable_assignment(sim: CoordinatorHost) -> None:
    """The assignment a Stable generation runs on, checked by :mod:`kgroup.assignors.invariants`."""
    protocol = sim.group.protocol
    if protocol is None:
        return
    members = []
    assignment = {}
    # the coordinator keeps metadata and assignments as opaque bytes; the simulator observes them as
    # a consumer would, through the consumer protocol's codec
    for state in sim.coord.kind(ClassicGroups).members(sim.group_id):
        sub = decode_subscription(state.metadata(protocol))
        members.append(
            Member(
                member_id=state.member_id,
                topics=sub.topics,
                owned=sub.owned_partitions,
                generation=sub.generation_id,
                group_instance_id=state.group_instance_id,
                rack_id=sub.rack_id,
                user_data=sub.user_data,
            )
        )
        assignment[state.member_id] = decode_assignment(state.assignment).partitions
    subscribed = assignment
    if protocol == "sticky":
        # Kafka's eager sticky hands a member its own stale claim outside its subscription (issue 22,
        # docs/member.md): the member refuses it and rejoins. Counted in outside_subscription_ms and
        # logged; anything else outside a subscription is still a violation.
        stale = stale_sticky_claims(members, assignment)
        if stale:
            subscribed = {
                m: tuple(tp for tp in ps if tp not in stale.get(m, ())) for m, ps in assignment.items()
            }
            for member_id, partitions in stale.items():
                sim.log_event(
                    "assigned_outside_subscription",
                    member_id=member_id,
                    generation=sim.group.generation,
                    partitions=[str(tp) for tp in partitions],
                )
            sim.own.n_outside = sum(map(len, stale.values()))
    found = check_subscriptions(members, subscribed) + check_members(members, assignment)
    if sim.metadata_changed_ms < (sim.rebalance_starts[-1] if sim.rebalance_starts else 0):
        # (skipped when partitions were added during this rebalance: the leader assigned from
        # the metadata it had then)
        found += check_coverage(members, sim.metadata(), assignment, cooperative=True)
    for text in found:
        sim.violation(f"Stable generation {sim.group.generation}: {text}")


def observe_consumer_records(sim: CoordinatorHost, seen: ConsumerObservation) -> None:
    """Carry out what one batch of consumer-group records showed: rebalances (group epoch bumps),
    state changes (Stable: the assignment is checked), invariants, members' standing, hand-overs."""
    group = sim.group
    assert isinstance(group, ConsumerGroupObserver)
    for text in seen.violations:
        sim.violation(text)
    for epoch in seen.epoch_bumps:
        sim.rebalances += 1
        sim.rebalance_starts.append(sim.now)
        sim.log_event("group_epoch", epoch=epoch)
    for state, epoch in seen.states:
        sim.log_event("group_state", state=state.kafka_name, generation=epoch)
        if state is ConsumerGroupState.STABLE:
            sim.stable_marks.append(sim.now)
            sim.own.counting_unowned = True
            _check_stable_consumer_assignment(sim, group)
    if seen.membership_changed:
        sim.group_changed()
    if seen.handover_changed and sim.handover is not None:
        revoking, unreleased = group.handover()
        index = sim.workload.index
        names = {topic_id_for(name): name for name in sim.metadata()}

        def indices(partitions: set[tuple[TopicId, int]]) -> list[int]:
            out = []
            for topic_id, p in partitions:
                name = names.get(topic_id)
                i = index.get(TopicPartition(name, p)) if name is not None else None
                if i is not None:
                    out.append(i)
            return out

        sim.handover.update(indices(revoking), indices(unreleased), sim.now)


def _check_stable_consumer_assignment(sim: CoordinatorHost, group: ConsumerGroupObserver) -> None:
    """At every Stable (every member reconciled to the target): members own only partitions of
    topics they subscribe to, and every subscribed partition is owned exactly once."""
    members, assignment = group.stable_assignment()
    found = check_subscriptions(members, assignment) + check_members(members, assignment)
    if sim.metadata_changed_ms < (sim.rebalance_starts[-1] if sim.rebalance_starts else 0):
        # (skipped when partitions were added since the last epoch bump: the target was computed
        # from the metadata the coordinator had then)
        found += check_coverage(members, sim.metadata(), assignment)
    for text in found:
        sim.violation(f"Stable group epoch {group.generation}: {text}")
