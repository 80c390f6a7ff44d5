"""``kgroup validate``'s bad input: one line naming the option or field and the fix, exit status 2,
no traceback, and nothing started (each case fails before any broker or consumer runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.cli import main


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(["validate", *args])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert done.value.code == 2, (out, err)
    assert len(lines) == 1 and lines[0].startswith("kgroup: error: "), err
    return lines[0].removeprefix("kgroup: error: ")


def test_unknown_broker(capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(capsys, "crash-range-3", "--brokers", "kafka").startswith("--brokers: 'kafka'")


def test_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    message = _error(capsys, "no-such-scenario")
    assert message.startswith("SCENARIO: 'no-such-scenario'") and "crash-range-3" in message


def test_client_not_driven_yet(capsys: pytest.CaptureFixture[str]) -> None:
    assert _error(capsys, "crash-range-3", "--client", "kafka-python").startswith("--client: 'kafka-python'")


@pytest.mark.parametrize(
    ("scenario", "says"),
    [
        ("share-crash-scale-4", "group.protocol: share is not played with --client java"),
        ("slow-consumer-roundrobin-3", "events[0].kind: 'slow_poll' is not played with --client java"),
    ],
)
def test_what_the_java_driver_does_not_play(
    capsys: pytest.CaptureFixture[str], scenario: str, says: str
) -> None:
    assert says in _error(capsys, scenario, "--client", "java")


def test_an_event_real_clients_cannot_play(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cut = tmp_path / "cut.yaml"
    cut.write_text(
        "duration_ms: 10000\ntopics: {t: 1}\nconsumers: [{id: a, topics: [t]}]\n"
        "events: [{at_ms: 10, kind: network_partition, consumer: a, duration_ms: 100}]\n",
        encoding="utf-8",
    )
    assert "events[0].kind: 'network_partition' cannot be played" in _error(capsys, str(cut))


def test_a_bad_scenario_file_names_its_field(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration_ms: 10000\ntopics: {t: 1}\nconsumers: []\n", encoding="utf-8")
    assert "consumers" in _error(capsys, str(bad))


def test_a_poll_interval_below_the_session_timeout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    short = tmp_path / "short.yaml"
    short.write_text(
        "duration_ms: 10000\ntopics: {t: 1}\nconsumers: [{id: a, topics: [t]}]\n"
        "group: {session_timeout_ms: 10000, heartbeat_interval_ms: 1000, max_poll_interval_ms: 8000}\n",
        encoding="utf-8",
    )
    assert "group.max_poll_interval_ms: below group.session_timeout_ms" in _error(capsys, str(short))


@pytest.mark.parametrize(
    ("args", "prefix"),
    [(("--seeds", "0"), "--seeds: 0"), (("--sim-jitter-ms", "-5"), "--sim-jitter-ms: -5")],
)
def test_simulation_options_are_bounded(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], prefix: str
) -> None:
    assert _error(capsys, "crash-range-3", *args).startswith(prefix)


def test_a_consumer_protocol_heartbeat_not_below_its_session(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    slow = tmp_path / "slow.yaml"
    slow.write_text(
        "duration_ms: 10000\ntopics: {t: 1}\nconsumers: [{id: a, topics: [t]}]\n"
        "group: {protocol: consumer, consumer_session_timeout_ms: 6000,"
        " consumer_heartbeat_interval_ms: 6000}\n",
        encoding="utf-8",
    )
    assert "consumer_heartbeat_interval_ms" in _error(capsys, str(slow))


@pytest.mark.parametrize(
    ("group", "field"),
    [
        (
            "{protocol: share, share_session_timeout_ms: 10000, share_heartbeat_interval_ms: 5000}",
            "share_session_timeout_ms",
        ),
        ("{protocol: share, share_heartbeat_interval_ms: 1000}", "share_heartbeat_interval_ms"),
    ],
)
def test_a_share_setting_below_the_brokers_floor(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, group: str, field: str
) -> None:
    low = tmp_path / "low.yaml"
    low.write_text(
        f"duration_ms: 10000\ntopics: {{t: 1}}\nconsumers: [{{id: a, topics: [t]}}]\ngroup: {group}\n",
        encoding="utf-8",
    )
    message = _error(capsys, str(low))
    assert f"group.{field}" in message and "raise it" in message


def test_a_share_group_cannot_be_stalled_yet(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    stall = tmp_path / "stall.yaml"
    stall.write_text(
        "duration_ms: 10000\ntopics: {t: 1}\nconsumers: [{id: a, topics: [t]}]\ngroup: {protocol: share}\n"
        "events: [{at_ms: 10, kind: slow_poll, consumer: a, duration_ms: 100}]\n",
        encoding="utf-8",
    )
    assert "slow_poll is not played for share groups" in _error(capsys, str(stall))


def test_the_java_client_runs_the_built_ins_its_driver_plays() -> None:
    from kgroup.cli.validate import _playable
    from kgroup.sim.scenario import load_scenario
    from kgroup.validate import builtin_scenarios

    kinds = {"start", "stop", "crash", "restart"}
    for name, path in builtin_scenarios().items():
        scenario = load_scenario(path)
        java = not scenario.group.share_protocol and all(e.kind in kinds for e in scenario.events)
        assert _playable(scenario, "java") is java, name
        assert _playable(scenario, "librdkafka"), name
