"""``codec.build``: one version-free answer for every version, and a key no version has is refused
(a typo must not silently send a field's default)."""

from __future__ import annotations

import pytest

from kgroup.model import ErrorCode
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.codec import build, response_class

_JOIN = {
    "throttle_time": 0,  # v2+
    "error_code": ErrorCode.NONE,
    "generation_id": 3,
    "protocol_type": "consumer",  # v7+
    "protocol_name": "range",
    "leader": "m-1",
    "skip_assignment": False,  # v9+
    "member_id": "m-1",
    "members": [{"member_id": "m-1", "group_instance_id": "i-1", "metadata": b"\x00"}],  # instance id v5+
}


@pytest.mark.parametrize("version", [0, 2, 5, 7, 9])
def test_fields_of_other_versions_are_dropped(version: int) -> None:
    cls = response_class(ApiKey.JOIN_GROUP, version)
    assert cls is not None
    built = build(cls, _JOIN)
    assert built.generation_id == 3 and built.member_id == "m-1"
    assert int(built.error_code) == 0
    assert hasattr(built, "throttle_time") == (version >= 2)
    assert hasattr(built.members[0], "group_instance_id") == (version >= 5)


def test_a_key_no_version_has_is_refused() -> None:
    cls = response_class(ApiKey.JOIN_GROUP, 9)
    assert cls is not None
    with pytest.raises(KeyError, match=r"no version of it has field\(s\) throtle_time"):
        build(cls, {**_JOIN, "throtle_time": 5})


def test_a_nested_key_no_version_has_is_refused() -> None:
    cls = response_class(ApiKey.JOIN_GROUP, 0)
    assert cls is not None
    members = [{"member_id": "m-1", "metadata": b"", "group_instanceid": "typo"}]
    with pytest.raises(
        KeyError, match=r"JoinGroupResponseMember: no version of it has field\(s\) group_instanceid"
    ):
        build(cls, {**_JOIN, "members": members})


def test_a_missing_required_field_is_refused() -> None:
    cls = response_class(ApiKey.HEARTBEAT, 0)
    assert cls is not None
    with pytest.raises(KeyError, match="no value for required field 'error_code'"):
        build(cls, {})
