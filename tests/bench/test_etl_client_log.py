"""``benchmarks/etl_client_log.py`` reads the client logs ``bench_etl_chain.py --client-log`` keeps: a few
lines of each client's format, in the shapes the benchmark's clients write them, give the joins' waits,
the leave-to-replacement gap, the first wave's race and the session-closing fetches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "etl_client_log.py"
GROUP = "etl-abc-range"


def _run(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _rd(t: float, slot: int, instance: int, thread: str, message: str) -> str:
    facility = "SEND" if "Sent" in message else "RECV"
    return f"%7|{t:.3f}|{facility}|{GROUP}-{slot}#consumer-{instance}| [thrd:{thread}]: {message}"


def test_a_librdkafka_log(tmp_path: Path) -> None:
    coord = "GroupCoordinator"
    lines = [
        _rd(100.000, 0, 1, coord, "GroupCoordinator/0: Sent JoinGroupRequest (v5, 127 bytes @ 0, CorrId 2)"),
        _rd(100.001, 0, 1, coord, "GroupCoordinator/0: Sent JoinGroupRequest (v5, 184 bytes @ 0, CorrId 3)"),
        _rd(
            106.001,
            0,
            1,
            coord,
            "GroupCoordinator/0: Received JoinGroupResponse (v5, 442 bytes, CorrId 3, rtt 6000.50ms)",
        ),
        f"%7|106.002|JOINGROUP|{GROUP}-0#consumer-1| [thrd:main]: JoinGroup response: GenerationId 1",
        _rd(106.500, 0, 1, coord, "GroupCoordinator/0: Sent LeaveGroupRequest (v1, 113 bytes @ 0, CorrId 9)"),
        _rd(106.580, 0, 2, coord, "GroupCoordinator/0: Sent JoinGroupRequest (v5, 127 bytes @ 0, CorrId 2)"),
        "a line of something else",
    ]
    log = tmp_path / "kgroup-run1-range.log"
    log.write_text("\n".join(lines) + "\n")
    done = _run(log)
    assert done.returncode == 0, done.stderr
    assert "(librdkafka)" in done.stdout
    assert "generation 1 at 6.0 s, waited 6.00 s" in done.stdout
    assert "leave → replacement join: median 80 ms" in done.stdout


def _java(t: str, slot: int, kind: str, api: str, correlation: int, body: str) -> str:
    client = f"{GROUP}-{slot}"
    word = "request" if kind == "Sending" else "response"
    return (
        f"[2026-12-05 00:00:{t}] DEBUG [Consumer clientId={client}, groupId={GROUP}] {kind} {api} {word} "
        f"with "
        f"header RequestHeader(apiKey={api}, apiVersion=9, clientId={client}, correlationId={correlation}, "
        f"headerVersion=2): {body} (org.apache.kafka.clients.NetworkClient)"
    )


def test_a_java_log_with_the_first_waves_race(tmp_path: Path) -> None:
    lines = [
        _java("00,000", 0, "Sending", "JOIN_GROUP", 4, "JoinGroupRequestData(memberId='m0', x)"),
        _java("06,000", 0, "Received", "JOIN_GROUP", 4, "JoinGroupResponseData(errorCode=0, generationId=1)"),
        # the three first-wave members leave 200 ms apart in all; a replacement joins before the last
        _java("08,000", 0, "Sending", "LEAVE_GROUP", 7, "LeaveGroupRequestData(members=[memberId='m0'])"),
        _java(
            "08,010", 0, "Sending", "FETCH", 8, "FetchRequestData(sessionId=0, sessionEpoch=-1, topics=[])"
        ),
        _java("08,012", 0, "Received", "FETCH", 8, "FetchResponseData(errorCode=0, sessionId=0)"),
        _java("08,100", 1, "Sending", "LEAVE_GROUP", 7, "LeaveGroupRequestData(members=[memberId='m1'])"),
        _java("08,150", 0, "Sending", "JOIN_GROUP", 1, "JoinGroupRequestData(memberId='', x)"),
        _java("08,200", 2, "Sending", "LEAVE_GROUP", 7, "LeaveGroupRequestData(members=[memberId='m2'])"),
    ]
    log = tmp_path / "kgroup-run1-java-range.log"
    log.write_text("\n".join(lines) + "\n")
    done = _run(log)
    assert done.returncode == 0, done.stderr
    assert "(Java)" in done.stdout
    assert "generation 1 at 6.0 s, waited 6.00 s" in done.stdout
    assert "first wave: leaves 200 ms apart, a replacement joined 150 ms after the first: fast" in done.stdout
    assert "session-closing fetches (ms): 2" in done.stdout


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path / "nope.log")
    assert done.returncode == 2
    assert done.stderr.strip() == f"no such file: {tmp_path / 'nope.log'}"
