"""The Fetch answer as a client reads it: stored batches of 64 KiB and more go out from their segment
file (sendfile on a plain socket, read into the TLS transport), around the fields written by hand
(kgroup.wire.fetch_response): every version decodes with kio to exactly the stored bytes, on a plain
connection, for a client whose socket fills up before it reads, and over TLS."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.broker.rawclient import RawClient
from tests.log.batches import decode, kio_batch

from kgroup.security.testca import CaFiles, make_test_ca
from kgroup.testing import KafkaBroker
from kgroup.wire.codec import build, decode_response, encode_request, request_class, response_class
from kgroup.wire.fetch_response import VERSIONS
from kgroup.wire.framing import framed, read_frame_blocking

BATCHES = 4
RECORDS = 300  # of 1,000 bytes: about 300 KiB a batch, sent from the file


def _fetch(version: int, *, offset: int = 0, partition_max_bytes: int = 1 << 20, topic_id: Any = None) -> Any:
    return build(
        request_class(1, version),
        {
            "cluster_id": None,
            "replica_id": -1,
            "max_wait": 0,
            "min_bytes": 1,
            "max_bytes": 50 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": "big",
                    "topic_id": topic_id,  # (v13+ name the topic by id)
                    "partitions": [
                        {
                            "partition": 0,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "last_fetched_epoch": -1,
                            "log_start_offset": -1,
                            "partition_max_bytes": partition_max_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )


def _produce(client: RawClient) -> None:
    for n in range(BATCHES):
        request = build(
            request_class(0, 9),
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 30_000,
                "topic_data": [
                    {
                        "name": "big",
                        "partition_data": [{"index": 0, "records": kio_batch([bytes([n]) * 1000] * RECORDS)}],
                    }
                ],
            },
        )
        answer = client.request(request)
        assert int(answer.responses[0].partition_responses[0].error_code) == 0


def _stored(kafka: KafkaBroker, offset: int, max_bytes: int) -> bytes:
    async def read() -> bytes:
        return bytes(kafka.broker.logs.partition("big", 0).read(offset, max_bytes))

    return kafka.run_in_loop(read())


def _records(answer: Any) -> bytes:
    return bytes(answer.responses[0].partitions[0].records)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CaFiles:
    return make_test_ca(Path(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module")
def kafka(ca: CaFiles) -> Iterator[KafkaBroker]:
    with KafkaBroker(
        topics={"big": 1},
        listeners=["PLAINTEXT://127.0.0.1:0", "SSL://127.0.0.1:0"],
        ssl_certfile=ca.server_cert,
        ssl_keyfile=ca.server_key,
    ) as broker:
        with RawClient(broker.listener_bootstrap_servers("PLAINTEXT")) as client:
            _produce(client)
        yield broker


@pytest.mark.parametrize("version", list(VERSIONS))
def test_every_version_reads_the_stored_batches(kafka: KafkaBroker, version: int) -> None:
    topic_id = kafka.broker.cluster.topics["big"].topic_id
    with RawClient(kafka.listener_bootstrap_servers("PLAINTEXT")) as client:
        for offset, max_bytes in ((0, 1 << 20), (RECORDS, 1), (RECORDS * 2 + 5, 10 << 20)):
            answer = client.request(
                _fetch(version, offset=offset, partition_max_bytes=max_bytes, topic_id=topic_id)
            )
            records = _records(answer)
            assert records == _stored(kafka, offset, max_bytes)
            assert len(records) > 64 * 1024  # large enough to go out from the file
            assert decode(records)[0][0] == offset - offset % RECORDS


def test_a_client_that_reads_late_gets_the_whole_answer(kafka: KafkaBroker) -> None:
    """Its socket fills before the answer is out: the rest waits in the transport (read from the
    file) and follows when the client reads; the next request is answered after it."""
    host, _, port = kafka.listener_bootstrap_servers("PLAINTEXT").rpartition(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect((host, int(port)))
    with sock:
        for correlation in (1, 2):
            sock.sendall(framed(encode_request(_fetch(12, partition_max_bytes=10 << 20), correlation)))
        time.sleep(0.5)  # not a timing assertion: the broker's sends meet a full socket meanwhile
        for correlation in (1, 2):
            got, answer = decode_response(read_frame_blocking(sock.recv), response_class(1, 12))
            assert got == correlation
            assert _records(answer) == _stored(kafka, 0, 10 << 20)
            assert len(_records(answer)) > 1 << 20


def test_a_tls_client_reads_the_stored_batches(kafka: KafkaBroker, ca: CaFiles) -> None:
    host, _, port = kafka.listener_bootstrap_servers("SSL").rpartition(":")
    context = ssl.create_default_context(cafile=str(ca.ca_cert))
    with (
        socket.create_connection((host, int(port)), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname=host) as sock,
    ):
        for correlation, version in enumerate((4, 12), start=1):
            request = _fetch(version, partition_max_bytes=10 << 20)
            sock.sendall(framed(encode_request(request, correlation)))
            got, answer = decode_response(read_frame_blocking(sock.recv), response_class(1, version))
            assert got == correlation
            assert _records(answer) == _stored(kafka, 0, 10 << 20)


def test_the_answer_size_prefix_counts_every_piece(kafka: KafkaBroker) -> None:
    """The frame's size is the bytes that follow, file regions included: a reader that trusts it
    ends exactly where the next answer starts."""
    with RawClient(kafka.listener_bootstrap_servers("PLAINTEXT")) as client:
        client.send_bytes(b"".join(framed(encode_request(_fetch(11), n)) for n in (7, 8)))
        for correlation in (7, 8):
            got, answer = decode_response(client.read_frame(), response_class(1, 11))
            assert got == correlation and _records(answer) == _stored(kafka, 0, 1 << 20)
