"""Running one scenario under other settings: strategy, rebalance protocol, membership, seed.

Kafka has no "protocol" switch: a consumer uses COOPERATIVE when every assignor in its
``partition.assignment.strategy`` supports it, EAGER otherwise. So ``--protocol`` is expressed the
way Kafka users express it:

* ``cooperative`` requires every assignor of the list to support COOPERATIVE (only
  ``cooperative-sticky`` among the built-ins); otherwise Kafka cannot run it and kgroup says so;
* ``eager`` with a list that would be cooperative appends ``range`` to it — the configuration of the
  first bounce of Kafka's documented upgrade path (``[cooperative-sticky, range]``): every member
  still votes for the first assignor, but the members follow the EAGER protocol.

Overrides change the group's list (``group.assignors``), which consumers without their own list
use; consumer- and event-level lists (a rolling upgrade) are left as written.

``consumer`` is the third protocol: Kafka 4's ``group.protocol=consumer`` (KIP-848). There the
coordinator assigns, so ``--assignors`` names the server assignor (``uniform`` or ``range``) and the
client-side lists of the group, the consumers and the events are dropped (Kafka's client refuses
them with this protocol); ``eager`` or ``cooperative`` on a consumer-protocol scenario runs it on the
classic protocol with the file's (or Kafka's default) client-side list.

``share`` is the fourth: a share group (KIP-932), whose coordinator assigns with its only assignor,
``simple``; a share consumer has no ``group.instance.id``, so every consumer is dynamic there, and the
client-side lists are dropped as for ``consumer``. Going from a share scenario to another protocol
resets the share-only settings to Kafka's defaults (they mean nothing elsewhere).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from kgroup.model import KgroupError, RebalanceProtocol
from kgroup.sim.scenario import (
    DEFAULT_ASSIGNORS,
    PROCESSING_MODES,
    SERVER_ASSIGNORS,
    ConsumerSpec,
    EventSpec,
    GroupSpec,
    Scenario,
)

__all__ = [
    "CLASSIC_PROTOCOLS",
    "MEMBERSHIPS",
    "PROTOCOLS",
    "SERVER_ASSIGNORS",
    "STRATEGIES",
    "Variant",
    "assignor_protocols",
    "compare_variants",
    "list_protocol",
    "with_overrides",
]

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
PROTOCOLS = ("eager", "cooperative", "consumer", "share")
#: a share group's only assignor (``group.share.assignors``)
SHARE_ASSIGNOR = "simple"
#: the classic protocols (the client's assignors decide between them)
CLASSIC_PROTOCOLS = ("eager", "cooperative")
MEMBERSHIPS = ("dynamic", "static")

# Kafka's supportedProtocols() of the built-in assignors (CooperativeStickyAssignor lists both)
_E, _C = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE
_BUILTIN_PROTOCOLS: dict[str, tuple[RebalanceProtocol, ...]] = {
    "range": (_E,),
    "roundrobin": (_E,),
    "sticky": (_E,),
    "cooperative-sticky": (_E, _C),
    "legacy-range": (_E,),
    "legacy-roundrobin": (_E,),
}


def assignor_protocols(name: str) -> tuple[RebalanceProtocol, ...]:
    known = _BUILTIN_PROTOCOLS.get(name)
    if known is not None:
        return known
    from kgroup.assignors import create_assignor

    return tuple(create_assignor(name).protocols)


def list_protocol(assignors: Sequence[str]) -> RebalanceProtocol:
    """The protocol a consumer with this ``partition.assignment.strategy`` uses."""
    if all(_C in assignor_protocols(a) for a in assignors):
        return _C
    return _E


def _apply_protocol(assignors: tuple[str, ...], protocol: str) -> tuple[str, ...]:
    if protocol == "cooperative":
        for name in assignors:
            if _C not in assignor_protocols(name):
                raise KgroupError(
                    f"--protocol: cooperative needs every assignor to support it, and {name!r} supports only "
                    "EAGER (Kafka cannot run it cooperatively); use --assignors cooperative-sticky"
                )
        return assignors
    if list_protocol(assignors) is _C:
        return (*assignors, "range") if "range" not in assignors else assignors
    return assignors


def with_overrides(
    scenario: Scenario,
    *,
    assignors: Sequence[str] | None = None,
    protocol: str | None = None,
    membership: str | None = None,
    seed: int | None = None,
    processing: str | None = None,
) -> Scenario:
    """``scenario`` with the command line's overrides applied (``None`` keeps the file's value)."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise KgroupError(
            f"--protocol: {protocol!r} is not a protocol; use eager, cooperative, consumer or share"
        )
    if processing is not None:
        if processing not in PROCESSING_MODES:
            raise KgroupError(
                f"--processing: {processing!r} is not a processing mode; use at_least_once or exactly_once"
            )
        scenario = dataclasses.replace(
            scenario, workload=dataclasses.replace(scenario.workload, processing=processing)
        )
    to_share = protocol == "share" or (protocol is None and scenario.group.share_protocol)
    if scenario.workload.exactly_once and to_share:
        field = "--processing" if processing is not None else "--protocol"
        raise KgroupError(
            f"{field}: a share group has no exactly-once processing (Kafka 4.4's share groups have no "
            "transactional acknowledgement); use another protocol or at_least_once processing"
        )
    group = scenario.group
    consumers = scenario.consumers
    events = scenario.events
    if protocol == "share" or (protocol is None and group.share_protocol):
        if membership == "static":
            raise KgroupError(
                "--static: a share group has no static membership (no group.instance.id); drop it"
            )
        if assignors is not None and tuple(assignors) != (SHARE_ASSIGNOR,):
            raise KgroupError(
                f"--assignors: {','.join(assignors) or 'nothing'} is not a share group's assignor; "
                f"a share group's coordinator runs {SHARE_ASSIGNOR} only"
            )
        group, consumers, events = _to_share_group(scenario)
        membership = None  # (every share consumer is dynamic)
    else:
        if group.share_protocol:  # leaving share groups: their settings mean nothing elsewhere
            defaults = GroupSpec()
            group = dataclasses.replace(
                group,
                protocol="classic",
                share_session_timeout_ms=defaults.share_session_timeout_ms,
                share_heartbeat_interval_ms=defaults.share_heartbeat_interval_ms,
                share_record_lock_duration_ms=defaults.share_record_lock_duration_ms,
                share_delivery_count_limit=defaults.share_delivery_count_limit,
                share_max_record_locks=defaults.share_max_record_locks,
            )
        if protocol == "consumer" or (protocol is None and group.consumer_protocol):
            group, consumers, events = _to_consumer_protocol(
                dataclasses.replace(scenario, group=group), assignors
            )
        else:
            if group.consumer_protocol:  # eager / cooperative: the same group on the classic protocol
                group = dataclasses.replace(group, protocol="classic", server_assignor=None)
            group = _classic_overrides(group, assignors, protocol)
    if membership is not None:
        if membership not in MEMBERSHIPS:
            raise KgroupError(f"membership: {membership!r} is unknown; use static or dynamic")
        static = membership == "static"
        consumers = tuple(dataclasses.replace(c, static=static) for c in consumers)
        events = tuple(dataclasses.replace(e, static=static) if e.kind == "scale" else e for e in events)
    if seed is not None and seed < 0:
        raise KgroupError(f"--seed: {seed} is negative; give a whole number >= 0")
    return dataclasses.replace(
        scenario,
        group=group,
        consumers=consumers,
        events=events,
        seed=scenario.seed if seed is None else seed,
    )


def _classic_overrides(group: GroupSpec, assignors: Sequence[str] | None, protocol: str | None) -> GroupSpec:
    if assignors is not None:
        from kgroup.assignors import available_assignors

        names = tuple(assignors)
        known = available_assignors()
        for name in names:
            if name not in known:
                raise KgroupError(f"--assignors: {name!r} is not an assignor; use one of: {', '.join(known)}")
        if not names or len(set(names)) != len(names):
            raise KgroupError("--assignors: give one or more different assignor names, comma-separated")
        group = dataclasses.replace(group, assignors=names)
    if protocol is not None:
        group = dataclasses.replace(group, assignors=_apply_protocol(group.assignors, protocol))
    return group


def _to_consumer_protocol(
    scenario: Scenario, assignors: Sequence[str] | None
) -> tuple[GroupSpec, tuple[ConsumerSpec, ...], tuple[EventSpec, ...]]:
    """The scenario's group on the consumer protocol: ``assignors`` (one name) is the server
    assignor; the client-side assignor lists of the consumers and events are dropped."""
    group = scenario.group
    server_assignor = group.server_assignor
    if assignors is not None:
        names = tuple(assignors)
        if len(names) != 1 or names[0] not in SERVER_ASSIGNORS:
            raise KgroupError(
                f"--assignors: {','.join(names) or 'nothing'} is not a server assignor; with the consumer "
                f"protocol give one of: {', '.join(SERVER_ASSIGNORS)}"
            )
        server_assignor = names[0]
    # (the client-side list means nothing here: it is reset, as a file with protocol: consumer reads)
    group = dataclasses.replace(
        group, protocol="consumer", server_assignor=server_assignor, assignors=DEFAULT_ASSIGNORS
    )
    consumers = tuple(
        dataclasses.replace(c, assignors=None) if c.assignors is not None else c for c in scenario.consumers
    )
    events = tuple(
        dataclasses.replace(e, assignors=None) if e.assignors is not None else e for e in scenario.events
    )
    return group, consumers, events


def _to_share_group(
    scenario: Scenario,
) -> tuple[GroupSpec, tuple[ConsumerSpec, ...], tuple[EventSpec, ...]]:
    """The scenario's consumers as a share group: the coordinator assigns (``simple``), nobody is static."""
    group = dataclasses.replace(
        scenario.group, protocol="share", server_assignor=None, assignors=DEFAULT_ASSIGNORS
    )
    defaults = GroupSpec()
    group = dataclasses.replace(
        group,
        consumer_session_timeout_ms=defaults.consumer_session_timeout_ms,
        consumer_heartbeat_interval_ms=defaults.consumer_heartbeat_interval_ms,
    )
    consumers = tuple(
        dataclasses.replace(c, assignors=None, static=False) if c.assignors is not None or c.static else c
        for c in scenario.consumers
    )
    events = tuple(
        dataclasses.replace(e, assignors=None, static=False) if e.assignors is not None or e.static else e
        for e in scenario.events
    )
    return group, consumers, events


@dataclass(frozen=True, slots=True)
class Variant:
    """One cell of a comparison: a strategy, a protocol and (optionally) a membership."""

    strategy: str
    protocol: str
    membership: str | None = None

    @property
    def label(self) -> str:
        parts = [self.strategy, self.protocol]
        if self.membership is not None:
            parts.append(self.membership)
        return "/".join(parts)

    def apply(self, scenario: Scenario, seed: int | None = None) -> Scenario:
        return with_overrides(
            scenario,
            assignors=(self.strategy,),
            protocol=self.protocol,
            membership=self.membership,
            seed=seed,
        )


def compare_variants(
    strategies: Sequence[str] = STRATEGIES,
    memberships: Sequence[str | None] = MEMBERSHIPS,
    server_assignors: Sequence[str] = SERVER_ASSIGNORS,
    share: bool = True,
) -> tuple[list[Variant], list[tuple[Variant, str]]]:
    """Every strategy × protocol (× membership) Kafka can run, and the ones it cannot, with why:
    the client-side ``strategies`` on the classic protocol (eager, cooperative), then the
    ``server_assignors`` on the consumer protocol (KIP-848), then (``share``) the same consumers as a
    share group (KIP-932): one row, ``simple/share``, since a share consumer is never static."""
    runnable: list[Variant] = []
    skipped: list[tuple[Variant, str]] = []
    for strategy in strategies:
        supported = assignor_protocols(strategy)
        for protocol in CLASSIC_PROTOCOLS:
            if protocol == "cooperative" and _C not in supported:
                reason = f"{strategy} supports only EAGER; Kafka cannot run it cooperatively"
                skipped.append((Variant(strategy, protocol), reason))
                continue
            runnable.extend(Variant(strategy, protocol, membership) for membership in memberships)
    for assignor in server_assignors:
        runnable.extend(Variant(assignor, "consumer", membership) for membership in memberships)
    if share:
        runnable.append(Variant(SHARE_ASSIGNOR, "share"))
    return runnable, skipped
