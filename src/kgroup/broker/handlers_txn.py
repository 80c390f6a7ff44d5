"""The transaction APIs (as 4.4.0's ``KafkaApis`` answers them), on the transaction host
(:mod:`kgroup.broker.txn_host`): InitProducerId (idempotent and transactional producers),
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions, and FindCoordinator's
transaction keys (:func:`transaction_coordinator_of`, called by FindCoordinator's handler).

Each request is translated into :mod:`kgroup.transactions.api`'s version-free requests, handed to the
host, and its answer translated back at the request's version (``error_for_version``: PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH for the clients that predate it). Before the coordinator is asked, the broker's
checks, in KafkaApis' order: the transactional id's ACL (``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``), then
whether this node coordinates the id (``NOT_COORDINATOR``), then whether the host has loaded
(``COORDINATOR_LOAD_IN_PROGRESS``).
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.answer_order import txn_partition_errors_order
from kgroup.broker.cluster import INTERNAL_TOPICS
from kgroup.broker.dispatch import RequestContext, register
from kgroup.broker.logapi import PartitionLogLike
from kgroup.broker.txn_host import TransactionHost, verification_error
from kgroup.log.batch import HEADER_SIZE, parse_header
from kgroup.messages import FindCoordinatorResponse
from kgroup.model import ErrorCode, TopicPartition
from kgroup.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from kgroup.transactions import api
from kgroup.transactions.state import TV_0, TV_2
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.apis.find_coordinator import FoundCoordinator

__all__ = ["transaction_coordinator_of", "verify_transactional_batch"]

#: OPERATION_NOT_ATTEMPTED: a partition left alone because another one of the request failed
OPERATION_NOT_ATTEMPTED = 55


def _host(ctx: RequestContext) -> TransactionHost:
    return ctx.services.transactions


def transaction_coordinator_of(ctx: RequestContext, key: str) -> FoundCoordinator:
    """FindCoordinator for a transactional id (key type 1): the leader of the id's
    ``__transaction_state`` partition; the first such request makes the topic and is answered
    COORDINATOR_NOT_AVAILABLE (the client asks again), as ``KafkaApis.getCoordinator`` does."""
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
        return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    host = _host(ctx)
    if host.ensure_topic():
        return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    node = host.coordinator_node(key)
    address, ports = ctx.services.advertised(ctx.listener)
    if node < 0 or node not in ports:
        return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    return FoundCoordinator(key, FindCoordinatorResponse(ErrorCode.NONE, node, address, ports[node]))


def _precheck(ctx: RequestContext, transactional_id: str) -> ErrorCode:
    """The broker's checks before the coordinator's: the id's WRITE ACL, then its coordinator."""
    if not ctx.authorized(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    host = _host(ctx)
    if host.coordinator_node(transactional_id) != ctx.node_id:
        return ErrorCode.NOT_COORDINATOR
    if not host.loaded:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return ErrorCode.NONE


def _timeout_ms(value: Any) -> int:
    seconds = getattr(value, "total_seconds", None)
    return round(seconds() * 1000) if seconds is not None else int(value)


# --- InitProducerId ---------------------------------------------------------------------------------


@register(ApiKey.INIT_PRODUCER_ID, versions=(0, 5))
async def init_producer_id(ctx: RequestContext, request: Any) -> dict[str, Any]:
    def answer(error: ErrorCode, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
        code = api.error_for_version(api.InitProducerId, ctx.version, error)
        return {"throttle_time": 0, "error_code": code, "producer_id": producer_id, "producer_epoch": epoch}

    transactional_id = request.transactional_id
    if transactional_id is None:
        # KafkaApis: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
        security = ctx.services.security
        if not ctx.authorized(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) and not (
            security.authorize_by_resource_type(
                ctx.principal, ctx.client_host, AclOperation.WRITE, ResourceType.TOPIC
            )
        ):
            return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return answer(ErrorCode.NONE, ctx.services.allocate_producer_id(), 0)
    # KafkaApis: an empty transactional id is an idempotent producer's request (checked by the
    # coordinator: INVALID_REQUEST); the ACL first
    transactional_id = str(transactional_id)
    error = _precheck(ctx, transactional_id) if transactional_id else ErrorCode.NONE
    if error is not ErrorCode.NONE:
        return answer(error)
    producer_id = int(getattr(request, "producer_id", -1))
    producer_epoch = int(getattr(request, "producer_epoch", -1))
    request_ = api.InitProducerId(
        transactional_id, _timeout_ms(request.transaction_timeout), producer_id, producer_epoch
    )
    error, result = await _host(ctx).handle(request_)
    if error is not ErrorCode.NONE:
        return answer(error)
    assert isinstance(result, api.InitProducerIdAnswer)
    return answer(result.error, result.producer_id, result.producer_epoch)


# --- AddPartitionsToTxn ------------------------------------------------------------------------------


def _partition_results(answer: dict[TopicPartition, int] | int, topics: Any) -> list[dict[str, Any]]:
    """An AddPartitionsToTxn transaction's topic results. One code (``int``): every entry of the request
    as it was asked, a partition or topic named twice answered twice, a topic without partitions too
    (``AddPartitionsToTxnRequest.errorResponseForTransaction``). A code per partition: each once,
    grouped by topic in Kafka's maps' order (``resultForTransaction``)."""
    if isinstance(answer, int):
        return [
            {
                "name": t.name,
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": answer} for p in t.partitions
                ],
            }
            for t in topics
        ]
    return [
        {
            "name": topic,
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": answer[TopicPartition(topic, p)]}
                for p in partitions
            ],
        }
        for topic, partitions in txn_partition_errors_order([(tp.topic, tp.partition) for tp in answer])
    ]


async def _add_partitions(
    ctx: RequestContext,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Any,
    *,
    verify_only: bool,
    client_version: int,
) -> dict[TopicPartition, int] | int:
    """``KafkaApis.handleAddPartitionsToTxnRequest`` for one transaction: a code per partition, or one
    code for the whole request as it was asked (see :func:`_partition_results`). A client's request
    (v0-v3) needs WRITE on the transactional id, then on each topic (an internal topic never has it);
    a partition the broker does not know refuses the transaction (the others
    OPERATION_NOT_ATTEMPTED) — all before the coordinator is asked (NOT_COORDINATOR ...)."""
    partitions = tuple(TopicPartition(str(t.name), int(p)) for t in topics for p in t.partitions)
    from_client = ctx.version <= 3
    if from_client and not ctx.authorized(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    refused: dict[TopicPartition, int] = {}
    for tp in partitions:
        if from_client and (
            tp.topic in INTERNAL_TOPICS
            or not ctx.authorized(AclOperation.WRITE, ResourceType.TOPIC, tp.topic)
        ):
            refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            info = ctx.services.cluster.topics.get(tp.topic)
            if info is None or not 0 <= tp.partition < info.partitions:
                refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if refused:
        return {tp: refused.get(tp, OPERATION_NOT_ATTEMPTED) for tp in partitions}
    host = _host(ctx)
    error = ErrorCode.NONE
    if host.coordinator_node(transactional_id) != ctx.node_id:
        error = ErrorCode.NOT_COORDINATOR
    elif not host.loaded:
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    request: api.TxnRequest
    if verify_only:
        request = api.VerifyPartitionsInTxn(transactional_id, producer_id, producer_epoch, partitions)
    else:
        request = api.AddPartitionsToTxn(
            transactional_id, producer_id, producer_epoch, partitions, client_version
        )
    if error is ErrorCode.NONE:
        error, result = await host.handle(request)
    if error is not ErrorCode.NONE:
        # (the coordinator's error: a verification answers it per partition, an addition for the request)
        if verify_only:
            return dict.fromkeys(partitions, int(error))
        return api.error_for_version(api.AddPartitionsToTxn, ctx.version, error)
    assert isinstance(result, api.AddPartitionsToTxnAnswer)
    codes: dict[TopicPartition, int] = {
        tp: api.error_for_version(api.AddPartitionsToTxn, ctx.version, code)
        for tp, code in result.errors.items()
    }
    if verify_only:
        return codes
    # (the coordinator answers an addition with one error for every partition)
    return next(iter(codes.values()), ErrorCode.NONE)


@register(ApiKey.ADD_PARTITIONS_TO_TXN, versions=(0, 5))
async def add_partitions_to_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.version <= 3:  # a client's request: one transaction
        errors = await _add_partitions(
            ctx,
            str(request.v3_and_below_transactional_id),
            int(request.v3_and_below_producer_id),
            int(request.v3_and_below_producer_epoch),
            request.v3_and_below_topics,
            verify_only=False,
            client_version=TV_0,
        )
        return {
            "throttle_time": 0,
            "results_by_topic_v3_and_below": _partition_results(errors, request.v3_and_below_topics),
        }
    # v4+: a broker's batch (KIP-890), which KafkaApis lets only CLUSTER_ACTION on the cluster send
    if not ctx.authorized(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "results_by_transaction": [],
        }
    results = []
    for txn in request.transactions:
        errors = await _add_partitions(
            ctx,
            str(txn.transactional_id),
            int(txn.producer_id),
            int(txn.producer_epoch),
            txn.topics,
            verify_only=bool(txn.verify_only),
            client_version=TV_2,
        )
        results.append(
            {
                "transactional_id": txn.transactional_id,
                "topic_results": _partition_results(errors, txn.topics),
            }
        )
    return {"throttle_time": 0, "error_code": ErrorCode.NONE, "results_by_transaction": results}


# --- AddOffsetsToTxn, EndTxn ---------------------------------------------------------------------------


@register(ApiKey.ADD_OFFSETS_TO_TXN, versions=(0, 4))
async def add_offsets_to_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    transactional_id = str(request.transactional_id)
    error = _precheck(ctx, transactional_id)
    if error is ErrorCode.NONE and not ctx.authorized(
        AclOperation.READ, ResourceType.GROUP, str(request.group_id)
    ):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if error is ErrorCode.NONE:
        error, result = await _host(ctx).handle(
            api.AddOffsetsToTxn(
                transactional_id, int(request.producer_id), int(request.producer_epoch), str(request.group_id)
            )
        )
        if error is ErrorCode.NONE:
            assert isinstance(result, api.AddOffsetsToTxnAnswer)
            error = result.error
    return {"throttle_time": 0, "error_code": api.error_for_version(api.AddOffsetsToTxn, ctx.version, error)}


@register(ApiKey.END_TXN, versions=(0, 5))
async def end_txn(ctx: RequestContext, request: Any) -> dict[str, Any]:
    transactional_id = str(request.transactional_id)
    producer_id, producer_epoch = -1, -1
    error = _precheck(ctx, transactional_id)
    if error is ErrorCode.NONE:
        # TransactionVersion.transactionVersionForEndTxn: v5+ is transactions v2
        client_version = TV_2 if ctx.version > 4 else TV_0
        error, result = await _host(ctx).handle(
            api.EndTxn(
                transactional_id,
                int(request.producer_id),
                int(request.producer_epoch),
                bool(request.committed),
                client_version,
            )
        )
        if error is ErrorCode.NONE:
            assert isinstance(result, api.EndTxnAnswer)
            error, producer_id, producer_epoch = result.error, result.producer_id, result.producer_epoch
    return {
        "throttle_time": 0,
        "error_code": api.error_for_version(api.EndTxn, ctx.version, error),
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
    }


# --- DescribeTransactions, ListTransactions ---------------------------------------------------------


@register(ApiKey.DESCRIBE_TRANSACTIONS, versions=(0, 0))
async def describe_transactions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    host = _host(ctx)
    states = []
    for raw in request.transactional_ids:
        txn_id = str(raw)
        entry: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "transactional_id": txn_id,
            "transaction_state": "",
            # an entry Kafka answers with an error sets nothing else: the fields' defaults, all 0
            "transaction_timeout": 0,
            "transaction_start_time": 0,
            "producer_id": 0,
            "producer_epoch": 0,
            "topics": [],
        }
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):
            entry["error_code"] = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        elif not txn_id:  # (TransactionCoordinator: before the id's partition is looked at)
            entry["error_code"] = ErrorCode.INVALID_REQUEST
        elif host.coordinator_node(txn_id) != ctx.node_id:
            entry["error_code"] = ErrorCode.NOT_COORDINATOR
        else:
            error, result = await host.handle(api.DescribeTransactions((txn_id,)))
            if error is not ErrorCode.NONE:
                entry["error_code"] = error
            else:
                [described] = result
                if described.error is not ErrorCode.NONE:  # e.g. TRANSACTIONAL_ID_NOT_FOUND
                    entry["error_code"] = described.error
                    states.append(entry)
                    continue
                entry.update(
                    error_code=described.error,
                    transaction_state=described.state,
                    transaction_timeout=described.transaction_timeout_ms,
                    transaction_start_time=described.transaction_start_time_ms,
                    producer_id=described.producer_id,
                    producer_epoch=described.producer_epoch,
                    topics=[
                        {"topic": topic, "partitions": list(parts)}
                        for topic, parts in described.topics
                        if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
                    ],
                )
        states.append(entry)
    return {"throttle_time": 0, "transaction_states": states}


@register(ApiKey.LIST_TRANSACTIONS, versions=(0, 2))
async def list_transactions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    host = _host(ctx)
    if not host.loaded:
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            "unknown_state_filters": [],
            "transaction_states": [],
        }
    query = api.ListTransactions(
        tuple(str(s) for s in request.state_filters),
        tuple(int(p) for p in request.producer_id_filters),
        int(getattr(request, "duration_filter", -1)),
        getattr(request, "transactional_id_pattern", None),
    )
    error, result = await host.handle(query)
    if error is not ErrorCode.NONE:
        return {
            "throttle_time": 0,
            "error_code": error,
            "unknown_state_filters": [],
            "transaction_states": [],
        }
    assert isinstance(result, api.ListTransactionsAnswer)
    # the transactions this node coordinates whose ids the principal may describe
    listed = [
        {"transactional_id": t.transactional_id, "producer_id": t.producer_id, "transaction_state": t.state}
        for t in result.transactions
        if host.coordinator_node(t.transactional_id) == ctx.node_id
        and ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactional_id)
    ]
    return {
        "throttle_time": 0,
        "error_code": result.error,
        "unknown_state_filters": list(result.unknown_state_filters),
        "transaction_states": listed,
    }


# --- Produce's transactional batches ----------------------------------------------------------------


async def verify_transactional_batch(
    ctx: RequestContext,
    transactional_id: str | None,
    topic: str,
    partition: int,
    records: bytes | memoryview,
    plog: PartitionLogLike,
) -> int:
    """The error a Produce of ``records`` to ``topic``-``partition`` gets before it reaches the log, for a
    transactional batch (NONE for any other): the request's transactional id and its WRITE ACL
    (TRANSACTIONAL_ID_AUTHORIZATION_FAILED without either); then, for the producer's first batch of a
    transaction on this partition, the coordinator's verification that the partition is in the
    producer's transaction (KIP-890, ``transaction.partition.verification.enable``) — or, from Produce
    v12 (a transactions-v2 producer), the partition added to it. A partition not added is
    INVALID_TXN_STATE (TRANSACTION_ABORTABLE from Produce v11), a fenced producer
    INVALID_PRODUCER_EPOCH, a coordinator that cannot answer now NOT_ENOUGH_REPLICAS (the producer
    retries), as ``AddPartitionsToTxnManager`` maps them."""
    if len(records) < HEADER_SIZE:
        return ErrorCode.NONE  # the log refuses it
    header = parse_header(records)
    if not header.is_transactional:
        return ErrorCode.NONE
    # KafkaApis: transactional records need a transactional id the principal may WRITE
    if transactional_id is None or not ctx.authorized(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not header.has_producer_id:
        return ErrorCode.NONE  # the log refuses it
    if header.producer_id in plog.transactions.ongoing:
        return ErrorCode.NONE
    # from Produce v12 (a transactions-v2 producer) the partition leader adds the partition to the
    # transaction itself (AddPartitionsToTxn v5, KIP-890 part 2)
    error = await _host(ctx).verify_partition(
        api.TransactionalProducer(transactional_id, header.producer_id, header.producer_epoch),
        TopicPartition(topic, partition),
        add=ctx.version > 11,
    )
    if error is ErrorCode.INVALID_PRODUCER_ID_MAPPING:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return int(verification_error(error, abortable=ctx.version >= 11))
