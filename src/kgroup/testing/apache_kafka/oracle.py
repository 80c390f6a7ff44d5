"""``KafkaOracle``: Apache Kafka's own assignors and partitioners, asked from Python.

One long-lived JVM runs kgroup's small harness (``java/AssignorOracle.java``, compiled with javac on
first use against the pinned release's jars) and answers batches of requests, one JSON line each way:

* :meth:`KafkaOracle.assign` / :meth:`~KafkaOracle.assign_many` — ``RangeAssignor``,
  ``RoundRobinAssignor``, ``StickyAssignor``, ``CooperativeStickyAssignor`` through their public entry
  point ``assign(Cluster, GroupSubscription)``, on the ``input`` of a reference vector
  (``tests/vectors/FORMAT.md``); :func:`vector_input` turns a kgroup
  :class:`~kgroup.assignors.AssignmentRequest` into one;
* :meth:`~KafkaOracle.murmur2` — ``Utils.murmur2``, ``toPositive`` and
  ``BuiltInPartitioner.partitionForKey`` for any partition counts;
* :meth:`~KafkaOracle.round_robin_partitioner` — successive ``RoundRobinPartitioner.partition`` calls;
* :meth:`~KafkaOracle.server_assign` — the KIP-848 coordinator's ``UniformAssignor`` / ``RangeAssignor``
  (and the share groups' ``SimpleAssignor``)
  on a group given as :class:`ServerMember` rows (what the coordinator holds), optionally timed inside
  the JVM; :func:`kgroup_group_spec` builds kgroup's own ``GroupSpec`` from the same rows, and
  :func:`server_vector_group` reads a ``server-*`` vector's input into them;
* :meth:`~KafkaOracle.produce` — a real ``KafkaProducer`` sending records to a live cluster, and the
  partition each one went to;
* :meth:`~KafkaOracle.record_bytes` / :meth:`~KafkaOracle.record_read` — the group coordinator's
  ``__consumer_offsets`` records through Kafka's ``GroupCoordinatorRecordSerde``: the key and value bytes
  Kafka writes for a record given as the JSON of its generated converters, and the record Kafka reads
  from given bytes;
* :meth:`~KafkaOracle.transaction_record_bytes` / :meth:`~KafkaOracle.transaction_add_partitions_bytes` /
  :meth:`~KafkaOracle.transaction_record_read` / :meth:`~KafkaOracle.transaction_metadata_steps` — the
  transaction coordinator's ``__transaction_state`` records through Kafka's ``TransactionLog``, and its
  transitions through Kafka's ``TransactionMetadata``;
* :meth:`~KafkaOracle.topic_regexes` — the KIP-848 coordinator's subscribed-topic regexes: its own
  validation (the INVALID_REGULAR_EXPRESSION message) and RE2/J's matching of topic names;
* :meth:`~KafkaOracle.striped_place` — a KRaft controller's ``StripedReplicaPlacer`` with a seeded
  ``java.util.Random``, placing topics in turn over brokers as the controller's
  ``BrokerHeartbeatManager`` lists them;
* :meth:`~KafkaOracle.client_partition_order` — the order in which a Java producer's ``Cluster`` lists
  a topic's partitions after given Metadata answers (its ``ProducerMetadata`` merging them);
* :meth:`~KafkaOracle.has_class` — whether the release has a class at all.

    >>> with KafkaOracle() as kafka:  # doctest: +SKIP
    ...     kafka.murmur2([b"foobar"], [3])[0].partitions
    {3: 0}

Every call is bounded (``call_timeout_s``); a JVM that dies or hangs ends the oracle with one line
(:class:`OracleDied`) carrying the last lines it wrote to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kgroup.assignors.api import AssignmentRequest
from kgroup.child_process import wait_or_kill
from kgroup.group.assignors import (
    GroupSpec,
    MemberSpec,
    SubscriptionType,
    TopicId,
    assignment_from_record,
    group_spec,
    topic_id_set,
)
from kgroup.javacompat import java_string_key
from kgroup.javatools import CompileFailed, JavaToolMissing, cache_root, compile_jar
from kgroup.model import Assignment, KgroupError, TopicPartition
from kgroup.partitioning.striped import UsableBroker
from kgroup.testing.apache_kafka.distribution import KAFKA_VERSION, KafkaLibs, KafkaUnavailable, kafka_libs
from kgroup.testing.lifecycle import Started

__all__ = [
    "CONSUMER_ASSIGNORS",
    "SERVER_ASSIGNORS",
    "CoordinatorRecordJson",
    "KafkaOracle",
    "Murmur2Answer",
    "OracleAnswer",
    "OracleDied",
    "OracleError",
    "PlacedTopics",
    "Produced",
    "RegexAnswer",
    "ServerAnswer",
    "ServerGroup",
    "ServerMember",
    "kgroup_group_spec",
    "server_vector_group",
    "vector_input",
]

#: the client-side assignors the oracle runs, by kgroup's (and the vectors') names
CONSUMER_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: the KIP-848 group coordinator's assignors, by their own names (``ConsumerGroupPartitionAssignor.name()``)
SERVER_ASSIGNORS = ("uniform", "range", "simple")
#: starting a JVM and loading Kafka's classes: ~1 s here, far less than this on any machine
START_TIMEOUT_S = 60.0
#: one batch; a few thousand small groups take well under a second once the JIT is warm
CALL_TIMEOUT_S = 120.0
_SOURCES = (
    "AssignorOracle.java",
    "ServerAssignors.java",
    "CoordinatorRecords.java",
    "TransactionRecords.java",
    "TopicRegexes.java",
    "ReplicaPlacement.java",
    "ClientMetadata.java",
    "ScalaMaps.java",
)
_JVM_OPTIONS = ("-XX:+UseSerialGC", "-Xss4m", "-Djava.awt.headless=true")


def _signed64(value: int) -> int:
    """A 64-bit half of a UUID as Java's ``long``."""
    return value - (1 << 64) if value >= 1 << 63 else value


class OracleError(KgroupError):
    """The oracle could not answer (bad request, no JDK, a harness that does not compile)."""


class OracleDied(OracleError):
    """The oracle's JVM exited or stopped answering."""


@dataclass(frozen=True, slots=True)
class OracleAnswer:
    """Kafka's answer for one group: the assignment (every member, each list sorted by topic in
    Java order then partition) and the ``HashMap`` iteration order of the members, or the exception
    the assignor threw (``"IllegalStateException: …"``) in ``error``."""

    assignment: Assignment | None
    member_iteration_order: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Murmur2Answer:
    """``Utils.murmur2(key)`` (signed int32), ``toPositive`` of it, and ``partitionForKey`` per count."""

    murmur2: int
    to_positive: int
    partitions: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class Produced:
    """Where a real ``KafkaProducer`` put each record, and the order in which its metadata listed the
    topic's partitions (the client's own order, not the broker's: ``kgroup.partitioning.client_order``)."""

    partitions: tuple[int, ...]
    metadata_order: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PlacedTopics:
    """A controller's placer on topics in turn: the brokers in the order its ``ClusterDescriber`` gave
    them, and per topic the replicas of each partition or the exception (``"InvalidReplicationFactorException:
    …"``)."""

    usable: tuple[int, ...]
    topics: tuple[list[list[int]] | str, ...]


#: one member's partitions per topic, in the order a target-assignment record (or Kafka's maps) lists them
Record = tuple[tuple[TopicId, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class ServerMember:
    """One member of a KIP-848 group as the coordinator holds it when it computes a target assignment.

    ``topics`` are the subscribed topic ids that exist (the coordinator resolves names through the
    metadata image), in the order they are put into the ``HashSet``; members whose ``topics`` is the
    same tuple object share one set, on both sides. ``record`` is the current target assignment.
    """

    member_id: str
    topics: tuple[TopicId, ...]
    record: Record = ()
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class ServerAnswer:
    """Kafka's KIP-848 assignor on one group: ``GroupSpec.memberIds()`` order, the subscription type
    the spec had, each member's topics and partitions in the order Kafka's collections iterate them
    (what the next round starts from), ``System.nanoTime`` around each timed ``assign()``, or the
    exception the assignor threw in ``error``."""

    member_ids: tuple[str, ...]
    subscription_type: str
    assignment: dict[str, Record]
    nanos: tuple[int, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RegexAnswer:
    """Kafka's group coordinator on one subscribed-topic regex: the topics it matches, or the message
    of the INVALID_REGULAR_EXPRESSION it answers (``invalid``), or ``overflow`` when RE2/J's parser
    ran out of stack on it (the JVM's default thread stack)."""

    matches: tuple[str, ...] = ()
    invalid: str | None = None
    overflow: bool = False


@dataclass(frozen=True, slots=True)
class CoordinatorRecordJson:
    """One ``__consumer_offsets`` record as Kafka's generated converters write it as JSON: the record
    type (the key's version), the key's fields and the value's (``None``: a tombstone), camelCase as
    the message schemas name them; a uuid is Kafka's base64 string, bytes are base64."""

    type: int
    key: Mapping[str, Any]
    value: Mapping[str, Any] | None
    value_version: int = 0


@dataclass(frozen=True, slots=True)
class ServerGroup:
    """A ``server-*`` vector's input as rows: topic id → partitions, the members, each id's name."""

    topics: dict[TopicId, int]
    members: tuple[ServerMember, ...]
    names: dict[TopicId, str]

    def partition_strings(self, record: Record) -> list[str]:
        """``topic-partition`` strings sorted as the vectors sort them (``String.compareTo``, partition)."""
        pairs = sorted(
            ((self.names[t], p) for t, ps in record for p in ps), key=lambda x: (java_string_key(x[0]), x[1])
        )
        return [f"{t}-{p}" for t, p in pairs]


def server_vector_group(input: Mapping[str, Any], topic_ids: Mapping[str, str]) -> ServerGroup:
    """The rows of a ``server-*`` vector's ``input`` (FORMAT.md); a topic's id is its ``topicId`` or
    ``topic_ids[name]`` (the vector's ``expected.topicIds``). Subscribed names that are not topics of
    the input are left out of the member's ids, as the coordinator's lookup leaves them out."""
    ids = {name: TopicId.from_string(text) for name, text in topic_ids.items()}
    for topic in input["topics"]:
        if "topicId" in topic:
            ids[topic["name"]] = TopicId.from_string(topic["topicId"])
    topics = {ids[t["name"]]: int(t["partitions"]) for t in input["topics"]}
    existing = {t["name"] for t in input["topics"]}
    members = []
    for member in input["members"]:
        record: dict[TopicId, list[int]] = {}
        for text in member.get("assignment", ()):
            name, _, partition = str(text).rpartition("-")
            record.setdefault(ids[name], []).append(int(partition))
        members.append(
            ServerMember(
                member["memberId"],
                tuple(ids[name] for name in member["topics"] if name in existing),
                tuple((t, tuple(ps)) for t, ps in record.items()),
                member.get("instanceId"),
                member.get("rackId"),
            )
        )
    return ServerGroup(topics, tuple(members), {t: name for name, t in ids.items() if name in existing})


def kgroup_group_spec(
    members: Sequence[ServerMember],
    subscription: SubscriptionType | None = None,
    assignable: Mapping[TopicId, Sequence[int]] | None = None,
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
        assignable=None if assignable is None else {t: frozenset(ps) for t, ps in assignable.items()},
    )


def vector_input(request: AssignmentRequest, prior_max_generation: int | None = None) -> dict[str, Any]:
    """The vector ``input`` (FORMAT.md) of a kgroup request: member order kept, owned partitions and
    generations as subscription fields, user data left to the defaults (what a current client sends).

    A member's own ``user_data`` bytes are not carried over: a request that needs other user data
    has to be written as a vector by hand.
    """
    topics: list[dict[str, Any]] = []
    for name, meta in request.topics.items():
        topic: dict[str, Any] = {"name": name, "partitions": meta.partitions}
        if meta.racks is not None:
            topic["racks"] = [sorted(racks) for racks in meta.racks]
        topics.append(topic)
    members: list[dict[str, Any]] = []
    for m in request.members:
        member: dict[str, Any] = {"memberId": m.member_id, "topics": list(m.topics)}
        if m.owned:
            member["owned"] = [str(tp) for tp in m.owned]
        if m.generation != -1:
            member["generation"] = m.generation
        if m.group_instance_id is not None:
            member["groupInstanceId"] = m.group_instance_id
        if m.rack_id is not None:
            member["rackId"] = m.rack_id
        members.append(member)
    out: dict[str, Any] = {"topics": topics, "members": members}
    if request.prefer_rack_aware_logic:
        out["preferRackAwareLogic"] = True
    if prior_max_generation is not None:
        out["priorMaxGeneration"] = prior_max_generation
    return out


def _answer(raw: Mapping[str, Any]) -> OracleAnswer:
    if "error" in raw:
        return OracleAnswer(None, error=str(raw["error"]))
    members: Mapping[str, list[str]] = raw["assignment"]
    assignment = {member: [TopicPartition.parse(p) for p in parts] for member, parts in members.items()}
    return OracleAnswer(assignment, tuple(raw.get("memberIterationOrder", ())))


class KafkaOracle(Started):
    """Apache Kafka ``version``'s own code in one JVM, for as long as the context lasts.

    ``libs`` defaults to the pinned release (:func:`kafka_libs`, resolved with Maven on first use).
    Each call sends one batch and waits at most ``call_timeout_s`` for the answer.
    """

    def __init__(
        self,
        libs: KafkaLibs | None = None,
        *,
        call_timeout_s: float = CALL_TIMEOUT_S,
        start_timeout_s: float = START_TIMEOUT_S,
        heap: str = "512m",
    ) -> None:
        self._libs = libs
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.heap = heap
        self.version = ""
        self.calls = 0
        self.items = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buffer = b""
        #: why the JVM was stopped under a caller (a call past its bound, the JVM dead), said again by
        #: every later call until :meth:`start` runs it anew
        self.failure: str | None = None

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> KafkaOracle:
        if self._process is not None:
            raise OracleError("KafkaOracle: already started; call stop() first")
        self.failure = None
        try:
            libs = self._libs or kafka_libs(KAFKA_VERSION)
        except KafkaUnavailable as exc:
            raise OracleError(str(exc)) from None
        self._libs = libs
        jar = self._harness(libs)
        self._stderr = tempfile.TemporaryFile(prefix="kgroup-oracle-stderr-")  # noqa: SIM115 - closed in stop
        command = [
            libs.java,
            f"-Xmx{self.heap}",
            *_JVM_OPTIONS,
            "-cp",
            os.pathsep.join([str(jar), libs.classpath]),
            "AssignorOracle",
        ]
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,
            )
        except OSError as exc:
            self._close_stderr()
            raise OracleError(f"the Kafka oracle's JVM did not start: {exc}") from None
        try:
            hello = json.loads(self._read_line(time.monotonic() + self.start_timeout_s, "start"))
            self.version = str(hello["ready"])
        except (ValueError, KeyError, TypeError):
            self.stop()
            raise OracleDied("the Kafka oracle's JVM did not greet as expected") from None
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close the JVM's stdin (it exits at end of input); kill it if it has not exited in 5 s."""
        process, self._process = self._process, None
        if process is not None:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            wait_or_kill(process, 5)
            if process.stdout is not None:
                process.stdout.close()
        self._close_stderr()
        self._buffer = b""

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    # --- what a caller asks ------------------------------------------------------------------------

    def assign(
        self,
        assignor: str,
        request: AssignmentRequest | Mapping[str, Any],
        prior_max_generation: int | None = None,
    ) -> OracleAnswer:
        """Kafka's ``assignor`` on one group (a kgroup request, or a vector's ``input``)."""
        return self.assign_many([(assignor, request)], prior_max_generation)[0]

    def assign_many(
        self,
        groups: Sequence[tuple[str, AssignmentRequest | Mapping[str, Any]]],
        prior_max_generation: int | None = None,
    ) -> list[OracleAnswer]:
        """Kafka's answers for many groups in one round trip; each on a fresh assignor instance."""
        batch = []
        for assignor, request in groups:
            if assignor not in CONSUMER_ASSIGNORS:
                known = ", ".join(CONSUMER_ASSIGNORS)
                raise OracleError(f"unknown assignor {assignor!r}; use one of {known}")
            data = (
                vector_input(request, prior_max_generation)
                if isinstance(request, AssignmentRequest)
                else dict(request)
            )
            batch.append({"assignor": assignor, "input": data})
        return [_answer(raw) for raw in self._call("assign", batch)]

    def murmur2(self, keys: Sequence[bytes], partition_counts: Sequence[int] = ()) -> list[Murmur2Answer]:
        """Kafka's murmur2 of each key, and ``partitionForKey(key, n)`` for each ``partition_counts`` n."""
        for n in partition_counts:
            if not 1 <= n <= 2**31 - 1:
                raise OracleError(f"partition count {n} is not between 1 and Java's Integer.MAX_VALUE")
        counts = list(partition_counts)
        results = self._call("murmur2", [{"keyHex": key.hex(), "numPartitions": counts} for key in keys])
        return [
            Murmur2Answer(
                int(r["murmur2"]), int(r["toPositive"]), {int(n): int(p) for n, p in r["partitions"].items()}
            )
            for r in (_no_error(r) for r in results)
        ]

    def round_robin_partitioner(self, num_partitions: int, available: Sequence[int], calls: int) -> list[int]:
        """``calls`` successive ``RoundRobinPartitioner.partition`` calls on a fresh instance, one topic
        of ``num_partitions`` whose partitions outside ``available`` have no leader."""
        item = {"numPartitions": num_partitions, "availablePartitions": list(available), "calls": calls}
        return [int(p) for p in _no_error(self._call("rr-partitioner", [item])[0])["partitions"]]

    def server_assign(
        self,
        assignor: str,
        topics: Mapping[TopicId, int],
        members: Sequence[ServerMember],
        subscription: SubscriptionType | None = None,
        *,
        assignable: Mapping[TopicId, Sequence[int]] | None = None,
        warmup: int = 0,
        repeat: int = 0,
    ) -> ServerAnswer:
        """The KIP-848 coordinator's ``assignor`` (``uniform`` / ``range``, or the share groups'
        ``simple``) on one group: ``topics`` gives each topic id's partition count, ``members`` the
        rows in the group's own member order.

        ``subscription`` defaults to ``ModernGroup.subscriptionType``'s rule over the members' ids (pass
        it when a member subscribes to a topic that does not exist yet: the coordinator counts names).
        ``warmup`` untimed and then ``repeat`` timed ``assign()`` calls run first, inside the JVM; their
        times are :attr:`ServerAnswer.nanos`. ``assignable`` is a share group's initialised partitions
        (``GroupSpecImpl``'s ``topicPartitionAllowedMap``, for the share groups' ``simple``)."""
        if assignor not in SERVER_ASSIGNORS:
            known = ", ".join(SERVER_ASSIGNORS)
            raise OracleError(f"unknown server assignor {assignor!r}; use one of {known}")
        # members with the same subscription (the same tuple object) share it, in the request and in Java
        index: dict[int, int] = {}
        shared: list[list[str]] = []
        rows: list[dict[str, Any]] = []
        for m in members:
            at = index.get(id(m.topics))
            if at is None:
                at = index[id(m.topics)] = len(shared)
                shared.append([str(t) for t in m.topics])
            rows.append(
                {
                    "id": m.member_id,
                    "subscription": at,
                    "assignment": [[str(t), list(ps)] for t, ps in m.record],
                    "instanceId": m.instance_id,
                    "rackId": m.rack_id,
                }
            )
        item: dict[str, Any] = {
            "assignor": assignor,
            "topics": [{"id": str(t), "partitions": n} for t, n in topics.items()],
            "subscriptions": shared,
            "members": rows,
            "warmup": warmup,
            "repeat": repeat,
        }
        if subscription is not None:
            item["subscriptionType"] = subscription.value
        if assignable is not None:
            item["assignable"] = [[str(t), list(ps)] for t, ps in assignable.items()]
        raw = self._call("server-assign", [item])[0]
        if "memberIds" not in raw:
            raise OracleError(f"the Kafka oracle could not build the group: {raw.get('error')}")
        return ServerAnswer(
            member_ids=tuple(raw["memberIds"]),
            subscription_type=str(raw["subscriptionType"]),
            assignment={m: _record(r) for m, r in raw.get("assignment", {}).items()},
            nanos=tuple(int(n) for n in raw.get("nanos", ())),
            error=raw.get("error"),
        )

    def produce(
        self,
        bootstrap_servers: str,
        topic: str,
        records: int,
        *,
        partitioner: str | None = None,
        batch_size: int = 16384,
        key: bytes | None = None,
    ) -> Produced:
        """Send ``records`` records one at a time (each waits for its acknowledgement) with a real
        ``KafkaProducer`` (``partitioner`` = its ``partitioner.class``, ``None`` = the built-in one)."""
        item = {
            "bootstrap": bootstrap_servers,
            "topic": topic,
            "records": records,
            "partitioner": partitioner,
            "batchSize": batch_size,
            "keyHex": None if key is None else key.hex(),
        }
        raw = _no_error(self._call("produce", [item])[0])
        return Produced(tuple(int(p) for p in raw["partitions"]), tuple(int(p) for p in raw["metadataOrder"]))

    def record_bytes(self, records: Sequence[CoordinatorRecordJson]) -> list[tuple[bytes, bytes | None]]:
        """The key and value bytes Kafka's ``GroupCoordinatorRecordSerde`` writes for each record; a
        record is its type (the key's version), the key's and the value's JSON as Kafka's generated
        ``*JsonConverter`` read it (``None``: a tombstone)."""
        batch = [
            {
                "type": r.type,
                "key": dict(r.key),
                "value": None if r.value is None else dict(r.value),
                "valueVersion": r.value_version,
            }
            for r in records
        ]
        out = []
        for answer in self._call("record-bytes", batch):
            raw = _no_error(answer)
            value = raw["value"]
            out.append((bytes.fromhex(raw["key"]), None if value is None else bytes.fromhex(value)))
        return out

    def record_read(self, entries: Sequence[tuple[bytes, bytes | None]]) -> list[CoordinatorRecordJson]:
        """What Kafka's ``GroupCoordinatorRecordSerde`` reads from each (key, value), as the JSON its
        converters write (a tagged field at its default is left out); :class:`OracleError` when Kafka
        refuses the bytes."""
        batch = [{"key": k.hex(), "value": None if v is None else v.hex()} for k, v in entries]
        return [
            CoordinatorRecordJson(int(raw["type"]), raw["key"], raw["value"])
            for raw in (_no_error(r) for r in self._call("record-read", batch))
        ]

    def transaction_record_bytes(self, items: Sequence[Mapping[str, Any]]) -> list[tuple[bytes, bytes]]:
        """The key and value bytes Kafka's ``TransactionLog`` writes for each transition, given as
        ``TransactionRecords.java`` describes (``"txn-record-bytes"``)."""
        return [
            self._hex_pair(_no_error(r)) for r in self._call("txn-record-bytes", [dict(i) for i in items])
        ]

    def transaction_add_partitions_bytes(
        self, items: Sequence[Mapping[str, Any]]
    ) -> list[tuple[bytes, bytes]]:
        """The record Kafka's own ``TransactionMetadata`` writes after AddPartitionsToTxn steps
        (``"txn-add-partitions-bytes"``: the set's history is Kafka's)."""
        batch = [dict(i) for i in items]
        return [self._hex_pair(_no_error(r)) for r in self._call("txn-add-partitions-bytes", batch)]

    def transaction_record_read(self, entries: Sequence[tuple[bytes, bytes | None]]) -> list[dict[str, Any]]:
        """What Kafka's ``TransactionLog.read`` reads from each (key, value) (``"txn-record-read"``)."""
        batch = [{"key": k.hex(), "value": None if v is None else v.hex()} for k, v in entries]
        return [dict(_no_error(r)) for r in self._call("txn-record-read", batch)]

    def transaction_metadata_steps(self, items: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
        """Kafka's ``TransactionMetadata`` run through each item's transitions (``"txn-metadata-steps"``):
        per step, the metadata after it or its error."""
        batch = [dict(i) for i in items]
        return [list(_no_error(r)["steps"]) for r in self._call("txn-metadata-steps", batch)]

    @staticmethod
    def _hex_pair(raw: Mapping[str, Any]) -> tuple[bytes, bytes]:
        return bytes.fromhex(raw["key"]), bytes.fromhex(raw["value"])

    def topic_regexes(self, patterns: Sequence[str], topics: Sequence[str]) -> list[RegexAnswer]:
        """Each pattern as Kafka's group coordinator takes it as a ``SubscribedTopicRegex``: refused
        with its INVALID_REGULAR_EXPRESSION message, or the ``topics`` RE2/J matches it with."""
        names = list(topics)
        out = []
        for item in self._call("topic-regex", [{"pattern": p, "topics": names} for p in patterns]):
            raw = _no_error(item)
            out.append(
                RegexAnswer(
                    tuple(raw.get("matches", ())), raw.get("invalid"), bool(raw.get("overflow", False))
                )
            )
        return out

    def striped_place(
        self, brokers: Sequence[UsableBroker], topics: Sequence[tuple[int, int]], seed: int
    ) -> PlacedTopics:
        """``StripedReplicaPlacer(new Random(seed))`` placing ``topics`` (partitions, replication factor)
        one after the other; ``brokers`` register with a fresh ``BrokerHeartbeatManager`` in this order
        (fenced or not) and its ``usableBrokers()`` is the describer."""
        return self.striped_place_many([(brokers, topics, seed)])[0]

    def striped_place_many(
        self, cases: Sequence[tuple[Sequence[UsableBroker], Sequence[tuple[int, int]], int]]
    ) -> list[PlacedTopics]:
        """:meth:`striped_place` for many clusters in one round trip, each with its own controller."""
        batch = [
            {
                "seed": seed,
                "brokers": [{"id": b.id, "rack": b.rack, "fenced": b.fenced} for b in brokers],
                "topics": [{"partitions": p, "replicationFactor": rf} for p, rf in topics],
            }
            for brokers, topics, seed in cases
        ]
        out = []
        for answer in self._call("striped-place", batch):
            raw = _no_error(answer)
            placed: list[list[list[int]] | str] = [
                str(t["error"]) if "error" in t else [[int(b) for b in r] for r in t["assignment"]]
                for t in raw["topics"]
            ]
            out.append(PlacedTopics(tuple(int(b) for b in raw["usable"]), tuple(placed)))
        return out

    def client_partition_order(
        self,
        updates: Sequence[tuple[bool, Sequence[tuple[str, Sequence[int], Sequence[int]]]]],
        topics: Sequence[str],
    ) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
        """A fresh ``ProducerMetadata`` given Metadata answers in turn — each (partial, [(topic, its
        partitions in the answer's order, the leaderless ones)]) — then, per asked topic,
        ``Cluster.partitionsForTopic`` and ``availablePartitionsForTopic`` as partition ids in order."""
        item = {
            "updates": [
                {
                    "partial": partial,
                    "topics": [
                        {"name": name, "partitions": list(parts), "leaderless": list(leaderless)}
                        for name, parts, leaderless in listed
                    ],
                }
                for partial, listed in updates
            ],
            "topics": list(topics),
        }
        raw = _no_error(self._call("client-partition-order", [item])[0])
        return {
            t: (tuple(int(p) for p in raw["all"][t]), tuple(int(p) for p in raw["available"][t]))
            for t in topics
        }

    def map_orders(self, keys: list[tuple[uuid.UUID, str, int]]) -> dict[str, list[int]]:
        """The iteration orders of ``TopicIdPartition`` keys (topic id, topic, partition) put in this
        order, a key perhaps more than once, into Scala 2.13's ``immutable.Map`` and ``mutable.HashMap``,
        a ``mutable.HashMap.from`` that map and a ``java.util.HashMap`` (as indices of each key's first
        appearance), and each key's ``hashCode`` (``hashes``): what ``kgroup.scalacompat`` models."""
        item = {"keys": [[_signed64(i.int >> 64), _signed64(i.int & (2**64 - 1)), t, p] for i, t, p in keys]}
        raw = _no_error(self._call("scala-map-order", [item])[0])
        return {name: [int(v) for v in values] for name, values in raw.items()}

    def set_orders(self, names: list[str], keep: set[str]) -> dict[str, list[str]]:
        """Scala 2.13's ``immutable.Set`` orders of ``names`` (``toSet``, a name perhaps more than once):
        ``set``, its ``filter`` by ``keep`` (``kept``) and by its negation (``dropped``), and the kept
        set's ``map`` to equal new strings (``kept_mapped``): what ``kgroup.scalacompat.ImmutableSetOrder``
        models."""
        raw = _no_error(self._call("scala-set-order", [{"names": names, "keep": sorted(keep)}])[0])
        return {name: [str(v) for v in values] for name, values in raw.items()}

    def has_class(self, name: str) -> bool:
        """Whether the release has class ``name`` (e.g. to see what moved or was removed)."""
        return bool(_no_error(self._call("has-class", [{"name": name}])[0])["present"])

    # --- the JVM -----------------------------------------------------------------------------------

    @staticmethod
    def _harness(libs: KafkaLibs) -> Path:
        here = Path(__file__).parent / "java"
        sources = [here / name for name in _SOURCES]
        try:
            return compile_jar(sources, libs.jars(), cache_root() / "oracle", "kgroup-kafka-oracle")
        except (CompileFailed, JavaToolMissing) as exc:
            raise OracleError(f"the Kafka oracle's harness could not be built: {exc}") from None

    def _call(self, op: str, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        process = self._process
        if process is None or process.stdin is None:
            if self.failure is not None:
                raise OracleError(f"KafkaOracle: stopped after an earlier call: {self.failure}")
            raise OracleError("KafkaOracle: not started; use it as a context manager or call start()")
        line = json.dumps({"op": op, "batch": batch}, ensure_ascii=False).encode() + b"\n"
        deadline = time.monotonic() + self.call_timeout_s
        try:
            process.stdin.write(line)
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("while being sent a request") from None
        reply = json.loads(self._read_line(deadline, op))
        if "fatal" in reply:
            raise OracleError(f"the Kafka oracle refused the request: {reply['fatal']}")
        results = reply["results"]
        if len(results) != len(batch):
            raise OracleError(f"the Kafka oracle answered {len(results)} items for {len(batch)}")
        self.calls += 1
        self.items += len(batch)
        return list(results)

    def _read_line(self, deadline: float, what: str) -> str:
        process = self._process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                message = (
                    f"the Kafka oracle did not answer {what!r} within the bound; its JVM was stopped"
                    f" ({self._last_stderr()})"
                )
                self._kill()
                self.failure = message
                raise OracleDied(message)
            ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
            if not ready:
                if process.poll() is not None:
                    raise self._died(f"while answering {what!r}")
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                process.wait(timeout=10)
                raise self._died(f"while answering {what!r}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def _died(self, when: str) -> OracleDied:
        process = self._process
        code = process.poll() if process is not None else None
        pid = process.pid if process is not None else "?"
        message = f"the Kafka oracle's JVM (pid {pid}) exited with code {code} {when}: {self._last_stderr()}"
        self._kill()
        self.failure = message
        return OracleDied(message)

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        self.stop()

    def _last_stderr(self) -> str:
        if self._stderr is None:
            return "no stderr"
        try:
            self._stderr.seek(0)
            text = self._stderr.read().decode(errors="replace")
        except (OSError, ValueError):
            return "no stderr"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        picked = [line for line in lines if "Exception" in line or "Error" in line] or lines
        return " | ".join(picked[-3:])[:600] or "nothing on stderr"

    def _close_stderr(self) -> None:
        stderr, self._stderr = self._stderr, None
        if stderr is not None:
            stderr.close()


def _record(raw: list[list[Any]]) -> Record:
    return tuple((TopicId.from_string(topic), tuple(int(p) for p in partitions)) for topic, partitions in raw)


def _no_error(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    if "error" in raw:
        raise OracleError(f"Apache Kafka threw {raw['error']}")
    return raw
