"""Storage failures reach clients as Kafka's error codes, never as a crash: a failed disk write on
produce and damaged bytes on fetch are KAFKA_STORAGE_ERROR (the failure is injected at the log's edge)."""

from __future__ import annotations

import datetime
from typing import Any
from unittest import mock

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from tests.broker.rawclient import RawClient
from tests.broker.test_idempotence import _batch, _log_end, _produce

from kgroup.log import PartitionLog
from kgroup.log.errors import LogStorageError
from kgroup.testing import KafkaBroker


def _fetch(client: RawClient) -> Any:
    answer = client.request(
        FetchRequest(
            cluster_id=None,
            replica_id=-1,
            max_wait=datetime.timedelta(milliseconds=10),
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=(
                FetchTopic(
                    topic="orders",
                    partitions=(
                        FetchPartition(
                            partition=0,
                            current_leader_epoch=-1,
                            fetch_offset=0,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        )
    )
    return answer.responses[0].partitions[0]


def test_failed_write_and_damaged_read_are_kafka_storage_errors(broker: KafkaBroker) -> None:
    with RawClient(broker.bootstrap_servers) as client:
        with mock.patch.object(PartitionLog, "append", side_effect=OSError(28, "No space left on device")):
            failed = _produce(client, _batch(-1, -1, 2))
        assert failed.error_code == ErrorCode.kafka_storage_error
        ok = _produce(client, _batch(-1, -1, 2))  # the disk is back: the same connection goes on
        assert (ok.error_code, ok.base_offset) == (ErrorCode.none, 0)
        with mock.patch.object(PartitionLog, "read_slice", side_effect=LogStorageError("not a batch at 0")):
            damaged = _fetch(client)
        assert damaged.error_code == ErrorCode.kafka_storage_error
        assert damaged.records in (b"", None)
        healthy = _fetch(client)
        assert healthy.error_code == ErrorCode.none and len(healthy.records) > 0
        assert _log_end(client) == 2
