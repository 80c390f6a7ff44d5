"""The options of ``consume=group``: which consumer group the query's members join, and how.

Group settings come as Kafka consumer configs (``kafka.*``, Kafka's names) plus ``groupMembers``:

==============================================  ==========================================================
``kafka.group.id``                              the group (required)
``groupMembers``                                members the query holds (default 1)
``kafka.partition.assignment.strategy``         assignors in preference order: kgroup's names (``range``,
                                                ``roundrobin``, ``sticky``, ``cooperative-sticky``,
                                                plug-ins) or Kafka's class names; default Kafka's
                                                ``[range, cooperative-sticky]``
``kafka.group.protocol``                        ``classic`` (default: JoinGroup/SyncGroup, client-side
                                                assignors) or ``consumer`` (KIP-848: the coordinator
                                                assigns; needs a broker with ConsumerGroupHeartbeat)
``kafka.group.remote.assignor``                 ``consumer`` protocol only: the server assignor to ask
                                                for (``uniform``, ``range``; default: the broker's)
``kafka.group.instance.id``                     static membership: member *i* is ``<id>-<i>``
``kafka.session.timeout.ms`` …                  ``session.timeout.ms`` (45000), ``heartbeat.interval.ms``
                                                (3000), ``max.poll.interval.ms`` (300000, also the
                                                rebalance timeout), ``client.id`` (``kgroup-spark``)
==============================================  ==========================================================

As in Kafka's consumer, ``group.protocol=consumer`` refuses ``partition.assignment.strategy``,
``session.timeout.ms`` and ``heartbeat.interval.ms`` (the coordinator owns them) and ``classic`` refuses
``group.remote.assignor``.

These configs belong to the group members, so they are taken out of the configuration the
executors' fetchers get (they only ``assign`` partitions and never join a group).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kgroup.model import KgroupError

__all__ = ["GROUP_CONFIGS", "GroupSettings", "parse_group_settings"]

#: the ``kafka.*`` configs the group members read (removed from the fetchers' configuration)
GROUP_CONFIGS = (
    "group.id",
    "group.protocol",
    "group.remote.assignor",
    "group.instance.id",
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "max.poll.interval.ms",
    "client.id",
)
#: Kafka's assignor classes by their kgroup names
_JAVA_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.rangeassignor": "range",
    "org.apache.kafka.clients.consumer.roundrobinassignor": "roundrobin",
    "org.apache.kafka.clients.consumer.stickyassignor": "sticky",
    "org.apache.kafka.clients.consumer.cooperativestickyassignor": "cooperative-sticky",
}
MAX_MEMBERS = 100


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """The checked group options of a ``consume=group`` read."""

    group_id: str
    members: int = 1
    assignors: tuple[str, ...] = ("range", "cooperative-sticky")
    group_instance_id: str | None = None
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    client_id: str = "kgroup-spark"
    #: Kafka's ``group.protocol``: ``classic`` or ``consumer`` (KIP-848)
    group_protocol: str = "classic"
    remote_assignor: str | None = None


def _ms(name: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise KgroupError(f"kafka.{name}: {value!r} is not a whole number of milliseconds") from None
    if number <= 0:
        raise KgroupError(f"kafka.{name}: {number}; give a positive number of milliseconds")
    return number


def parse_group_settings(config: Mapping[str, str], members_text: str | None) -> GroupSettings:
    """The group settings from the ``kafka.*`` configs (prefix removed) and ``groupMembers``."""
    from kgroup.assignors.registry import available_assignors

    group_id = config.get("group.id", "").strip()
    protocol = config.get("group.protocol", "classic").strip().lower()
    if protocol not in ("classic", "consumer"):
        raise KgroupError(
            f"kafka.group.protocol: {config['group.protocol']!r}; give classic or consumer (Kafka's names)"
        )
    remote = config.get("group.remote.assignor")
    if protocol == "consumer":
        refused = [
            f"kafka.{name}"
            for name in ("partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms")
            if config.get(name, "").strip()
        ]
        if refused:
            raise KgroupError(
                f"{refused[0]}: not supported with kafka.group.protocol=consumer (the coordinator owns "
                "it); remove it, or use kafka.group.remote.assignor for the assignor"
            )
        if remote is not None and not remote.strip():
            raise KgroupError("kafka.group.remote.assignor: empty; give a server assignor (uniform, range)")
    elif remote is not None and remote.strip():
        raise KgroupError(
            "kafka.group.remote.assignor: only with kafka.group.protocol=consumer; set it or drop this option"
        )
    if not group_id:
        raise KgroupError("kafka.group.id: consume=group needs the consumer group's id; set kafka.group.id")
    members = 1
    if members_text is not None:
        try:
            members = int(members_text.strip())
        except ValueError:
            raise KgroupError(
                f"groupMembers: {members_text!r} is not a whole number; give 1 to {MAX_MEMBERS}"
            ) from None
        if not 1 <= members <= MAX_MEMBERS:
            raise KgroupError(f"groupMembers: {members}; give 1 to {MAX_MEMBERS} members")
    assignors: tuple[str, ...] = ("range", "cooperative-sticky")
    if "partition.assignment.strategy" in config:
        names = []
        known = set(available_assignors())
        for raw in config["partition.assignment.strategy"].split(","):
            name = raw.strip()
            if not name:
                continue
            name = _JAVA_ASSIGNORS.get(name.lower(), name)
            if name not in known:
                raise KgroupError(
                    f"kafka.partition.assignment.strategy: {raw.strip()!r} is not an assignor; "
                    f"give kgroup names ({', '.join(sorted(known))}) or Kafka's class names"
                )
            names.append(name)
        if not names:
            raise KgroupError("kafka.partition.assignment.strategy: empty; name at least one assignor")
        assignors = tuple(dict.fromkeys(names))
    instance = config.get("group.instance.id")
    if instance is not None and not instance.strip():
        raise KgroupError("kafka.group.instance.id: empty; give an id or remove the option")
    settings = GroupSettings(
        group_id=group_id,
        members=members,
        assignors=assignors,
        group_instance_id=instance.strip() if instance else None,
        session_timeout_ms=_ms("session.timeout.ms", config.get("session.timeout.ms", "45000")),
        heartbeat_interval_ms=_ms("heartbeat.interval.ms", config.get("heartbeat.interval.ms", "3000")),
        max_poll_interval_ms=_ms("max.poll.interval.ms", config.get("max.poll.interval.ms", "300000")),
        client_id=config.get("client.id", "kgroup-spark").strip() or "kgroup-spark",
        group_protocol=protocol,
        remote_assignor=remote.strip() if protocol == "consumer" and remote else None,
    )
    if settings.heartbeat_interval_ms >= settings.session_timeout_ms:
        raise KgroupError(
            f"kafka.heartbeat.interval.ms: {settings.heartbeat_interval_ms} is not below "
            f"kafka.session.timeout.ms {settings.session_timeout_ms}; set it lower (a third is usual)"
        )
    return settings
