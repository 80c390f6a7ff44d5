"""Kafka 4.4.0's own Java clients speak their newest versions to ``kgroup serve``: the versions the
broker receives from a Java producer, a Java consumer of each group protocol (fetching, committing,
reading its commits back) are the highest both sides support — which, now that kgroup serves every
version Kafka 4.4.0 serves, are the top of kgroup's ranges (Produce v13 and Fetch v18 by topic id,
OffsetCommit and OffsetFetch v10 by topic id, Metadata v13, ApiVersions v5 …).

The broker runs in this process (``KafkaBroker``), so the test records every request header it decodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgroup.broker import dispatch
from kgroup.broker.dispatch import registered_versions
from kgroup.testing import KafkaBroker
from kgroup.testing.apache_kafka import require_apache_kafka
from kgroup.testing.apache_kafka.java_client import JavaConsumer, JavaProducer, start_all
from kgroup.wire.api_keys import ApiKey, api_name

pytestmark = [pytest.mark.apache_kafka, pytest.mark.slow]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[int, set[int]]]:
    """api key -> the versions the broker decoded requests at."""
    versions: dict[int, set[int]] = {}
    decode = dispatch.decode_request

    def recording(frame: Any, header: Any, **kwargs: Any) -> Any:
        versions.setdefault(header.api_key, set()).add(header.api_version)
        return decode(frame, header, **kwargs)

    monkeypatch.setattr(dispatch, "decode_request", recording)
    yield versions


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_clients_speak_their_newest_versions(
    seen: dict[int, set[int]], protocol: str, tmp_path: Path
) -> None:
    require_apache_kafka()
    with KafkaBroker(topics={"orders": 3}) as kafka:
        producer = JavaProducer(kafka.bootstrap_servers, name="producer", log_dir=tmp_path)
        consumer = JavaConsumer(
            kafka.bootstrap_servers,
            f"readers-{protocol}",
            ["orders"],
            config={"group.protocol": protocol},
            name="reader",
            log_dir=tmp_path,
        )
        start_all(producer, consumer)
        with producer, consumer:
            sent = producer.send_records("orders", [(f"k{i}", f"v{i}") for i in range(30)])
            assert len(consumer.wait_records(len(sent))) == len(sent)
            consumer.commit()
            consumer.committed()
    top = {key: high for key, (_low, high) in registered_versions().items()}
    spoken = {api_name(key): max(versions) for key, versions in seen.items()}
    expected = [ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.FIND_COORDINATOR]
    expected += [ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH]
    expected += (
        [ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP] if protocol == "classic" else [ApiKey.CONSUMER_GROUP_HEARTBEAT]
    )
    want = {api.title: top[api] for api in expected}
    if protocol == "classic":
        # Kafka's classic consumer (ConsumerCoordinator) names its commits' topics, so it asks for
        # OffsetCommit and OffsetFetch up to v9 (``Builder.forTopicNames``) from any broker; the
        # consumer protocol's (CommitRequestManager) uses topic ids and v10
        want.update({ApiKey.OFFSET_COMMIT.title: 9, ApiKey.OFFSET_FETCH.title: 9})
    assert (
        want["Produce"] == 13 and want["Fetch"] == 18 and want["Metadata"] == 13 and want["ApiVersions"] == 5
    )
    assert {api.title: spoken.get(api.title) for api in expected} == want
