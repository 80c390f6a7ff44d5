"""Scripts of share-partition operations, run through kgroup here and through Kafka 4.4.0's own
``SharePartition`` by ``SharePartitionScripts.java``; both print the same lines. ``restart`` is a
``kill -9``: the partition is loaded again from what its writes persisted.

``python -m tests.share.kafka_scripts > tests/share/share_partition_scripts.txt`` writes the scripts
(seeded, so the file is reproducible); the Java program then prints Kafka's answers
(``share_partition_kafka.txt``, see its header). A script line is one of::

    script <n> <max locks> <delivery limit> <lock ms> <share.renew.acknowledge.enable 0|1>
    acquire <member> <fetch offset> <max fetch records> <batch size> <record limit 0|1> <batches>
            <read_committed 0|1> <aborted transactions pid@first;...|->
    ack <member> <first>-<last>:<type>.<type>...;...
    release <member>
    advance <ms>
    restart
    lso <log start offset>

and each prints ``<result> | <start> <end> <next fetch> [<first>-<last> <state>/<count>/<member> ...]``.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable, Iterator

from tests.share.harness import Host

from kgroup.share import (
    AbortedTransaction,
    AcknowledgementBatch,
    FetchedBatch,
    IsolationLevel,
    SharePartitionConfig,
)

MEMBERS = ("a", "b", "c")


def _state(h: Host) -> str:
    sp = h.sp
    parts = [f"{sp.start_offset} {sp.end_offset} {sp.next_fetch_offset()}"]
    for first, last, per_offset in sp.cached_batches():
        if per_offset is None:
            whole = sp.batch_state(first)
            assert whole is not None
            inner = f"{int(whole[0])}/{whole[1]}/{whole[2]}"
        else:
            inner = " ".join(f"{int(state)}/{count}/{member}" for _, state, count, member in per_offset)
        parts.append(f"[{first}-{last} {inner}]")
    return " ".join(parts)


def _batches(spec: str) -> list[FetchedBatch]:
    """``base:count`` plain, ``base:count:t<pid>`` transactional, ``base:1:a<pid>`` / ``base:1:c<pid>``
    an abort / commit marker."""
    out = []
    for part in spec.split(","):
        fields = part.split(":")
        base, count = int(fields[0]), int(fields[1])
        if len(fields) == 2:
            out.append(FetchedBatch(base, base + count - 1))
            continue
        kind, pid = fields[2][0], int(fields[2][1:])
        control = kind in "ac"
        out.append(FetchedBatch(base, base + count - 1, pid, True, control, kind == "a"))
    return out


def _aborted(spec: str) -> list[AbortedTransaction]:
    if spec == "-":
        return []
    return [AbortedTransaction(*(int(x) for x in part.split("@"))) for part in spec.split(";")]


def _acks(spec: str) -> list[AcknowledgementBatch]:
    out = []
    for part in spec.split(";"):
        offsets, types = part.split(":")
        first, last = (int(x) for x in offsets.split("-"))
        out.append(AcknowledgementBatch(first, last, tuple(int(t) for t in types.split("."))))
    return out


class Runner:
    """Runs script lines through kgroup's share partition, printing what the Java program prints."""

    def __init__(self) -> None:
        self.h: Host | None = None

    def run(self, line: str) -> str:
        w = line.split()
        if w[0] == "script":
            locks, deliveries, lock = int(w[2]), int(w[3]), int(w[4])
            renew = len(w) <= 5 or w[5] == "1"
            self.h = Host(SharePartitionConfig(locks, deliveries, lock, renew))
            return f"script {w[1]} | {_state(self.h)}"
        h = self.h
        assert h is not None
        if w[0] == "acquire":
            r = h.acquire(
                w[1],
                _batches(w[6]),
                max_fetch=int(w[3]),
                fetch_offset=int(w[2]),
                batch_size=int(w[4]),
                record_limit=w[5] == "1",
                isolation=IsolationLevel.READ_COMMITTED
                if len(w) > 7 and w[7] == "1"
                else IsolationLevel.READ_UNCOMMITTED,
                aborted_transactions=_aborted(w[8]) if len(w) > 8 else [],
            )
            got = ",".join(f"{a.first_offset}-{a.last_offset}/{a.delivery_count}" for a in r.acquired) or "-"
            out = f"acquired {r.count} {got}" if r.error is None else f"error {r.error.code.name}"
        elif w[0] == "ack":
            res = h.acknowledge(w[1], *_acks(w[2]))
            out = "ok" if res.error is None else f"error {res.error.code.name}"
        elif w[0] == "release":
            h.release(w[1])
            out = "ok"
        elif w[0] == "advance":
            h.advance(int(w[1]))
            out = "ok"
        elif w[0] == "lso":
            h.sp.update_log_start_offset(int(w[1]))
            out = "ok"
        elif w[0] == "restart":
            h.restart()
            out = "ok"
        else:
            raise ValueError(line)
        return f"{out} | {_state(h)}"


def scripts(seed: int = 932, count: int = 80, steps: int = 30) -> Iterator[str]:
    """Random scripts: a log of batches, members acquiring from the next fetch offset (as a broker's
    share fetch does), acknowledging what they got (some of it stale), leaving, time passing."""
    rng = random.Random(seed)
    for n in range(count):
        runner = Runner()
        locks, deliveries, lock = rng.randint(6, 40), rng.randint(2, 6), 1000
        head = f"script {n} {locks} {deliveries} {lock} {int(rng.random() < 0.85)}"
        yield head
        runner.run(head)
        # (base, count, kind): kind "" plain, "t<pid>" transactional, "a<pid>" / "c<pid>" a marker
        log: list[tuple[int, int, str]] = []
        aborted: list[tuple[int, int, int]] = []  # (pid, first offset, marker offset)
        base = 0
        for _ in range(rng.randint(3, 12)):
            if rng.random() < 0.35:
                pid = rng.choice([7, 8, 9])
                first = base
                for _ in range(rng.randint(1, 2)):
                    size = rng.randint(1, 5)
                    log.append((base, size, f"t{pid}"))
                    base += size
                abort = rng.random() < 0.5
                log.append((base, 1, f"{'a' if abort else 'c'}{pid}"))
                if abort:
                    aborted.append((pid, first, base))
                base += 1
            else:
                size = rng.randint(1, 7)
                log.append((base, size, ""))
                base += size
        got: dict[str, list[tuple[int, int]]] = {m: [] for m in MEMBERS}
        for _ in range(steps):
            op = rng.choice(
                ["acquire", "acquire", "acquire", "ack", "ack", "ack", "advance", "release", "lso", "restart"]
            )
            member = rng.choice(MEMBERS)
            h = runner.h
            assert h is not None
            if op == "acquire":
                offset = h.sp.next_fetch_offset()
                fetched = [b for b in log if b[0] + b[1] - 1 >= offset][: rng.randint(1, 4)]
                if not fetched:
                    continue
                spec = ",".join(f"{b}:{c}:{k}" if k else f"{b}:{c}" for b, c, k in fetched)
                last = fetched[-1][0] + fetched[-1][1] - 1
                overlapping = [f"{p}@{f}" for p, f, m in aborted if f <= last and m >= fetched[0][0]]
                line = (
                    f"acquire {member} {offset} {rng.randint(1, 12)} {rng.randint(1, 12)} "
                    f"{rng.randint(0, 1)} {spec} {rng.randint(0, 1)} {';'.join(overlapping) or '-'}"
                )
                out = runner.run(line)
                result = out.split(" | ")[0].split()
                for part in result[2].split(",") if result[0] == "acquired" else ():
                    if part != "-":
                        first, last = (int(x) for x in part.split("/")[0].split("-"))
                        got[member].append((first, last))
            elif op == "ack":
                if not got[member]:
                    continue
                first, last = rng.choice(got[member])
                first = rng.randint(first, last)
                last = rng.randint(first, last)
                if rng.random() < 0.5:
                    types = str(rng.choice([1, 2, 3, 4]))
                else:
                    types = ".".join(str(rng.choice([0, 1, 2, 3, 4])) for _ in range(last - first + 1))
                line = f"ack {member} {first}-{last}:{types}"
                runner.run(line)
            elif op == "advance":
                line = f"advance {rng.choice([0, 300, 999, 1000, 1500, 3000])}"
                runner.run(line)
            elif op == "release":
                line = f"release {member}"
                runner.run(line)
            elif op == "restart":
                line = "restart"
                runner.run(line)
            else:
                line = f"lso {h.sp.start_offset + rng.randint(1, 6)}"
                runner.run(line)
            yield line


def run_all(lines: Iterable[str]) -> list[str]:
    runner = Runner()
    return [runner.run(line) for line in lines]


if __name__ == "__main__":
    sys.stdout.write("".join(line + "\n" for line in scripts()))
