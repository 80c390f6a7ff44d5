"""The consumer-protocol member's settings (``group.protocol=consumer``), with Kafka 4.x's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.member.config import MemberConfig, check_group_ids
from kgroup.model import KgroupError

__all__ = ["ConsumerProtocolConfig"]


@dataclass(frozen=True, slots=True)
class ConsumerProtocolConfig:
    """A KIP-848 consumer's group settings.

    ``remote_assignor`` is ``group.remote.assignor`` (``"uniform"`` or ``"range"`` on Apache Kafka;
    ``None`` lets the coordinator choose). ``max_poll_interval_ms`` is also the rebalance timeout the
    member sends, as in Kafka. There is no session timeout or heartbeat interval here: with this
    protocol the coordinator owns both (``group.consumer.session.timeout.ms`` and
    ``group.consumer.heartbeat.interval.ms``) and tells the member the interval in every answer.
    ``retry_backoff_ms`` / ``retry_backoff_max_ms`` bound the exponential backoff after failures.
    """

    group_id: str
    client_id: str = "consumer"
    group_instance_id: str | None = None
    rack_id: str | None = None
    remote_assignor: str | None = None
    max_poll_interval_ms: int = 300000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000

    def __post_init__(self) -> None:
        check_group_ids(self.group_id, self.group_instance_id)
        if self.remote_assignor is not None and not self.remote_assignor:
            raise KgroupError(
                "remote_assignor: empty string; use None to let the coordinator choose, or e.g. 'uniform'"
            )
        for name in ("max_poll_interval_ms", "auto_commit_interval_ms"):
            value = getattr(self, name)
            if value <= 0:
                raise KgroupError(f"{name}: {value}; it must be a positive number of milliseconds")
        for name in ("retry_backoff_ms", "retry_backoff_max_ms"):
            value = getattr(self, name)
            if value < 0:
                raise KgroupError(f"{name}: {value}; it must be 0 or more milliseconds")

    @classmethod
    def from_member_config(
        cls, config: MemberConfig, remote_assignor: str | None = None
    ) -> ConsumerProtocolConfig:
        """The same consumer's settings for the consumer protocol (the classic-only ones are dropped:
        session timeout, heartbeat interval and client-side assignors belong to the coordinator)."""
        return cls(
            group_id=config.group_id,
            client_id=config.client_id,
            group_instance_id=config.group_instance_id,
            rack_id=config.rack_id,
            remote_assignor=remote_assignor,
            max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            enable_auto_commit=config.enable_auto_commit,
            auto_commit_interval_ms=config.auto_commit_interval_ms,
        )
