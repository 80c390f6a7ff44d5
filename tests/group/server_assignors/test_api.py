"""The server-assignor interface: Kafka's Uuid, the registry, the subscription type, edge cases."""

from __future__ import annotations

import pytest

from kgroup.group.assignors import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    RangeAssignor,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    UniformAssignor,
    available_server_assignors,
    create_server_assignor,
    group_spec,
    subscription_type,
)
from kgroup.model import KgroupError


def test_topic_id_round_trips_kafkas_base64_and_hashes_as_java() -> None:
    # hashCode values printed by org.apache.kafka.common.Uuid on JDK 17
    for text, java_hash in (("MCe7oVmBP8qMdJvkABCP7A", -440233885), ("oZaHxh4FMAigeTwUFnRwgg", 161413976)):
        topic = TopicId.from_string(text)
        assert str(topic) == text
        assert topic.java_hash == java_hash
        assert TopicId.from_int(topic.to_int()) == topic


def test_topic_ids_order_as_uuid_compare_to_with_signed_halves() -> None:
    negative = TopicId.from_int(1 << 127)  # most significant bit set: a negative msb
    assert negative.msb < 0
    assert sorted([TopicId(1, 0), negative, TopicId(0, -1), TopicId(0, 5)]) == [
        negative,
        TopicId(0, -1),
        TopicId(0, 5),
        TopicId(1, 0),
    ]


def test_bad_base64_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        TopicId.from_string("AAAA")


def test_registry_names_and_unknown_name() -> None:
    assert available_server_assignors()[:2] == ["range", "uniform"]
    assert isinstance(create_server_assignor("uniform"), UniformAssignor)
    assert isinstance(create_server_assignor("range"), RangeAssignor)
    with pytest.raises(KgroupError, match="unknown server assignor 'sticky'; use one of: range, uniform"):
        create_server_assignor("sticky")


def test_subscription_type_is_modern_groups_rule() -> None:
    assert subscription_type([]) is SubscriptionType.HOMOGENEOUS
    assert subscription_type([{"a", "b"}, {"b", "a"}]) is SubscriptionType.HOMOGENEOUS
    assert subscription_type([{"a"}, set()]) is SubscriptionType.HETEROGENEOUS
    assert subscription_type([set(), set()]) is SubscriptionType.HOMOGENEOUS


T1 = TopicId(0, 1)


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_an_empty_group_gets_nothing(name: str) -> None:
    spec = GroupSpec({}, SubscriptionType.HOMOGENEOUS)
    assert create_server_assignor(name).assign(spec, TopicDescriber({T1: 3})) == {}


@pytest.mark.parametrize("name", ["uniform", "range"])
@pytest.mark.parametrize("kind", list(SubscriptionType))
def test_an_unknown_topic_is_kafkas_partition_assignor_error(name: str, kind: SubscriptionType) -> None:
    spec = group_spec([("m1", MemberSpec((T1,))), ("m2", MemberSpec((T1,)))], kind)
    with pytest.raises(PartitionAssignorError):
        create_server_assignor(name).assign(spec, TopicDescriber({}))


def test_uniform_homogeneous_fresh_group_gives_the_extra_partitions_to_the_last_members() -> None:
    spec = group_spec([(f"m{i}", MemberSpec((T1,))) for i in range(3)])
    result = create_server_assignor("uniform").assign(spec, TopicDescriber({T1: 4}))
    sizes = [len(result[m][T1]) for m in spec.members]
    assert sizes == [1, 1, 2]
