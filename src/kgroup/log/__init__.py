"""The live broker's storage: partition logs of RecordBatch v2 segments and the coordinator's record log.

Pure file code (no sockets, no clock: times are passed in). ``LogManager`` owns a data directory;
``PartitionLog`` appends produced batches exactly as produced (offsets assigned, CRC-32C checked,
idempotent producers' duplicates and sequence errors handled as Kafka's log does), reads whole batches
back and answers ListOffsets; ``CoordinatorLog`` keeps the group coordinator's records, replayed on
start. Everything written survives a process crash once a call returns; ``FsyncPolicy`` decides what
survives a machine crash. See ``docs/log.md``.
"""

from kgroup.log.coordinator import CoordinatorLog
from kgroup.log.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidTopic,
    LogError,
    LogErrorCode,
    LogStorageError,
    OffsetOutOfRange,
    TopicExists,
    UnknownTopicOrPartition,
)
from kgroup.log.manager import LogConfig, LogManager, validate_topic_name
from kgroup.log.partition import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendResult,
    FsyncPolicy,
    PartitionLog,
    PartitionSettings,
    RecoveryReport,
)
from kgroup.log.segment import FileSlice

__all__ = [
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendResult",
    "CoordinatorLog",
    "FileSlice",
    "FsyncPolicy",
    "InvalidConfig",
    "InvalidPartitions",
    "InvalidTopic",
    "LogConfig",
    "LogError",
    "LogErrorCode",
    "LogManager",
    "LogStorageError",
    "OffsetOutOfRange",
    "PartitionLog",
    "PartitionSettings",
    "RecoveryReport",
    "TopicExists",
    "UnknownTopicOrPartition",
    "validate_topic_name",
]
