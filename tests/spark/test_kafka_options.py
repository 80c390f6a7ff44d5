"""The data source's options and offset planning without Spark: Spark's Kafka rules, kgroup's errors
(one line naming the option and the fix), maxOffsetsPerTrigger's sharing and minPartitions' split."""

from __future__ import annotations

import pytest

from kgroup.model import KgroupError
from kgroup.model import TopicPartition as TP
from kgroup.spark.source.offsets import offsets_to_json
from kgroup.spark.source.options import (
    OffsetSpec,
    ReadKind,
    check_read_options_early,
    parse_sink_options,
    parse_source_options,
)
from kgroup.spark.source.ranges import OffsetRange, plan_ranges, rate_limit, resolve_offsets, split_ranges

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def _source(streaming: bool = False, **options: str) -> object:
    return parse_source_options({**BOOT, **options}, ReadKind.STREAM if streaming else ReadKind.BATCH)


@pytest.mark.parametrize(
    ("options", "streaming", "message"),
    [
        ({"subscribe": "a", "assign": '{"a":[0]}'}, False, "assign, subscribe: only one of the options"),
        ({}, False, "subscribe: no topics given"),
        ({"subscribe": " , "}, False, "subscribe: no topics to subscribe to"),
        ({"assign": "a:0"}, False, "assign: no topic partitions to assign"),
        ({"subscribePattern": "("}, False, "subscribePattern: '(' is not a regular expression"),
        ({"subscribe": "a", "subscrib": "b"}, False, "did you mean 'subscribe'?"),
        ({"subscribe": "a", "startingTimestamp": "5"}, False, "startingTimestamp: an option of Spark's"),
        ({"subscribe": "a", "consume": "group"}, True, "kafka.group.id: consume=group needs"),
        (
            {"subscribe": "a", "consume": "group", "kafka.group.id": "g"},
            False,
            "consume: group is for streaming reads",
        ),
        (
            {"subscribe": "a", "consume": "group", "kafka.group.id": "g", "groupMembers": "101"},
            True,
            "groupMembers: 101",
        ),
        ({"subscribe": "a", "consume": "members"}, False, "consume: 'members'; give partition"),
        (
            {"subscribe": "a", "startingOffsets": "latest"},
            False,
            "startingOffsets: can't be latest for batch",
        ),
        ({"subscribe": "a", "endingOffsets": "earliest"}, False, "endingOffsets: can't be earliest"),
        ({"subscribe": "a", "endingOffsets": "latest"}, True, "endingOffsets: not valid in streaming"),
        ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, False, "a-0 can't be latest (-1)"),
        ({"subscribe": "a", "startingOffsets": '{"b":{"0":1}}'}, False, "JSON offsets name topics ['b']"),
        ({"assign": '{"a":[0,1]}', "startingOffsets": '{"a":{"0":1}}'}, False, "must name every assigned"),
        (
            {"assign": '{"a":[0]}', "startingOffsets": '{"a":{"0":9}}', "endingOffsets": '{"a":{"0":5}}'},
            False,
            "a-0 starts at 9, after its endingOffsets 5",
        ),
        ({"subscribe": "a", "startingOffsets": "{x"}, True, "startingOffsets: not valid JSON"),
        ({"subscribe": "a", "startingOffsets": "first"}, True, "startingOffsets: 'first'; give earliest"),
        ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "maxOffsetsPerTrigger: 0 must be positive"),
        ({"subscribe": "a", "minPartitions": "x"}, False, "minPartitions: 'x' is not a whole number"),
        ({"subscribe": "a", "failOnDataLoss": "yes"}, False, "failOnDataLoss: 'yes' is not a boolean"),
        (
            {"subscribe": "a", "kafka.auto.offset.reset": "earliest"},
            True,
            "set the source option 'startingOffsets'",
        ),
        (
            {"subscribe": "a", "kafka.enable.auto.commit": "true"},
            True,
            "kafka.enable.auto.commit: not supported",
        ),
    ],
)
def test_bad_source_options_name_the_option_and_the_fix(
    options: dict[str, str], streaming: bool, message: str
) -> None:
    with pytest.raises(KgroupError) as caught:
        _source(streaming, **options)
    assert message in caught.value.message
    assert "\n" not in caught.value.message


def test_bootstrap_servers_required_and_options_case_insensitive() -> None:
    with pytest.raises(KgroupError, match=r"kafka\.bootstrap\.servers: must be set"):
        parse_source_options({"subscribe": "a"}, ReadKind.BATCH)
    parsed = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SUBSCRIBE": "a, b,a",
            "MaxOffsetsPerTrigger": "7",
            "kafka.client.id": "c",
        },
        ReadKind.STREAM,
    )
    assert parsed.subscription.topics == ("a", "b")
    assert parsed.max_offsets_per_trigger == 7
    assert parsed.starting == OffsetSpec("latest")  # streaming default; batch's is earliest
    assert parsed.client_dict() == {"bootstrap.servers": "h:1", "client.id": "c"}
    assert parse_source_options({**BOOT, "subscribe": "a"}, ReadKind.BATCH).starting == OffsetSpec(
        "earliest"
    )


def test_early_check_only_judges_reads() -> None:
    check_read_options_early({**BOOT, "topic": "t"})  # a write's options: not judged here
    with pytest.raises(KgroupError, match="only one of the options"):
        check_read_options_early({**BOOT, "subscribe": "a", "subscribePattern": "a.*"})


def test_sink_options() -> None:
    parsed = parse_sink_options(
        {**BOOT, "topic": " t ", "nullKeyStrategy": "round-robin", "nullKeySeed": "3"}
    )
    assert (parsed.topic, parsed.null_key_strategy, parsed.null_key_seed) == ("t", "round-robin", 3)
    with pytest.raises(
        KgroupError, match="'topics' is not an option of the kgroup sink; did you mean 'topic'"
    ):
        parse_sink_options({**BOOT, "topics": "t"})
    with pytest.raises(KgroupError, match=r"kafka\.key\.serializer: not supported"):
        parse_sink_options({**BOOT, "kafka.key.serializer": "x"})


def test_rate_limit_shares_as_spark_does() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 0, TP("t", 2): 10}
    until = {TP("t", 0): 1000, TP("t", 1): 2, TP("t", 2): 10}
    # 300 over a backlog of 1002: partition 0 gets floor(299.4), partition 1 ceil(0.6) -> not starved
    assert rate_limit(300, start, until) == {TP("t", 0): 299, TP("t", 1): 1, TP("t", 2): 10}
    until[TP("t", 1)] = 10  # a share of 2.97 is rounded down
    assert rate_limit(300, start, until)[TP("t", 1)] == 2
    assert rate_limit(300, until, until) == until  # nothing new: the end stays
    one_each = {TP("t", 0): 1, TP("t", 1): 1}
    assert rate_limit(5, {TP("t", 0): 0, TP("t", 1): 0}, one_each) == one_each


def test_split_ranges_as_spark_does() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 0, 300)]
    assert split_ranges(ranges, None) == [ranges[0], ranges[2]]  # empty ranges dropped
    assert split_ranges(ranges, 2) == [ranges[0], ranges[2]]
    # 8 pieces: round(100/400*8) = 2 and round(300/400*8) = 6; the last piece takes the remainder
    pieces = split_ranges(ranges, 8)
    assert [(p.partition, p.from_offset, p.until_offset) for p in pieces] == [
        (0, 0, 50), (0, 50, 100),
        (2, 0, 50), (2, 50, 100), (2, 100, 150), (2, 150, 200), (2, 200, 250), (2, 250, 300),
    ]  # fmt: skip
    # Scala's round: half rounds up (2.5 -> 3 pieces)
    assert len(split_ranges([OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 0, 10)], 5)) == 6


def test_resolve_and_plan_report_data_loss() -> None:
    losses: list[str] = []
    tps = [TP("t", 0), TP("t", 1)]
    earliest, latest = {TP("t", 0): 5, TP("t", 1): 0}, {TP("t", 0): 50, TP("t", 1): 20}
    spec = OffsetSpec("specific", ((TP("t", 0), 2), (TP("t", 1), -1)))
    assert resolve_offsets("startingOffsets", spec, tps, earliest, latest, losses.append) == {
        TP("t", 0): 5,
        TP("t", 1): 20,
    }
    assert losses and "startingOffsets for t-0 was 2 but the earliest offset kept is 5" in losses[0]
    with pytest.raises(
        KgroupError, match=r"offset 99 of t-1 is out of range \(the partition holds offsets 0 to 20\)"
    ):
        resolve_offsets(
            "startingOffsets",
            OffsetSpec("specific", ((TP("t", 0), 5), (TP("t", 1), 99))),
            tps,
            earliest,
            latest,
            print,
        )
    losses.clear()
    ranges = plan_ranges(
        {TP("t", 0): 10, TP("t", 9): 3}, {TP("t", 0): 8, TP("t", 1): 4}, {TP("t", 1): 2}, losses.append
    )
    assert ranges == [OffsetRange("t", 1, 2, 4)]
    assert [m.split(" ")[0:2] for m in losses] == [
        ["partitions", "[t-9]"],
        ["partition", "t-0's"],
        ["added", "partition"],
    ]
    assert offsets_to_json({TP("b", 1): 3, TP("a", 10): 1, TP("a", 2): 0}) == {
        "a": {"2": 0, "10": 1},
        "b": {"1": 3},
    }


def test_a_property_librdkafka_refuses_is_named() -> None:
    from confluent_kafka import Consumer

    from kgroup.spark.source.options import check_client_config

    config = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "no.such.property": "1"}
    with pytest.raises(KgroupError, match=r"^kafka\.no\.such\.property: the Kafka client refused it"):
        check_client_config(config, Consumer)
    with pytest.raises(KgroupError, match=r"^kafka\.fetch\.max\.bytes: the Kafka client refused it"):
        check_client_config(
            {"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "fetch.max.bytes": "lots"}, Consumer
        )


def test_a_read_is_parsed_as_batch_or_stream_only() -> None:
    """``ReadKind.NOT_YET_KNOWN`` is the ``load()``-time check's alone; a read is parsed as one of
    the two, and the partitions it names are Kafka's ``TopicPartition``."""
    with pytest.raises(ValueError, match=r"ReadKind\.BATCH or ReadKind\.STREAM"):
        parse_source_options({**BOOT, "subscribe": "a"}, ReadKind.NOT_YET_KNOWN)
    parsed = parse_source_options({**BOOT, "assign": '{"a":[1,0]}'}, ReadKind.BATCH)
    assert parsed.subscription.partitions == (TP("a", 0), TP("a", 1))
    assert all(type(tp) is TP for tp in parsed.subscription.partitions)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"startingOffsets": "latest"},
            "startingOffsets: can't be latest for batch queries; use earliest or JSON offsets",
        ),
        (
            {"startingOffsets": '{"a":{"0":-1}}'},
            "startingOffsets: a-0 can't be latest (-1) for batch queries; give an offset or -2 (earliest)",
        ),
        (
            {"endingOffsets": "earliest"},
            "endingOffsets: can't be earliest for batch queries; use latest or JSON offsets",
        ),
        (
            {"endingOffsets": '{"a":{"0":-2}}'},
            "endingOffsets: a-0 can't be earliest (-2) for batch queries; give an offset or -1 (latest)",
        ),
    ],
)
def test_a_batch_query_refuses_a_latest_start_and_an_earliest_end(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(KgroupError) as caught:
        _source(False, subscribe="a", **options)
    assert caught.value.message == message
