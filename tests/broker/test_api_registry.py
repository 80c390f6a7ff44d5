"""The handler registry is what the broker advertises, and every advertised version is one the codec
reads and writes (a random request of each version survives bytes and back)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records, i64Timedelta

from kgroup.broker.dispatch import api_version_ranges, register, registered_versions
from kgroup.model import PeerError
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import decode_request, decode_request_header, encode_request, request_class

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
#: kio's reader turns an int64 millisecond count into microseconds in an int64: a count beyond this
#: (some 292,000 years) cannot be read back, though kio writes it (see the test at the end)
_KIO_READABLE_MS = (2**63 - 1) // 1000 - 1  # measured: one more is refused, either sign
#: kio's writer goes through float seconds (``round(total_seconds() * 1000)``): a count is written
#: exactly up to 2**51 ms (some 71,000 years); beyond it one may be written a millisecond off
#: (4,480,233,606,194,303 ms was, in a CI run); see the test at the end
_KIO_EXACT_WRITE_MS = 2**51
st.register_type_strategy(
    i64Timedelta,
    st.integers(-_KIO_EXACT_WRITE_MS, _KIO_EXACT_WRITE_MS).map(
        lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)

ADVERTISED = [(key, v) for key, (low, high) in registered_versions().items() for v in range(low, high + 1)]


def test_the_api_versions_answer_is_the_registry() -> None:
    ranges = {r["api_key"]: (r["min_version"], r["max_version"]) for r in api_version_ranges()}
    served = {int(k): span for k, span in registered_versions().items()}
    # one advertised range is wider than what is served, as Kafka 4.4.0's: Produce from v0
    # (KAFKA-18659), though v0-v2 are refused
    assert served[ApiKey.PRODUCE] == (3, 13)
    assert ranges == {**served, ApiKey.PRODUCE: (0, 13)}
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


def test_a_millisecond_count_beyond_kios_reader_is_refused_not_misread() -> None:
    """A known limit (kio's, not Kafka's: Kafka reads any int64): an OffsetCommit v2-v4 whose
    ``retention_time`` exceeds about 292,000 years is refused as malformed (the connection closes),
    never read as another value."""
    cls = request_class(ApiKey.OFFSET_COMMIT, 2)
    assert cls is not None
    beyond = datetime.timedelta(milliseconds=_KIO_READABLE_MS + 1)
    request = cls(
        group_id="g", generation_id_or_member_epoch=-1, member_id="", retention_time=beyond, topics=()
    )
    frame = encode_request(request, correlation_id=1)
    with pytest.raises(PeerError, match="malformed OffsetCommit v2 request"):
        decode_request(frame, decode_request_header(frame))
    within = datetime.timedelta(milliseconds=_KIO_READABLE_MS)
    frame = encode_request(
        cls(group_id="g", generation_id_or_member_epoch=-1, member_id="", retention_time=within, topics=()),
        correlation_id=1,
    )
    assert decode_request(frame, decode_request_header(frame)).body.retention_time == within


def test_the_hand_written_fetch_answer_writes_every_version_the_broker_advertises() -> None:
    from kgroup.wire.fetch_response import VERSIONS

    low, high = registered_versions()[ApiKey.FETCH]
    assert set(range(low, high + 1)) <= set(VERSIONS)


def test_the_hand_written_produce_reader_reads_every_version_the_broker_advertises() -> None:
    from kgroup.wire.produce_request import VERSIONS

    low, high = registered_versions()[ApiKey.PRODUCE]
    assert set(range(low, high + 1)) <= set(VERSIONS)


def test_kios_writer_is_exact_up_to_two_to_the_51_milliseconds() -> None:
    """Another known limit, kio's writer: a retention time is written through float seconds, exact
    within 2**51 ms either sign, and a millisecond off for some counts beyond it (Kafka's clients
    write any int64 exactly; kgroup's client writes -1)."""
    cls = request_class(ApiKey.OFFSET_COMMIT, 2)
    assert cls is not None

    def written(ms: int) -> datetime.timedelta:
        request = cls(
            group_id="g",
            generation_id_or_member_epoch=-1,
            member_id="",
            retention_time=datetime.timedelta(milliseconds=ms),
            topics=(),
        )
        frame = encode_request(request, correlation_id=1)
        return decode_request(frame, decode_request_header(frame)).body.retention_time

    for ms in (_KIO_EXACT_WRITE_MS, -_KIO_EXACT_WRITE_MS, _KIO_EXACT_WRITE_MS - 1, -1, 0):
        assert written(ms) == datetime.timedelta(milliseconds=ms)
    beyond = 4_480_233_606_194_303
    assert written(beyond) == datetime.timedelta(milliseconds=beyond - 1)
