"""``__share_group_state``'s records as bytes, checked against the bytes Kafka 4.4.0's own classes write
(``share_state_records.txt``, printed by ``ShareStateRecords.java`` against the 4.4.0 jars)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.model import PeerError
from kgroup.share import PersisterStateBatch, ShareKey, ShareSnapshot, ShareStateRecord, ShareUpdate
from kgroup.share.codec import decode_share_record, encode_share_record

KAFKA = {
    name: (bytes.fromhex(key), bytes.fromhex(value))
    for name, key, value in (
        line.split("\t")
        for line in (Path(__file__).parent / "share_state_records.txt").read_text().splitlines()
    )
}
TOPIC = "mUQ0Mkg0S6uUSe3pNnvU2A"
ORDERS = ShareKey("orders", TOPIC, 3)

RECORDS: dict[str, ShareStateRecord] = {
    "snapshot": ShareSnapshot(
        ORDERS,
        snapshot_epoch=2,
        state_epoch=1,
        leader_epoch=7,
        start_offset=100,
        delivery_complete_count=4,
        create_timestamp=1700000000000,
        write_timestamp=1700000000123,
        batches=(
            PersisterStateBatch(100, 103, 2, 1),
            PersisterStateBatch(104, 110, 0, 3),
            PersisterStateBatch(111, 111, 4, 5),
        ),
    ),
    "snapshot-empty": ShareSnapshot(ShareKey("g", TOPIC, 0), 0, 0, 0, -1, -1, 0, 0, ()),
    "update": ShareUpdate(ORDERS, 2, 7, -1, 0, (PersisterStateBatch(112, 115, 0, 1),)),
    "update-no-count": ShareUpdate(ShareKey("组", TOPIC, 2147483647), 0, -1, 5, -1, ()),
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_bytes_are_kafkas(name: str) -> None:
    assert encode_share_record(RECORDS[name]) == KAFKA[name]
    assert decode_share_record(*KAFKA[name]) == RECORDS[name]


def test_tombstone() -> None:
    key, _ = KAFKA["update"]
    assert decode_share_record(key, None) == (ORDERS, None)


@pytest.mark.parametrize(
    ("key", "value", "what"),
    [
        (KAFKA["update"][0][:-1], KAFKA["update"][1], "ends early"),
        (b"\x00\x05" + KAFKA["update"][0][2:], KAFKA["update"][1], "unknown record type"),
        (KAFKA["update"][0], KAFKA["update"][1] + b"\x00", "bytes after the end"),
        (KAFKA["update"][0], b"\x00\x01" + KAFKA["update"][1][2:], "unsupported version"),
        (KAFKA["snapshot"][0], KAFKA["snapshot"][1][:20], "ends early"),
        (KAFKA["snapshot"][0], KAFKA["snapshot"][1][:40], "bad state batch count"),
    ],
)
def test_bad_bytes_are_refused_in_one_line(key: bytes, value: bytes, what: str) -> None:
    with pytest.raises(PeerError, match=what):
        decode_share_record(key, value)
