"""The coordinator's broker settings, with Kafka 4.0's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.model import KgroupError

__all__ = ["CoordinatorConfig"]


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker settings of the classic group coordinator (Kafka's names with dots as underscores)."""

    #: ``group.min.session.timeout.ms``: JoinGroups asking for less get INVALID_SESSION_TIMEOUT
    group_min_session_timeout_ms: int = 6000
    #: ``group.max.session.timeout.ms``: JoinGroups asking for more get INVALID_SESSION_TIMEOUT
    group_max_session_timeout_ms: int = 1_800_000
    #: ``group.initial.rebalance.delay.ms``: how long an empty group waits for more members
    group_initial_rebalance_delay_ms: int = 3000
    #: ``group.max.size``: members beyond it get GROUP_MAX_SIZE_REACHED
    group_max_size: int = 2**31 - 1
    #: ``offsets.topic.num.partitions``: partitions of ``__consumer_offsets`` (FindCoordinator mapping)
    offsets_topic_num_partitions: int = 50
    #: ``group.classic.new.member.join.timeout.ms`` (internal, 5 min): a new member's parked
    #: JoinGroup expires after this long if the rebalance does not complete
    group_new_member_join_timeout_ms: int = 300_000
    #: ``offset.metadata.max.bytes``: longer commit metadata gets OFFSET_METADATA_TOO_LARGE
    offset_metadata_max_bytes: int = 4096
    # --- consumer groups (KIP-848) -------------------------------------------------------------------
    #: ``group.consumer.session.timeout.ms``: a member not heard from for this long is fenced
    consumer_session_timeout_ms: int = 45_000
    #: ``group.consumer.heartbeat.interval.ms``: the interval given to members in every response
    consumer_heartbeat_interval_ms: int = 5000
    #: ``group.consumer.max.size``: members beyond it get GROUP_MAX_SIZE_REACHED
    consumer_max_size: int = 2**31 - 1
    #: ``group.consumer.assignors``: the server assignors members may name; the first is the default
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    #: ``group.consumer.assignment.interval.ms``: a new target assignment at most this often
    consumer_assignment_interval_ms: int = 1000
    #: ``group.consumer.regex.refresh.interval.ms``: how often subscribed regexes are re-resolved
    consumer_regex_refresh_interval_ms: int = 600_000
    #: ``group.consumer.migration.policy``: ``bidirectional`` (Kafka's default) lets classic-protocol
    #: members join consumer groups; ``disabled`` refuses them (INCONSISTENT_GROUP_PROTOCOL). The
    #: conversions of a whole group (``upgrade`` / ``downgrade``) are not built: see docs/consumer-protocol.md
    consumer_migration_policy: str = "bidirectional"
    # --- share groups (KIP-932), Kafka 4.4's defaults ----------------------------------------------------
    #: ``group.share.session.timeout.ms``: a share member not heard from for this long is fenced
    share_session_timeout_ms: int = 45_000
    #: ``group.share.min.session.timeout.ms`` / ``group.share.max.session.timeout.ms``: its bounds
    share_min_session_timeout_ms: int = 45_000
    share_max_session_timeout_ms: int = 60_000
    #: ``group.share.heartbeat.interval.ms``: the interval given to share members in every response
    share_heartbeat_interval_ms: int = 5000
    #: ``group.share.min.heartbeat.interval.ms`` / ``group.share.max.heartbeat.interval.ms``: its bounds
    share_min_heartbeat_interval_ms: int = 5000
    share_max_heartbeat_interval_ms: int = 15_000
    #: ``group.share.max.size``: share members beyond it get GROUP_MAX_SIZE_REACHED
    share_max_size: int = 200
    #: ``group.share.assignment.interval.ms``: a new target assignment at most this often
    share_assignment_interval_ms: int = 1000
    #: ``group.share.min.assignment.interval.ms`` / ``group.share.max.assignment.interval.ms``
    share_min_assignment_interval_ms: int = 0
    share_max_assignment_interval_ms: int = 15_000
    #: ``group.share.initialize.retry.interval.ms``: partitions whose share state is still being
    #: initialised this long after asking are asked for again
    share_initialize_retry_interval_ms: int = 30_000

    def __post_init__(self) -> None:
        if self.group_min_session_timeout_ms < 0:
            raise KgroupError("group_min_session_timeout_ms: must be 0 or more; give a non-negative value")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise KgroupError(
                "group_max_session_timeout_ms: is below group_min_session_timeout_ms; "
                "raise it or lower the minimum"
            )
        if self.group_initial_rebalance_delay_ms < 0:
            raise KgroupError(
                "group_initial_rebalance_delay_ms: must be 0 or more; give a non-negative value"
            )
        if self.group_max_size < 1:
            raise KgroupError("group_max_size: must be at least 1; give a positive value")
        if self.offsets_topic_num_partitions < 1:
            raise KgroupError("offsets_topic_num_partitions: must be at least 1; give a positive value")
        if self.group_new_member_join_timeout_ms < 0:
            raise KgroupError(
                "group_new_member_join_timeout_ms: must be 0 or more; give a non-negative value"
            )
        for name in (
            "consumer_session_timeout_ms",
            "consumer_heartbeat_interval_ms",
            "consumer_assignment_interval_ms",
            "consumer_regex_refresh_interval_ms",
        ):
            if getattr(self, name) < 0:
                raise KgroupError(f"{name}: must be 0 or more; give a non-negative value")
        self._check_share()
        if self.consumer_migration_policy not in ("bidirectional", "upgrade", "downgrade", "disabled"):
            raise KgroupError(
                "consumer_migration_policy: must be one of bidirectional, upgrade, downgrade, disabled"
            )
        if self.consumer_max_size < 1:
            raise KgroupError("consumer_max_size: must be at least 1; give a positive value")
        if not self.consumer_assignors:
            raise KgroupError("consumer_assignors: name at least one server assignor, e.g. uniform")
        if self.offset_metadata_max_bytes < 0:
            raise KgroupError("offset_metadata_max_bytes: must be 0 or more; give a non-negative value")

    def _check_share(self) -> None:
        """Kafka's ``GroupCoordinatorConfig`` checks of the ``group.share.*`` settings, one line each."""

        def kafka(name: str) -> str:
            return "group." + name.replace("_", ".")

        def at_least(name: str, low: str) -> None:
            if getattr(self, name) < getattr(self, low):
                raise KgroupError(
                    f"{name}: must be at least {low} ({getattr(self, low)}; Kafka: {kafka(name)} must be "
                    f"greater than or equal to {kafka(low)}); raise it or lower the minimum"
                )

        def at_most(name: str, high: str) -> None:
            if getattr(self, name) > getattr(self, high):
                raise KgroupError(
                    f"{name}: must be at most {high} ({getattr(self, high)}; Kafka: {kafka(name)} must be "
                    f"less than or equal to {kafka(high)}); lower it or raise the maximum"
                )

        if self.share_max_size < 1:
            raise KgroupError("share_max_size: must be at least 1; give a positive value")
        if self.share_min_assignment_interval_ms < 0 or self.share_initialize_retry_interval_ms < 0:
            raise KgroupError(
                "share_min_assignment_interval_ms / share_initialize_retry_interval_ms: must be 0 or more; "
                "give a non-negative value"
            )
        at_least("share_max_session_timeout_ms", "share_min_session_timeout_ms")
        at_least("share_session_timeout_ms", "share_min_session_timeout_ms")
        at_most("share_session_timeout_ms", "share_max_session_timeout_ms")
        at_least("share_max_heartbeat_interval_ms", "share_min_heartbeat_interval_ms")
        at_least("share_heartbeat_interval_ms", "share_min_heartbeat_interval_ms")
        at_most("share_heartbeat_interval_ms", "share_max_heartbeat_interval_ms")
        if self.share_heartbeat_interval_ms >= self.share_session_timeout_ms:
            raise KgroupError(
                "share_heartbeat_interval_ms: must be less than share_session_timeout_ms (Kafka: group.share."
                "heartbeat.interval.ms must be less than group.share.session.timeout.ms); lower it"
            )
        at_least("share_max_assignment_interval_ms", "share_min_assignment_interval_ms")
        at_least("share_assignment_interval_ms", "share_min_assignment_interval_ms")
        at_most("share_assignment_interval_ms", "share_max_assignment_interval_ms")
