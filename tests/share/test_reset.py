"""``share.auto.offset.reset``: latest (default), earliest, by_duration:<ISO-8601 duration>."""

from __future__ import annotations

import pytest

from kgroup.share import ShareAutoOffsetReset, initial_start_offset, parse_share_auto_offset_reset


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("latest", ShareAutoOffsetReset("latest")),
        ("EARLIEST", ShareAutoOffsetReset("earliest")),
        ("by_duration:PT1H", ShareAutoOffsetReset("by_duration", 3_600_000)),
        ("by_duration:P1DT2H30M", ShareAutoOffsetReset("by_duration", 95_400_000)),
        ("by_duration:PT0.5S", ShareAutoOffsetReset("by_duration", 500)),
        ("by_duration:PT0S", ShareAutoOffsetReset("by_duration", 0)),
    ],
)
def test_parse(text: str, expected: ShareAutoOffsetReset) -> None:
    assert parse_share_auto_offset_reset(text) == expected


@pytest.mark.parametrize(
    "text", ["none", "by_duration:-PT1H", "by_duration:1h", "by_duration:P", "by_duration:PT"]
)
def test_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"share.auto.offset.reset|Duration"):
        parse_share_auto_offset_reset(text)


def test_initial_start_offset() -> None:
    seen: list[int] = []

    def lookup(ts: int) -> int | None:
        seen.append(ts)
        return 42 if ts >= 0 else None

    kw = {"log_start_offset": 3, "log_end_offset": 100, "offset_for_timestamp": lookup}
    assert initial_start_offset(parse_share_auto_offset_reset("latest"), now_ms=10_000, **kw) == 100  # type: ignore[arg-type]
    assert initial_start_offset(parse_share_auto_offset_reset("earliest"), now_ms=10_000, **kw) == 3  # type: ignore[arg-type]
    strategy = parse_share_auto_offset_reset("by_duration:PT5S")
    assert initial_start_offset(strategy, now_ms=10_000, **kw) == 42  # type: ignore[arg-type]
    assert seen == [5_000]
    with pytest.raises(LookupError):
        initial_start_offset(parse_share_auto_offset_reset("by_duration:PT20S"), now_ms=10_000, **kw)  # type: ignore[arg-type]
