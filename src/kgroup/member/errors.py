"""How Kafka's client names and classes the errors the member sees, and the reasons it sends.

Kafka's ``joinGroupIfNeeded`` asks for a rejoin after a failed join with the *simple name of the
exception* the answer raised (``"rebalance failed due to RebalanceInProgressException"``), and the
JoinGroup carries that reason to the coordinator; whether the member retries (and how) depends on
whether the exception is a ``RetriableException``. :data:`EXCEPTION_NAME` and :data:`RETRIABLE` are
Kafka 4.0's ``Errors`` table for the codes kgroup knows.
"""

from __future__ import annotations

from kgroup.model import ErrorCode

__all__ = [
    "DISCONNECT",
    "EXCEPTION_NAME",
    "KAFKA_EXCEPTION",
    "MAX_REASON_LENGTH",
    "RETRIABLE",
    "SYNC_GROUP_ERRORS",
    "exception_name",
    "rebalance_failed",
    "truncate_reason",
]

#: what ``Errors.forCode(code).exception()`` is, by simple name
EXCEPTION_NAME: dict[ErrorCode, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
    ErrorCode.OFFSET_OUT_OF_RANGE: "OffsetOutOfRangeException",
    ErrorCode.CORRUPT_MESSAGE: "CorruptRecordException",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "UnknownTopicOrPartitionException",
    ErrorCode.INVALID_FETCH_SIZE: "InvalidFetchSizeException",
    ErrorCode.LEADER_NOT_AVAILABLE: "LeaderNotAvailableException",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "NotLeaderOrFollowerException",
    ErrorCode.REQUEST_TIMED_OUT: "TimeoutException",
    ErrorCode.MESSAGE_TOO_LARGE: "RecordTooLargeException",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "OffsetMetadataTooLarge",
    ErrorCode.NETWORK_EXCEPTION: "NetworkException",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "CoordinatorLoadInProgressException",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "CoordinatorNotAvailableException",
    ErrorCode.NOT_COORDINATOR: "NotCoordinatorException",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "InvalidTopicException",
    ErrorCode.ILLEGAL_GENERATION: "IllegalGenerationException",
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: "InconsistentGroupProtocolException",
    ErrorCode.INVALID_GROUP_ID: "InvalidGroupIdException",
    ErrorCode.UNKNOWN_MEMBER_ID: "UnknownMemberIdException",
    ErrorCode.INVALID_SESSION_TIMEOUT: "InvalidSessionTimeoutException",
    ErrorCode.REBALANCE_IN_PROGRESS: "RebalanceInProgressException",
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: "InvalidCommitOffsetSizeException",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
    ErrorCode.UNSUPPORTED_VERSION: "UnsupportedVersionException",
    ErrorCode.TOPIC_ALREADY_EXISTS: "TopicExistsException",
    ErrorCode.INVALID_PARTITIONS: "InvalidPartitionsException",
    ErrorCode.INVALID_REPLICATION_FACTOR: "InvalidReplicationFactorException",
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: "InvalidReplicaAssignmentException",
    ErrorCode.INVALID_REQUEST: "InvalidRequestException",
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.GROUP_ID_NOT_FOUND: "GroupIdNotFoundException",
    ErrorCode.MEMBER_ID_REQUIRED: "MemberIdRequiredException",
    ErrorCode.GROUP_MAX_SIZE_REACHED: "GroupMaxSizeReachedException",
    ErrorCode.FENCED_INSTANCE_ID: "FencedInstanceIdException",
    ErrorCode.UNSTABLE_OFFSET_COMMIT: "UnstableOffsetCommitException",
    ErrorCode.FENCED_MEMBER_EPOCH: "FencedMemberEpochException",
    ErrorCode.UNRELEASED_INSTANCE_ID: "UnreleasedInstanceIdException",
    ErrorCode.UNSUPPORTED_ASSIGNOR: "UnsupportedAssignorException",
    ErrorCode.STALE_MEMBER_EPOCH: "StaleMemberEpochException",
    ErrorCode.NOT_ENOUGH_REPLICAS: "NotEnoughReplicasException",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: "NotEnoughReplicasAfterAppendException",
    ErrorCode.KAFKA_STORAGE_ERROR: "KafkaStorageException",
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: "FetchSessionIdNotFoundException",
    ErrorCode.FENCED_LEADER_EPOCH: "FencedLeaderEpochException",
    ErrorCode.UNKNOWN_LEADER_EPOCH: "UnknownLeaderEpochException",
    ErrorCode.UNKNOWN_TOPIC_ID: "UnknownTopicIdException",
}

#: every code kgroup knows whose exception is a ``RetriableException`` (directly or through
#: ``InvalidMetadataException``): what Kafka's consumer and producer (the ``Sender``'s ``canRetry``)
#: retry, and so do kgroup's member and the Spark sink's producer
RETRIABLE = frozenset(
    {
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)

#: the errors ``SyncGroupResponseHandler`` fails the join with as themselves (any other: KafkaException)
SYNC_GROUP_ERRORS = frozenset(
    {
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    }
)

#: a request that failed without an answer (timeout, disconnect, coordinator marked unknown)
DISCONNECT = "DisconnectException"
#: what the response handlers raise for an error they do not expect
KAFKA_EXCEPTION = "KafkaException"

#: ``JoinGroupRequest.maybeTruncateReason``: reasons longer than this are cut
MAX_REASON_LENGTH = 255


def exception_name(error: ErrorCode) -> str:
    return EXCEPTION_NAME.get(error, KAFKA_EXCEPTION)


def rebalance_failed(exception: str) -> str:
    """The short reason ``joinGroupIfNeeded`` requests a rejoin with after a failed join."""
    return f"rebalance failed due to {exception}"


def truncate_reason(reason: str) -> str:
    """``JoinGroupRequest.maybeTruncateReason``: at most 255 characters, counted as Java counts them
    (UTF-16 units). A surrogate pair cut in half leaves a lone surrogate, which Java's UTF-8 encoder
    sends as ``?``."""
    if len(reason) <= MAX_REASON_LENGTH // 2:
        return reason  # the common case: short enough whatever the characters
    units = reason.encode("utf-16-le", "surrogatepass")
    if len(units) <= 2 * MAX_REASON_LENGTH:
        return reason
    cut = units[: 2 * MAX_REASON_LENGTH].decode("utf-16-le", "surrogatepass")
    if "\ud800" <= cut[-1] <= "\udfff":
        cut = cut[:-1] + "?"
    return cut
