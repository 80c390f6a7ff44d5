"""The one API-key enum: its numbers and names are Kafka's (as kio, made from Kafka's schemas, has them)."""

from __future__ import annotations

from kio.schema.index import api_key_map

from kgroup.wire.api_keys import ApiKey, api_name


def test_every_api_key_is_kafkas_number_and_name() -> None:
    for key in ApiKey:
        # kio names the schema packages in snake case: join_group, api_versions, ...
        assert api_key_map[int(key)] == key.name.lower(), key
        assert key.title.lower() == key.name.replace("_", "").lower()


def test_names() -> None:
    assert api_name(11) == "JoinGroup"
    assert api_name(18) == "ApiVersions"
    assert api_name(22) == "InitProducerId"
    assert api_name(68) == "ConsumerGroupHeartbeat"
    assert api_name(57) == "api key 57"
