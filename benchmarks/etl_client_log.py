"""Where a group ETL stage's time goes, from the client logs ``bench_etl_chain.py --client-log DIR`` keeps.

For each log (``PEER-runN-STAGE.log``: librdkafka's ``debug=cgrp,protocol`` lines or the Java clients'
DEBUG log) it prints one block:

* ``joins``: each generation's join, when it completed (seconds from the log's first line) and how long
  its longest JoinGroup waited — 6.0 s is the initial delay (3 s) extended once, when the group was
  empty; about 2–3 s is a member learning of the rebalance at its next heartbeat;
* ``leave → replacement join``: from a member's LeaveGroup to its replacement's first JoinGroup
  (median, min, max);
* ``first wave``: how far apart the first three LeaveGroups were, and whether a replacement's JoinGroup
  came before the last of them (``fast``: the group never emptied, so no second initial delay) or not;
* the round trips of the requests the members send most (median and sum over all members), and for
  Java the round trip of each consumer's session-closing fetch (sent by ``close()``, waited for).

    .venv/bin/python benchmarks/etl_client_log.py DIR/*.log

A reading aid for the benchmark's logs, not a parser of every client log: lines it does not know are
passed over.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

_RDKAFKA = re.compile(r"^%\d\|(\d+\.\d+)\|(\w+)\|([^|]+)\| \[thrd:[^\]]*\]: (.*)$")
_RD_SENT = re.compile(r"Sent (\w+)Request \(v\d+, (\d+) bytes @ \d+, CorrId (\d+)\)")
_RD_RECV = re.compile(r"Received (\w+)Response \(v\d+, (\d+) bytes, CorrId (\d+), rtt ([0-9.]+)ms\)")
_RD_GENERATION = re.compile(r"JoinGroup response: GenerationId (\d+)")
_JAVA = re.compile(
    r"^\[(\S+ \S+)\] DEBUG \[(?:Consumer|Producer) (?:instanceId=[^,]+, )?clientId=([^,\]]+)[,\]].*? "
    r"(Sending|Received) (\w+) "
    r"(?:request|response).*?correlationId=(\d+)"
)
_JAVA_MEMBER = re.compile(r"memberId='([^']*)'")
_JAVA_GENERATION = re.compile(r"generationId=(-?\d+)")
#: a JoinGroup without a member id (librdkafka's request of that size, v5)
_RD_FIRST_JOIN_BYTES = 127
_JAVA_API = {"JOIN_GROUP": "JoinGroup", "LEAVE_GROUP": "LeaveGroup", "OFFSET_COMMIT": "OffsetCommit",
             "PRODUCE": "Produce", "FETCH": "Fetch", "HEARTBEAT": "Heartbeat", "SYNC_GROUP": "SyncGroup"}


@dataclass
class _Log:
    first: float | None = None
    last: float = 0.0
    #: generation -> (completed at, longest JoinGroup wait)
    generations: dict[int, tuple[float, float]] = field(default_factory=dict)
    leaves: list[tuple[float, str]] = field(default_factory=list)
    first_joins: list[tuple[float, str]] = field(default_factory=list)
    round_trips: dict[str, list[float]] = field(default_factory=dict)
    close_fetches: list[float] = field(default_factory=list)

    def seen(self, t: float) -> float:
        if self.first is None:
            self.first = t
        self.last = t
        return t - self.first

    def joined(self, generation: int, at: float, waited: float) -> None:
        if generation <= 0:
            return
        done, longest = self.generations.get(generation, (at, 0.0))
        self.generations[generation] = (min(done, at), max(longest, waited))


def _slot(client: str) -> str:
    """The member's slot: the benchmark names its clients GROUP-SLOT."""
    return client.split("#")[0].rsplit("-", 1)[-1]


def _read_rdkafka(lines: list[str]) -> _Log:
    log = _Log()
    waited: dict[str, float] = {}
    for line in lines:
        m = _RDKAFKA.match(line.strip())
        if m is None:
            continue
        at = log.seen(float(m.group(1)))
        client, message = m.group(3), m.group(4)
        sent = _RD_SENT.search(message)
        if sent is not None and "#consumer-" in client:
            if sent.group(1) == "LeaveGroup":
                log.leaves.append((at, _slot(client)))
            elif sent.group(1) == "JoinGroup" and int(sent.group(2)) == _RD_FIRST_JOIN_BYTES:
                log.first_joins.append((at, _slot(client)))
        received = _RD_RECV.search(message)
        if received is not None:
            log.round_trips.setdefault(received.group(1), []).append(float(received.group(4)) / 1000)
            if received.group(1) == "JoinGroup":
                waited[client] = float(received.group(4)) / 1000
        generation = _RD_GENERATION.search(message)
        if generation is not None:
            log.joined(int(generation.group(1)), at, waited.pop(client, 0.0))
    return log


def _read_java(lines: list[str]) -> _Log:
    log = _Log()
    sent: dict[tuple[str, str], tuple[float, bool]] = {}
    for line in lines:
        m = _JAVA.match(line)
        if m is None:
            continue
        at = log.seen(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp())
        client, kind, api, correlation = m.group(2), m.group(3), m.group(4), m.group(5)
        key = (client, correlation)
        if kind == "Sending":
            sent[key] = (at, api == "FETCH" and "sessionEpoch=-1" in line)
            member = _JAVA_MEMBER.search(line)
            if api == "LEAVE_GROUP":
                log.leaves.append((at, _slot(client)))
            elif api == "JOIN_GROUP" and member is not None and member.group(1) == "":
                log.first_joins.append((at, _slot(client)))
            continue
        if key not in sent:
            continue
        started, closing = sent.pop(key)
        trip = at - started
        log.round_trips.setdefault(_JAVA_API.get(api, api), []).append(trip)
        if closing:
            log.close_fetches.append(trip)
        if api == "JOIN_GROUP":
            generation = _JAVA_GENERATION.search(line)
            if generation is not None:
                log.joined(int(generation.group(1)), at, trip)
    return log


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def summarize(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines()
    java = any(_JAVA.match(line) for line in lines[:2000])
    log = _read_java(lines) if java else _read_rdkafka(lines)
    if log.first is None:
        return f"{path.name}: no client log lines"
    client = "Java" if java else "librdkafka"
    out = [f"{path.name} ({client}): {log.last - log.first:.1f} s from the first line"]
    joins = sorted(log.generations.items())
    described = [f"generation {g} at {at:.1f} s, waited {wait:.2f} s" for g, (at, wait) in joins]
    out.append("  joins: " + "; ".join(described))
    gaps: list[float] = []
    pending: dict[str, float] = {}
    for at, slot in sorted(log.leaves + [(t, "join:" + s) for t, s in log.first_joins]):
        if slot.startswith("join:"):
            left = pending.pop(slot.removeprefix("join:"), None)
            if left is not None:
                gaps.append(at - left)
        else:
            pending[slot] = at
    if gaps:
        out.append(f"  leave → replacement join: median {_ms(statistics.median(gaps))} ms, "
                   f"{_ms(min(gaps))}–{_ms(max(gaps))} ms ({len(gaps)} members)")
    leaves = sorted(at for at, _ in log.leaves)[:3]
    if len(leaves) == 3:
        later = [at for at, _ in log.first_joins if at > leaves[0]]
        if later:
            fast = min(later) < leaves[2]
            out.append(f"  first wave: leaves {_ms(leaves[2] - leaves[0])} ms apart, a replacement joined "
                       f"{_ms(min(later) - leaves[0])} ms after the first: {'fast' if fast else 'slow'}")
    for api in ("OffsetCommit", "Produce", "Fetch", "Heartbeat"):
        trips = log.round_trips.get(api)
        if trips:
            out.append(f"  {api}: {len(trips)} round trips, median {statistics.median(trips) * 1000:.1f} ms, "
                       f"{sum(trips):.1f} s in all")
    if log.close_fetches:
        out.append("  session-closing fetches (ms): " + " ".join(_ms(t) for t in log.close_fetches))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("logs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.logs if not p.is_file()]
    if missing:
        print(f"no such file: {missing[0]}", file=sys.stderr)
        return 2
    for path in args.logs:
        print(summarize(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
