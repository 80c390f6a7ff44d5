"""The broker's settings, named after Kafka's broker configs where one exists."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgroup.model import KgroupError
from kgroup.security.listeners import SecurityConfig

if TYPE_CHECKING:
    from kgroup.transactions.coordinator import TxnCoordinatorConfig

__all__ = ["BrokerConfig", "parse_topic_spec"]

MIB = 1024 * 1024
#: Java's ``Integer.MAX_VALUE``: the largest value of Kafka's INT settings
JAVA_INT_MAX = 2**31 - 1
#: ``group.consumer.max.assignment.interval.ms``'s default, the bound of the interval kgroup takes
ASSIGNMENT_INTERVAL_MAX_MS = 15_000


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    #: the first broker's port (0: pick free ports); broker ``i`` of a cluster listens on ``port + i``
    #: when ``port`` is not 0
    port: int = 9092
    brokers: int = 1
    #: ``socket.request.max.bytes``
    max_request_bytes: int = 100 * MIB
    #: kgroup's own limit: the array elements one request may hold in all (partitions, topics,
    #: groups …); a body with more is refused unread and its connection closed. Kafka has none (its
    #: heap bounds it); kgroup keeps one request's memory and time bounded with it
    max_request_elements: int = 100_000
    #: ``max.connections`` (per broker listener)
    max_connections: int = 1000
    #: ``max.message.bytes`` of Kafka's ``__consumer_offsets`` (its ``message.max.bytes`` default): the
    #: largest batch of records one coordinator write may append (Kafka's ``CoordinatorRuntime``
    #: refuses a larger one; an OffsetCommit is then answered UNKNOWN_SERVER_ERROR)
    offsets_max_message_bytes: int = 1024 * 1024 + 12
    #: kgroup's own: the coordinator log is checkpointed (compacted) once it is larger than this and
    #: twice its size after the last checkpoint (docs/log.md)
    coordinator_checkpoint_min_bytes: int = 16 * MIB
    #: ``auto.create.topics.enable``
    auto_create_topics: bool = True
    #: ``num.partitions``
    num_partitions: int = 1
    #: ``default.replication.factor`` (0: brokers, at most 3; failover needs replicas)
    default_replication_factor: int = 0
    #: ``offsets.topic.num.partitions`` (decides which broker coordinates a group)
    offsets_topic_partitions: int = 50
    #: ``group.initial.rebalance.delay.ms``
    group_initial_rebalance_delay_ms: int = 3000
    #: ``transaction.abort.timed.out.transaction.cleanup.interval.ms``: how often the transaction
    #: coordinator aborts the transactions past their ``transaction.timeout.ms``
    transaction_abort_timed_out_interval_ms: int = 10_000
    #: ``transaction.max.timeout.ms``: the largest ``transaction.timeout.ms`` InitProducerId accepts
    #: (a larger one is INVALID_TRANSACTION_TIMEOUT)
    transaction_max_timeout_ms: int = 900_000
    #: ``transactional.id.expiration.ms``: a transactional id idle this long (no transaction open) is
    #: removed by the expiration sweep
    transactional_id_expiration_ms: int = 604_800_000
    #: ``transaction.remove.expired.transaction.cleanup.interval.ms``: how often that sweep runs
    transaction_remove_expired_interval_ms: int = 3_600_000
    #: ``group.min.session.timeout.ms`` / ``group.max.session.timeout.ms``
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    #: ``group.consumer.heartbeat.interval.ms``: the interval the consumer-group coordinator (KIP-848)
    #: names in every ConsumerGroupHeartbeat answer
    group_consumer_heartbeat_interval_ms: int = 5000
    #: ``group.consumer.session.timeout.ms``: a consumer-protocol member not heard from for this long
    #: is fenced
    group_consumer_session_timeout_ms: int = 45_000
    #: ``group.consumer.{min,max}.heartbeat.interval.ms`` and ``group.consumer.{min,max}.session.timeout.ms``:
    #: the bounds Kafka's ``GroupCoordinatorConfig`` holds the two settings above to (a broker outside
    #: them does not start)
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    #: ``group.consumer.assignment.interval.ms``: a consumer group's target assignment is computed at
    #: most this often (Kafka: at least ``group.consumer.min.assignment.interval.ms``, 0, and at most
    #: ``group.consumer.max.assignment.interval.ms``, 15,000, their defaults here)
    group_consumer_assignment_interval_ms: int = 1000
    #: ``group.share.max.size``, ``group.share.session.timeout.ms``, ``group.share.heartbeat.interval.ms``
    #: and ``group.share.assignment.interval.ms``: the share groups' coordinator (KIP-932), Kafka 4.4's
    #: defaults and bounds (kgroup.group.config.CoordinatorConfig checks them)
    group_share_max_size: int = 200
    group_share_session_timeout_ms: int = 45_000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_assignment_interval_ms: int = 1000
    #: ``group.share.record.lock.duration.ms`` (15,000-60,000 as ``group.share.min/max.record.lock.
    #: duration.ms``) and ``group.share.delivery.count.limit`` (2-10): the share partitions' locks and
    #: redeliveries (kgroup.broker.share_host)
    group_share_record_lock_duration_ms: int = 30_000
    group_share_delivery_count_limit: int = 5
    #: the share groups' ``share.auto.offset.reset`` (Kafka sets it per group; kgroup, without group
    #: configs yet, for every group): ``latest``, ``earliest`` or ``by_duration:<ISO-8601 duration>``
    share_auto_offset_reset: str = "latest"
    #: ``auto.leader.rebalance.enable`` and ``leader.imbalance.check.interval.seconds``: how often the
    #: preferred replicas take their leaderships (and group coordinators) back after a broker restart
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_s: int = 300
    #: kgroup's own: the seed of the controller's ``java.util.Random`` that places new topics' replicas
    #: (``StripedReplicaPlacer``); Kafka's controller draws one at random, kgroup's repeats run after run
    replica_placement_seed: int = 0
    cluster_id: str = "kgroup-cluster"
    #: topics created at start: name -> partition count
    topics: tuple[tuple[str, int], ...] = field(default=())
    #: listeners, TLS, SASL and ACLs (docs/security.md); the default is one PLAINTEXT listener on
    #: ``host``/``port`` and no authorizer
    security: SecurityConfig = field(default_factory=SecurityConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise KgroupError(f"port: {self.port} is not a TCP port; use 0..65535 (0 picks a free one)")
        if self.leader_imbalance_check_interval_s < 1:
            raise KgroupError(
                f"leader_imbalance_check_interval_s: {self.leader_imbalance_check_interval_s}; use at least 1"
            )
        if not 1 <= self.brokers <= 32:
            raise KgroupError(f"brokers: {self.brokers}; use 1..32")
        if self.max_request_bytes < 1024:
            raise KgroupError(f"max_request_bytes: {self.max_request_bytes}; use at least 1024")
        if self.max_request_elements < 1:
            raise KgroupError(f"max_request_elements: {self.max_request_elements}; use at least 1")
        if self.offsets_max_message_bytes < 1024:
            raise KgroupError(
                f"offsets_max_message_bytes: {self.offsets_max_message_bytes}; use at least 1024"
            )
        if self.max_connections < 1:
            raise KgroupError(f"max_connections: {self.max_connections}; use at least 1")
        if self.num_partitions < 1:
            raise KgroupError(f"num_partitions: {self.num_partitions}; use at least 1")
        if not -(2**63) <= self.replica_placement_seed < 2**63:
            raise KgroupError(
                f"replica_placement_seed: {self.replica_placement_seed} does not fit Java's long; "
                "give a smaller one"
            )
        self._check_consumer_group_timing()
        self.share_coordinator_config()  # Kafka's checks of the group.share.* settings, one line each
        self._check_share_partitions()
        if self.default_replication_factor > self.brokers:
            raise KgroupError(
                f"default_replication_factor: {self.default_replication_factor} is more than the "
                f"{self.brokers} broker(s); lower it or run more brokers"
            )
        self._check_transaction_settings()
        if self.offsets_topic_partitions < 1:
            raise KgroupError(f"offsets_topic_partitions: {self.offsets_topic_partitions}; use at least 1")

    def _check_transaction_settings(self) -> None:
        """Kafka's ``TransactionStateManagerConfig``: each an INT of at least 1 (ms)."""
        for kafka_name, value in _transaction_settings(self).items():
            if not 1 <= value <= JAVA_INT_MAX:
                raise KgroupError(f"{kafka_name}: {value}; give 1-{JAVA_INT_MAX} (ms), Kafka's bounds")

    def txn_coordinator_config(self) -> TxnCoordinatorConfig:
        """The transaction coordinator's settings from this config."""
        from kgroup.transactions.coordinator import TxnCoordinatorConfig

        return TxnCoordinatorConfig(
            transaction_max_timeout_ms=self.transaction_max_timeout_ms,
            transactional_id_expiration_ms=self.transactional_id_expiration_ms,
            abort_timed_out_interval_ms=self.transaction_abort_timed_out_interval_ms,
            remove_expired_interval_ms=self.transaction_remove_expired_interval_ms,
            offsets_topic_partitions=self.offsets_topic_partitions,
        )

    def share_coordinator_config(self) -> dict[str, int]:
        """The ``group.share.*`` settings as :class:`CoordinatorConfig` fields (checked there)."""
        from kgroup.group.config import CoordinatorConfig

        fields = {
            "share_max_size": self.group_share_max_size,
            "share_session_timeout_ms": self.group_share_session_timeout_ms,
            "share_heartbeat_interval_ms": self.group_share_heartbeat_interval_ms,
            "share_assignment_interval_ms": self.group_share_assignment_interval_ms,
        }
        try:
            CoordinatorConfig(**fields)  # type: ignore[arg-type]
        except KgroupError as exc:  # named as this config names them
            raise KgroupError(str(exc).replace("share_", "group_share_")) from None
        return fields

    def _check_share_partitions(self) -> None:
        from kgroup.share import parse_share_auto_offset_reset

        if not 15_000 <= self.group_share_record_lock_duration_ms <= 60_000:
            raise KgroupError(
                f"group_share_record_lock_duration_ms: {self.group_share_record_lock_duration_ms}; Kafka "
                "allows 15000-60000 (group.share.min/max.record.lock.duration.ms)"
            )
        if not 2 <= self.group_share_delivery_count_limit <= 10:
            raise KgroupError(
                f"group_share_delivery_count_limit: {self.group_share_delivery_count_limit}; "
                "Kafka allows 2-10"
            )
        try:
            parse_share_auto_offset_reset(self.share_auto_offset_reset)
        except ValueError as exc:
            raise KgroupError(str(exc)) from None

    def _check_consumer_group_timing(self) -> None:
        """Kafka's ``GroupCoordinatorConfig`` checks, in its order and words (then the values and the fix)."""
        names = (
            "group_consumer_heartbeat_interval_ms",
            "group_consumer_session_timeout_ms",
            "group_consumer_min_heartbeat_interval_ms",
            "group_consumer_max_heartbeat_interval_ms",
            "group_consumer_min_session_timeout_ms",
            "group_consumer_max_session_timeout_ms",
        )
        for name in names:
            if getattr(self, name) < 1:
                kafka_name = name.replace("_", ".")
                raise KgroupError(f"{kafka_name}: {getattr(self, name)}; use at least 1 (ms)")
        hb, session = "heartbeat_interval_ms", "session_timeout_ms"
        checks = (
            (f"max_{hb}", ">=", f"min_{hb}", "raise the maximum"),
            (hb, ">=", f"min_{hb}", "raise the interval or lower the minimum"),
            (hb, "<=", f"max_{hb}", "lower the interval or raise the maximum"),
            (f"max_{session}", ">=", f"min_{session}", "raise the maximum"),
            (session, ">=", f"min_{session}", "raise the timeout or lower the minimum"),
            (session, "<=", f"max_{session}", "lower the timeout or raise the maximum"),
            (hb, "<", session, "lower the interval or raise the timeout"),
        )
        words = {">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}
        for left, op, right, fix in checks:
            a = getattr(self, f"group_consumer_{left}")
            b = getattr(self, f"group_consumer_{right}")
            if not (a >= b if op == ">=" else a <= b if op == "<=" else a < b):
                kafka_left = "group.consumer." + _kafka_setting(left)
                kafka_right = "group.consumer." + _kafka_setting(right)
                raise KgroupError(f"{kafka_left} must be {words[op]} {kafka_right} ({a} vs {b}); {fix}")
        interval = self.group_consumer_assignment_interval_ms
        if interval < 0:
            raise KgroupError(f"group.consumer.assignment.interval.ms: {interval}; use at least 0 (ms)")
        if interval > ASSIGNMENT_INTERVAL_MAX_MS:
            raise KgroupError(
                "group.consumer.assignment.interval.ms must be less than or equal to "
                f"group.consumer.max.assignment.interval.ms ({interval} vs {ASSIGNMENT_INTERVAL_MAX_MS}); "
                "lower the interval"
            )

    @property
    def replication_factor(self) -> int:
        if self.default_replication_factor > 0:
            return self.default_replication_factor
        return min(self.brokers, 3)


def _kafka_setting(name: str) -> str:
    """``min_heartbeat_interval_ms`` -> ``min.heartbeat.interval.ms`` (Kafka's config names)."""
    return name.replace("_", ".")


def parse_topic_spec(spec: str) -> tuple[str, int]:
    """``orders:12`` -> ("orders", 12). A name without a count is refused: the partition count is the
    one choice a topic cannot undo downward, so it is never guessed."""
    name, sep, count = spec.rpartition(":")
    if not sep:
        raise KgroupError(
            f"--topic: {spec!r} has no partition count; write NAME:PARTITIONS, e.g. {spec}:12 "
            f"({spec}:1 for one partition)"
        )
    if not name:
        raise KgroupError(f"--topic: {spec!r} has no name; write NAME:PARTITIONS, e.g. orders:12")
    try:
        partitions = int(count)
    except ValueError:
        raise KgroupError(
            f"--topic: {spec!r}: {count!r} is not a partition count; write NAME:PARTITIONS"
        ) from None
    if partitions < 1:
        raise KgroupError(f"--topic: {spec!r}: the partition count must be at least 1")
    return name, partitions


def _transaction_settings(config: BrokerConfig) -> dict[str, int]:
    """The transaction coordinator's settings by Kafka's names, in Kafka's order of definition."""
    prefix = "transaction.abort.timed.out", "transaction.remove.expired"
    return {
        "transactional.id.expiration.ms": config.transactional_id_expiration_ms,
        "transaction.max.timeout.ms": config.transaction_max_timeout_ms,
        f"{prefix[0]}.transaction.cleanup.interval.ms": config.transaction_abort_timed_out_interval_ms,
        f"{prefix[1]}.transaction.cleanup.interval.ms": config.transaction_remove_expired_interval_ms,
    }
