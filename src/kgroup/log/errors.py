"""The log's two kinds of failure, each carrying Kafka's error code for the broker to answer with.

* :class:`LogError` — a request the log cannot honour (a topic that exists already, an offset out of
  range, a bad topic config). The broker answers it with ``error_code`` for that topic/partition.
* :class:`kgroup.model.PeerError` — bytes from a client that break Kafka's record format or the
  idempotent producer's rules (bad CRC, wrong magic, out-of-order sequence). Raised by ``append``.

Neither is :class:`kgroup.model.KgroupError`: a broker's client is not the user at the terminal.
"""

from __future__ import annotations

import enum

from kgroup.model import PeerError

__all__ = [
    "InvalidConfig",
    "InvalidPartitions",
    "InvalidTopic",
    "LogError",
    "LogErrorCode",
    "LogStorageError",
    "OffsetOutOfRange",
    "RecordErrors",
    "TopicExists",
    "UnknownTopicOrPartition",
]


class LogErrorCode(enum.IntEnum):
    """Kafka's error codes (``org.apache.kafka.common.protocol.Errors``) the log raises."""

    UNKNOWN_SERVER_ERROR = -1
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    MESSAGE_TOO_LARGE = 10
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    INVALID_TIMESTAMP = 32
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_CONFIG = 40
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    KAFKA_STORAGE_ERROR = 56
    UNSUPPORTED_COMPRESSION_TYPE = 76
    INVALID_RECORD = 87


class LogError(Exception):
    """A request the log cannot honour; ``error_code`` is Kafka's number for the answer."""

    error_code: int = -1  # UNKNOWN_SERVER_ERROR; every subclass names its own

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TopicExists(LogError):
    error_code = LogErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitions(LogError):
    error_code = LogErrorCode.INVALID_PARTITIONS


class InvalidTopic(LogError):
    error_code = LogErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidConfig(LogError):
    error_code = LogErrorCode.INVALID_CONFIG


class UnknownTopicOrPartition(LogError):
    error_code = LogErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class OffsetOutOfRange(LogError):
    error_code = LogErrorCode.OFFSET_OUT_OF_RANGE


class LogStorageError(LogError):
    """Bytes on disk that are no batch where a batch must be (damage after recovery, e.g. bit rot).

    Kafka answers a log it cannot read with KAFKA_STORAGE_ERROR; the data is not served.
    """

    error_code = LogErrorCode.KAFKA_STORAGE_ERROR


class RecordErrors(PeerError):
    """A batch refused for some of its records: ``record_errors`` are (record index, message), what
    Kafka's ``RecordValidationException`` carries into the Produce response's ``record_errors``."""

    def __init__(self, message: str, error_code: int, record_errors: tuple[tuple[int, str], ...]) -> None:
        super().__init__(message, error_code)
        self.record_errors = record_errors
