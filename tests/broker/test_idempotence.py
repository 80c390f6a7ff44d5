"""Idempotent producers on the wire: a duplicate batch is acknowledged with its first offsets, not
appended twice; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER."""

from __future__ import annotations

import datetime
import io

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from tests.broker.rawclient import RawClient

from kgroup.testing import KafkaBroker


def _batch(producer_id: int, sequence: int, count: int) -> bytes:
    now = datetime.datetime.now(datetime.UTC)
    records = tuple(
        Record(attributes=0, timestamp=now, offset=i, key=f"k{sequence + i}".encode(), value=b"v", headers=())
        for i in range(count)
    )
    buffer = io.BytesIO()
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=producer_id, producer_epoch=0, base_sequence=sequence, records=records, attributes=0
        ),
    )
    return buffer.getvalue()


def _produce(client: RawClient, records: bytes) -> object:
    answer = client.request(
        ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout=datetime.timedelta(seconds=10),
            topic_data=(
                TopicProduceData(
                    name="orders", partition_data=(PartitionProduceData(index=0, records=records),)
                ),
            ),
        )
    )
    return answer.responses[0].partition_responses[0]


def _log_end(client: RawClient) -> int:
    answer = client.request(
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name="orders",
                    partitions=(
                        ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),
                    ),
                ),
            ),
        )
    )
    return int(answer.topics[0].partitions[0].offset)


def test_duplicate_batch_is_acknowledged_not_appended_and_a_gap_is_refused(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        init = client.request(
            InitProducerIdRequest(
                transactional_id=None,
                transaction_timeout=datetime.timedelta(seconds=60),
                producer_id=-1,
                producer_epoch=-1,
            )
        )
        assert init.error_code == ErrorCode.none
        pid = int(init.producer_id)
        first = _batch(pid, 0, 3)
        a = _produce(client, first)
        b = _produce(client, first)  # a retry of the same batch
        assert (a.error_code, a.base_offset) == (ErrorCode.none, 0)
        assert (b.error_code, b.base_offset) == (ErrorCode.none, 0)
        assert _log_end(client) == 3
        gap = _produce(client, _batch(pid, 10, 1))  # sequences 3..9 never sent
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        assert _log_end(client) == 3
        c = _produce(client, _batch(pid, 3, 2))
        assert (c.error_code, c.base_offset) == (ErrorCode.none, 3)
        assert _log_end(client) == 5
