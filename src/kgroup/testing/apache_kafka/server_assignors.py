"""Apache Kafka's own KIP-848 server assignors, driven from Python (the reference for
:mod:`kgroup.group.assignors`).

:class:`ServerAssignorOracle` compiles ``java/ServerAssignorOracle.java`` against the pinned jars (once,
cached) and keeps one JVM running it; each :meth:`~ServerAssignorOracle.assign` is one JSON line each
way. A group is described once, as :class:`OracleMember` rows (what the coordinator holds: member ids in
its own order, subscribed topic ids, the current target assignment as its record lists it), and
:func:`kgroup_group_spec` builds kgroup's :class:`~kgroup.group.assignors.GroupSpec` from the same rows,
so both sides start from the same Java collections.
"""

from __future__ import annotations

import json
import select
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from kgroup.group.assignors import (
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    TopicId,
    assignment_from_record,
    group_spec,
    topic_id_set,
)
from kgroup.javatools import cache_root, compile_jar
from kgroup.testing.apache_kafka.distribution import KafkaLibs, kafka_libs

__all__ = ["OracleAnswer", "OracleMember", "ServerAssignorOracle", "kgroup_group_spec"]

_SOURCE = Path(__file__).parent / "java" / "ServerAssignorOracle.java"
#: a JVM start is a second or two; one assignment of the benchmark's 10,000 members, a few seconds
DEFAULT_TIMEOUT_S = 300.0

Record = tuple[tuple[TopicId, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class OracleMember:
    """One member as the coordinator holds it."""

    member_id: str
    topics: tuple[TopicId, ...]  # subscribed topic ids, in the order they are put into the HashSet
    record: Record = ()  # the current target assignment, topics in the order its record lists them
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class OracleAnswer:
    member_ids: tuple[str, ...]  # GroupSpec.memberIds() order
    subscription_type: str
    assignment: dict[str, Record]  # each member's topics and partitions in the order Kafka's maps iterate
    nanos: tuple[int, ...]  # System.nanoTime around each timed assign()
    error: str | None


def kgroup_group_spec(
    members: Sequence[OracleMember], subscription: SubscriptionType | None = None
) -> GroupSpec:
    """kgroup's GroupSpec built from the rows exactly as the harness builds Kafka's (members whose
    ``topics`` is the same tuple object share one set, as they share one ``HashSet`` in the harness)."""
    sets: dict[int, tuple[TopicId, ...]] = {}

    def subscribed(topics: tuple[TopicId, ...]) -> tuple[TopicId, ...]:
        found = sets.get(id(topics))
        if found is None:
            found = sets[id(topics)] = topic_id_set(topics)
        return found

    return group_spec(
        (
            (
                m.member_id,
                MemberSpec(subscribed(m.topics), assignment_from_record(m.record), m.instance_id, m.rack_id),
            )
            for m in members
        ),
        subscription,
    )


def _record(raw: list[list[Any]]) -> Record:
    return tuple((TopicId.from_string(topic), tuple(int(p) for p in partitions)) for topic, partitions in raw)


class ServerAssignorOracle:
    """One long-lived JVM answering with Kafka's ``UniformAssignor`` / ``RangeAssignor``."""

    def __init__(self, libs: KafkaLibs | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._libs = libs or kafka_libs()
        self._timeout_s = timeout_s
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    def start(self) -> None:
        if self._process is not None:
            return
        jars = self._libs.jars()
        jar = compile_jar(
            [_SOURCE],
            jars,
            cache_root() / "apache-kafka" / self._libs.version / "harness",
            "server-assignor-oracle",
        )
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed by close())
        self._process = subprocess.Popen(
            [self._libs.java, "-cp", f"{jar}:{self._libs.classpath}", "ServerAssignorOracle"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            if process.stdout is not None:
                process.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> ServerAssignorOracle:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _failure(self, what: str) -> RuntimeError:
        tail = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            tail = self._stderr.read()[-2000:]
        return RuntimeError(f"ServerAssignorOracle {what}; its stderr ends with: {tail}")

    def assign(
        self,
        assignor: str,
        topics: Mapping[TopicId, int],
        members: Sequence[OracleMember],
        subscription: SubscriptionType | None = None,
        *,
        warmup: int = 0,
        repeat: int = 0,
    ) -> OracleAnswer:
        """Kafka's answer for this group; with ``repeat`` > 0 also the JVM-side times of that many calls."""
        self.start()
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        # members with the same subscription (the same tuple object) share it, in the request and in Java
        subscriptions: dict[int, int] = {}
        shared: list[list[str]] = []
        rows: list[dict[str, Any]] = []
        for m in members:
            row: dict[str, Any] = {
                "id": m.member_id,
                "assignment": [[str(t), list(ps)] for t, ps in m.record],
                "instanceId": m.instance_id,
                "rackId": m.rack_id,
            }
            index = subscriptions.get(id(m.topics))
            if index is None:
                index = subscriptions[id(m.topics)] = len(shared)
                shared.append([str(t) for t in m.topics])
            row["subscription"] = index
            rows.append(row)
        request: dict[str, Any] = {
            "assignor": assignor,
            "topics": [{"id": str(t), "partitions": n} for t, n in topics.items()],
            "subscriptions": shared,
            "members": rows,
            "warmup": warmup,
            "repeat": repeat,
        }
        if subscription is not None:
            request["subscriptionType"] = subscription.value
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except BrokenPipeError as exc:
            raise self._failure("is gone") from exc
        ready, _, _ = select.select([process.stdout], [], [], self._timeout_s)
        if not ready:
            raise self._failure(f"did not answer within {self._timeout_s:.0f} s")
        line = process.stdout.readline()
        if not line:
            raise self._failure("closed its output")
        raw = json.loads(line)
        if "memberIds" not in raw:
            raise self._failure(f"failed: {raw.get('error')}")
        return OracleAnswer(
            member_ids=tuple(raw["memberIds"]),
            subscription_type=raw["subscriptionType"],
            assignment={m: _record(r) for m, r in raw.get("assignment", {}).items()},
            nanos=tuple(raw.get("nanos", ())),
            error=raw.get("error"),
        )
