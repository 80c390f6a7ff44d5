"""`kgroup lag`: Kafka's row order and columns, the table, and bad input as one line."""

from __future__ import annotations

import json
import socket
import time

import pytest

from kgroup.cli import main
from kgroup.cli.lag import format_share_table, format_table
from kgroup.client import lag as lag_requests
from kgroup.client.lag import MemberOwnership, ShareGroupLag, lag_rows, share_lag_rows
from kgroup.model import TopicPartition
from kgroup.testing import KafkaBroker


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def test_rows_follow_kafkas_order_and_lag_rule() -> None:
    members = [
        MemberOwnership("m-small", "c1", "/h1", (tp("b", 0),)),
        MemberOwnership("m-none", "c2", "/h2", ()),
        MemberOwnership("m-big", "c3", "/h3", (tp("b", 1), tp("a", 2), tp("a", 0))),
    ]
    committed = {tp("a", 0): 5, tp("b", 0): 1, tp("z", 0): 7, tp("c", 3): 0}
    ends: dict[TopicPartition, int | None] = {
        tp("a", 0): 9,
        tp("a", 2): 4,
        tp("b", 0): None,  # no leader
        tp("b", 1): 3,
        tp("z", 0): 7,
        tp("c", 3): 2,
    }
    rows = lag_rows(members, committed, ends)
    got = [(r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag, r.consumer_id) for r in rows]
    assert got == [
        # the member owning most first, its partitions by topic and partition
        ("a", 0, 5, 9, 4, "m-big"),
        ("a", 2, None, 4, None, "m-big"),
        ("b", 1, None, 3, None, "m-big"),
        ("b", 0, 1, None, None, "m-small"),
        # committed partitions nobody owns, sorted, no owner; a member owning nothing has no row
        ("c", 3, 0, 2, 2, None),
        ("z", 0, 7, 7, 0, None),
    ]


def test_share_rows_follow_kafkas_order_and_dashes() -> None:
    """kafka-share-groups.sh --describe --offsets: sorted by topic and partition; no start offset:
    every column ``-``; a negative lag or leader epoch (v0 has no lag) ``-``."""
    rows = share_lag_rows(
        [
            ("orders", 1, -1, 0, -1),
            ("audit", 0, 12, 0, 3),
            ("orders", 0, 5, -1, -1),
        ]
    )
    assert [(r.topic, r.partition, r.start_offset, r.leader_epoch, r.lag) for r in rows] == [
        ("audit", 0, 12, 0, 3),
        ("orders", 0, 5, None, None),
        ("orders", 1, None, None, None),
    ]
    data = ShareGroupLag("workers", "Empty", tuple(rows)).to_json()
    assert data["type"] == "share" and data["state"] == "Empty"
    table = format_share_table("workers", data["partitions"]).splitlines()
    assert table == [
        "GROUP           TOPIC           PARTITION  START-OFFSET  LAG",
        "workers         audit           0          12            3",
        "workers         orders          0          5             -",
        "workers         orders          1          -             -",
    ]


def test_table_has_kafkas_columns_and_dashes() -> None:
    rows = [
        {
            "topic": "orders",
            "partition": 0,
            "current_offset": None,
            "log_end_offset": 3,
            "lag": None,
            "consumer_id": None,
            "host": None,
            "client_id": None,
        }
    ]
    lines = format_table("g", rows).splitlines()
    assert lines[0].split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]
    assert lines[1].split() == ["g", "orders", "0", "-", "3", "-", "-", "-", "-"]
    assert lines[0].index("TOPIC") == 16 and lines[0].index("PARTITION") == 32  # Kafka's widths


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["lag", *args])
    out, err = capsys.readouterr()
    code = exit_.value.code
    return (code if isinstance(code, int) else 0), out, err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with KafkaBroker() as kafka:
        cases = [
            (["--bootstrap-servers", "nohost", "--group", "g"], "--bootstrap-servers"),
            (["--bootstrap-servers", f"127.0.0.1:{_free_port()}", "--group", "g"], "cannot reach"),
            (["--bootstrap-servers", kafka.bootstrap_servers], "--group"),
            (["--bootstrap-servers", kafka.bootstrap_servers, "--group", ""], "--group: empty"),
            (["--bootstrap-servers", kafka.bootstrap_servers, "--group", "nobody"], "does not exist"),
            (["--bootstrap-servers", kafka.bootstrap_servers, "--group", "g", "--timeout", "0"], "--timeout"),
        ]
        for args, needle in cases:
            code, out, err = _run(args, capsys)
            assert code == 2, (args, out, err)
            assert err.count("\n") == 1 and err.startswith("kgroup: error: ") and needle in err, (args, err)
            assert "Traceback" not in err and out == ""


def test_two_members_table_and_empty_message(capsys: pytest.CaptureFixture[str]) -> None:
    from confluent_kafka import Consumer

    with KafkaBroker(topics={"orders": 4}) as kafka:
        consumers = []
        for _ in range(2):
            c = Consumer(
                {
                    "bootstrap.servers": kafka.bootstrap_servers,
                    "group.id": "billing",
                    "enable.auto.commit": False,
                    "session.timeout.ms": 10_000,
                    "partition.assignment.strategy": "range",
                }
            )
            c.subscribe(["orders"])
            consumers.append(c)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(len(c.assignment()) != 2 for c in consumers):
            for c in consumers:
                c.poll(0.1)
        assert [len(c.assignment()) for c in consumers] == [2, 2]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            group = kafka.group("billing")
            if group is not None and group.state.kafka_name == "Stable":
                break
            for c in consumers:
                c.poll(0.1)
        code, out, err = _run(["--bootstrap-servers", kafka.bootstrap_servers, "--group", "billing"], capsys)
        assert code == 0, err
        lines = [line.split() for line in out.strip().splitlines()]
        assert lines[0][0] == "GROUP" and len(lines) == 5
        owners = {(row[1], int(row[2])): row[6] for row in lines[1:]}
        member_ids = {c.memberid() for c in consumers}
        assert sorted(owners) == [("orders", p) for p in range(4)] and set(owners.values()) == member_ids
        assert all(
            row[3] == "-" and row[4] == "0" and row[5] == "-" for row in lines[1:]
        )  # nothing committed
        for c in consumers:
            c.close()
        code, out, err = _run(["--bootstrap-servers", kafka.bootstrap_servers, "--group", "billing"], capsys)
        assert code == 0 and out == "" and "Consumer group 'billing' has no active members." in err
        code, out, _ = _run(
            ["--bootstrap-servers", kafka.bootstrap_servers, "--group", "billing", "--json"], capsys
        )
        assert json.loads(out) == {"group": "billing", "state": "Empty", "type": "classic", "partitions": []}


@pytest.mark.parametrize(
    ("api", "make"),
    [
        ("METADATA", lambda v: lag_requests.metadata_request(v)),
        ("DESCRIBE_GROUPS", lambda v: lag_requests.describe_groups_request(v, "g")),
        ("LIST_OFFSETS", lambda v: lag_requests.list_offsets_request(v, {"a": [0, 2], "b": [1]})),
    ],
)
def test_lag_requests_build_for_every_version_the_client_speaks(api: str, make: object) -> None:
    """One description of each request serves every version kgroup's client negotiates (a Kafka 2.x
    broker caps Metadata at v8-v10, whose request has a required field the newer ones lack); each
    version's bytes read back as the same request."""
    from kgroup.client.versions import CLIENT_RANGES
    from kgroup.wire.api_keys import ApiKey
    from kgroup.wire.codec import decode_request, decode_request_header, encode_request

    key = ApiKey[api]
    low, high = CLIENT_RANGES[key]
    for version in range(low, high + 1):
        request = make(version)  # type: ignore[operator]
        assert (int(request.__api_key__), int(request.__version__)) == (key, version)
        frame = encode_request(request, 7)
        header = decode_request_header(frame)
        assert decode_request(frame, header).body == request
