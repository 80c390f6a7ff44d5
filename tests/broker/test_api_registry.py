"""The handler registry is what the broker advertises, and every advertised version is one the codec
reads and writes (a random request of each version survives bytes and back)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from kgroup.broker.dispatch import api_version_ranges, register, registered_versions
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import decode_request, decode_request_header, encode_request, request_class

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))

ADVERTISED = [(key, v) for key, (low, high) in registered_versions().items() for v in range(low, high + 1)]


def test_the_api_versions_answer_is_the_registry() -> None:
    ranges = {r["api_key"]: (r["min_version"], r["max_version"]) for r in api_version_ranges()}
    assert ranges == {int(k): span for k, span in registered_versions().items()}
    # every API kgroup names has a handler, and the broker answers ApiVersions from v0
    assert set(registered_versions()) == set(ApiKey)
    assert registered_versions()[ApiKey.API_VERSIONS][0] == 0
    assert [r["api_key"] for r in api_version_ranges()] == sorted(ranges)


def test_registering_twice_or_a_version_the_codec_lacks_is_refused() -> None:
    async def handler(ctx: object, request: object) -> None:
        return None

    with pytest.raises(ValueError, match="JoinGroup has a handler already"):
        register(ApiKey.JOIN_GROUP, versions=(0, 1))(handler)
    with pytest.raises(ValueError, match="not all known to the codec"):
        register(ApiKey.HEARTBEAT, versions=(0, 99))
    assert registered_versions()[ApiKey.JOIN_GROUP] == (0, 9)  # unchanged


@settings(
    max_examples=len(ADVERTISED) * 3,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_every_advertised_version_round_trips(data: st.DataObject) -> None:
    key, version = data.draw(st.sampled_from(ADVERTISED))
    cls = request_class(key, version)
    assert cls is not None
    request = data.draw(st.from_type(cls))
    frame = encode_request(request, correlation_id=7, client_id="registry")
    header = decode_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        key,
        version,
        7,
        "registry",
    )
    assert decode_request(frame, header).body == request
