"""The consumer member's configuration: Kafka's consumer defaults, validated once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kgroup.assignors.api import Assignor
from kgroup.model import KgroupError, RebalanceProtocol

__all__ = ["MemberConfig", "check_group_ids", "choose_protocol"]


def check_group_ids(group_id: str, group_instance_id: str | None) -> None:
    """Both members' group id and static instance id, checked alike (one line naming the field)."""
    if not group_id:
        raise KgroupError("group_id: empty; give the consumer group a non-empty id")
    if group_instance_id is not None and not group_instance_id:
        raise KgroupError("group_instance_id: empty string; use None for a dynamic member or a non-empty id")


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """A consumer's group settings, with Kafka 4.0's defaults.

    ``max_poll_interval_ms`` is also the rebalance timeout the member announces in JoinGroup, as in
    Kafka. ``assignors`` is ``partition.assignment.strategy`` in preference order.

    ``commit_on_revoke`` goes beyond Kafka's client: it models an application whose
    ``onPartitionsRevoked`` callback commits the revoked partitions' positions (the pattern Kafka's
    documentation recommends). Kafka itself only auto-commits before JoinGroup and on close.
    """

    group_id: str
    client_id: str = "consumer"
    group_instance_id: str | None = None
    rack_id: str | None = None
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    retry_backoff_ms: int = 100
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    assignors: tuple[str, ...] = ("range", "cooperative-sticky")
    commit_on_revoke: bool = False

    def __post_init__(self) -> None:
        check_group_ids(self.group_id, self.group_instance_id)
        for name in (
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "max_poll_interval_ms",
            "auto_commit_interval_ms",
        ):
            value = getattr(self, name)
            if value <= 0:
                raise KgroupError(f"{name}: {value}; it must be a positive number of milliseconds")
        if self.retry_backoff_ms < 0:
            raise KgroupError(f"retry_backoff_ms: {self.retry_backoff_ms}; it must be 0 or more")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            # Kafka's Heartbeat refuses this too: the session would expire between two heartbeats.
            raise KgroupError(
                f"heartbeat_interval_ms: {self.heartbeat_interval_ms} is not below session_timeout_ms "
                f"{self.session_timeout_ms}; set it lower (Kafka suggests a third of the session timeout)"
            )
        if not self.assignors:
            raise KgroupError("assignors: empty; name at least one assignor, e.g. ('range',)")
        if len(set(self.assignors)) != len(self.assignors):
            raise KgroupError(f"assignors: {list(self.assignors)} names one twice; list each assignor once")


def choose_protocol(assignors: Sequence[Assignor]) -> RebalanceProtocol:
    """The rebalance protocol a member uses: the highest one every configured assignor supports.

    Kafka's ``ConsumerCoordinator`` intersects the assignors' supported protocols and takes the last
    (highest) one, so ``[range, cooperative-sticky]`` is EAGER and ``[cooperative-sticky]`` COOPERATIVE.
    """
    common = set(RebalanceProtocol)
    for assignor in assignors:
        common &= set(assignor.protocols)
    if not common:
        names = [a.name for a in assignors]
        raise KgroupError(
            f"assignors: {names} have no rebalance protocol in common; list assignors that all "
            "support EAGER (or all COOPERATIVE)"
        )
    return max(common, key=lambda p: p.value)
