"""Java's group-leader path on a benchmark case, measured now, in its own JVM, on kgroup's very inputs.

The members' ``ConsumerProtocolSubscription`` bytes (:func:`subscription_bytes`) and the topics'
partitions with their replicas' racks go to ``LeaderPathBench.java`` (the Kafka harness, compiled
against the pinned Kafka jars) in one input file. The JVM times, after its warm-up runs, the bare
``assign(Cluster, GroupSubscription)`` and ``onLeaderElected``'s steps (deserialize every subscription,
assign, serialize every assignment), and writes the last run's assignment bytes back, which are
compared with kgroup's leader path on the same input: a figure is only reported beside bytes that
are equal (or the difference is reported).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgroup.assignors.api import AssignmentRequest
from kgroup.bench.java_harness import harness_jar
from kgroup.messages import ConsumerSubscription
from kgroup.model import KgroupError
from kgroup.wire.consumer_protocol import encode_subscription

__all__ = ["JavaLeaderResult", "compare_answers", "run_java_leader_path", "subscription_bytes"]

_INT = struct.Struct(">i")
#: Java's heap for the largest cases (a million partitions, their assignment bytes twice over)
JAVA_HEAP = "8g"


@dataclass(frozen=True, slots=True)
class JavaLeaderResult:
    bare_ms: tuple[float, ...]
    leader_ms: tuple[float, ...]
    kafka_version: str
    #: member id -> the assignment bytes of Java's last leader run
    assignments: dict[str, bytes]


def subscription_bytes(request: AssignmentRequest) -> list[tuple[str, bytes]]:
    """Every member's ``ConsumerProtocolSubscription`` (v3, as Kafka 4's consumer sends it) as the
    group leader gets it from JoinGroup, in JoinGroup response order."""
    return [
        (m.member_id, encode_subscription(ConsumerSubscription(
            topics=m.topics, user_data=m.user_data, owned_partitions=m.owned, generation_id=m.generation,
            rack_id=m.rack_id)))
        for m in request.members
    ]


def _string(parts: list[bytes], text: str) -> None:
    data = text.encode("utf-8")
    parts.append(_INT.pack(len(data)))
    parts.append(data)


def write_input(path: Path, request: AssignmentRequest, assignor: str,
                subscriptions: Sequence[tuple[str, bytes]], warmups: int, runs: int) -> None:
    """The harness's input file (its format is described in ``LeaderPathBench.java``)."""
    racks: dict[str, int] = {}
    for meta in request.topics.values():
        for rack_set in set(meta.racks or ()):
            for rack in sorted(rack_set):
                racks.setdefault(rack, len(racks))
    if len(racks) > 31:
        raise KgroupError(f"case: {len(racks)} racks; the Java harness takes at most 31")
    parts: list[bytes] = [_INT.pack(1)]
    _string(parts, assignor)
    parts += [_INT.pack(int(request.prefer_rack_aware_logic)), _INT.pack(warmups), _INT.pack(runs),
              _INT.pack(len(racks))]
    for rack in racks:
        _string(parts, rack)
    parts.append(_INT.pack(len(request.topics)))
    mask_of: dict[frozenset[str], int] = {}
    for meta in request.topics.values():
        _string(parts, meta.name)
        parts.append(_INT.pack(meta.partitions))
        if meta.racks is None:
            parts.append(bytes(4 * meta.partitions))
            continue
        masks = []
        for rack_set in meta.racks:
            mask = mask_of.get(rack_set)
            if mask is None:
                mask = mask_of[rack_set] = sum(1 << racks[r] for r in rack_set)
            masks.append(mask)
        parts.append(struct.pack(f">{len(masks)}i", *masks))
    parts.append(_INT.pack(len(subscriptions)))
    for member_id, data in subscriptions:
        _string(parts, member_id)
        parts.append(_INT.pack(len(data)))
        parts.append(data)
    path.write_bytes(b"".join(parts))


def _read_output(path: Path) -> dict[str, bytes]:
    data = path.read_bytes()
    (count,) = _INT.unpack_from(data, 0)
    pos = 4
    out: dict[str, bytes] = {}
    for _ in range(count):
        fields: list[bytes] = []
        for _ in range(2):
            (length,) = _INT.unpack_from(data, pos)
            fields.append(data[pos + 4:pos + 4 + length])
            pos += 4 + length
        out[fields[0].decode("utf-8")] = fields[1]
    return out


def _harness_jar() -> tuple[Path, str, str]:
    jar, libs = harness_jar(
        "LeaderPathBench.java", "kgroup-leader-bench", "java: Kafka's leader path cannot be measured here"
    )
    return jar, libs.java, libs.classpath


def run_java_leader_path(
    request: AssignmentRequest, assignor: str, *, warmups: int, runs: int, timeout_s: float
) -> JavaLeaderResult:
    """Measure Java's bare ``assign()`` and leader path on ``request`` (killed after ``timeout_s``)."""
    jar, java, classpath = _harness_jar()
    with tempfile.TemporaryDirectory(prefix="kgroup-leader-bench-") as work:
        given, answered = Path(work) / "input.bin", Path(work) / "output.bin"
        write_input(given, request, assignor, subscription_bytes(request), warmups, runs)
        command = [java, f"-Xmx{JAVA_HEAP}", "-Xss4m", "-Djava.awt.headless=true",
                   "-cp", os.pathsep.join([str(jar), classpath]),
                   "LeaderPathBench", str(given), str(answered)]
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            stdout, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise KgroupError(f"timeout: Java's leader path did not finish within {timeout_s:g} s; "
                              "raise --timeout") from None
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        if child.returncode != 0 or not lines:
            last = (stderr.strip().splitlines() or [f"exit status {child.returncode}"])[-1]
            raise KgroupError(f"java: the leader-path harness failed: {last}")
        report = json.loads(lines[-1])
        return JavaLeaderResult(
            bare_ms=tuple(float(x) for x in report["bare_ms"]),
            leader_ms=tuple(float(x) for x in report["leader_ms"]),
            kafka_version=str(report["kafka"]),
            assignments=_read_output(answered),
        )


def compare_answers(kgroup: dict[str, bytes], java: dict[str, bytes]) -> tuple[bool, str]:
    """Whether kgroup's assignment bytes give every member Java's partitions, and how they compare:
    byte for byte, or the same partitions in another order (kgroup's assignors are exact to Kafka's
    partition *sets*; the order inside a member's list is not part of that promise)."""
    from kgroup.wire.consumer_protocol import decode_assignment

    if kgroup.keys() != java.keys():
        return False, f"different members ({len(kgroup.keys() ^ java.keys())} not in both)"
    differ = [m for m in kgroup if kgroup[m] != java[m]]
    if not differ:
        return True, "the same bytes"
    other_sets = [
        m for m in differ
        if sorted(decode_assignment(kgroup[m]).partitions) != sorted(decode_assignment(java[m]).partitions)
    ]
    if other_sets:
        return False, f"DIFFERENT partitions for {len(other_sets)} of {len(kgroup)} members"
    return True, f"the same partitions; their order differs for {len(differ)} of {len(kgroup)} members"
