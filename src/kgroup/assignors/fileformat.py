"""The JSON assignment file: one group, one assignor, optionally Kafka's expected answer.

The format is the one of Kafka's reference vectors (``tests/vectors/FORMAT.md``)::

    {"assignor": "range",
     "input": {"topics": [{"name": "t1", "partitions": 3, "racks": [["a"], ["b"], ["a", "b"]]}],
               "members": [{"memberId": "c1", "topics": ["t1"], "owned": ["t1-0"], "generation": 4,
                            "rackId": "a", "groupInstanceId": "i1"}],
               "preferRackAwareLogic": false, "priorMaxGeneration": 5},
     "expected": {"assignment": {"c1": ["t1-0", "t1-1", "t1-2"]}}}

kgroup adds one member field for the ZooKeeper-era assignors: ``"streams": {"t1": 2}`` (the
consumer's ``topicCountMap``; default one stream per subscribed topic), read only by
``legacy-range`` / ``legacy-roundrobin``.

Member ``userData`` follows FORMAT.md: absent means "what a current client sends" for the chosen
assignor; it is encoded to bytes with the sticky assignors' own encoders, imported only when the
assignor is ``sticky`` or ``cooperative-sticky``. Every problem in a file is reported as one
:class:`~kgroup.model.KgroupError` line naming the field and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from kgroup.assignors.api import AssignmentRequest, Assignor
from kgroup.assignors.registry import available_assignors, create_assignor
from kgroup.javacompat import java_string_key
from kgroup.model import Assignment, KgroupError, Member, TopicMetadata, TopicPartition, sorted_partitions

__all__ = [
    "AssignmentFile",
    "CheckReport",
    "CheckResult",
    "MemberSpec",
    "Mismatch",
    "check_path",
    "check_vector",
    "compare_assignments",
    "decode_json",
    "dump_assignment",
    "java_exception_of",
    "load_assignment_file",
    "make_assignor",
    "parse_assignment_file",
    "run_assignment_file",
]

_TOP_KEYS = {"assignor", "input", "expected", "source", "description"}
#: Java's Integer.MAX_VALUE: a partition count or number is an ``int`` in Kafka
JAVA_INT_MAX = 2**31 - 1
#: the most partitions (summed over topics) one file may hold: a million is already beyond the
#: largest groups Kafka runs; ten million still fits a few GB of memory (docs/assignors.md)
MAX_TOTAL_PARTITIONS = 10_000_000
_INPUT_KEYS = {"topics", "members", "preferRackAwareLogic", "priorMaxGeneration"}
_TOPIC_KEYS = {"name", "partitions", "racks"}
_MEMBER_KEYS = {
    "memberId",
    "topics",
    "owned",
    "generation",
    "groupInstanceId",
    "rackId",
    "userData",
    "streams",
}
_STICKY = "sticky"
_COOPERATIVE = "cooperative-sticky"
_LEGACY = ("legacy-range", "legacy-roundrobin")


class _Unset:
    """Marks a member's ``userData`` as absent (distinct from an explicit ``null``)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as written in the file: the member (without user data), its raw ``userData``
    (``UNSET`` when absent) and its legacy stream counts (``None`` when absent)."""

    member: Member
    user_data: Any = UNSET
    streams: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class AssignmentFile:
    """A parsed assignment file. ``request_for(name)`` builds the request for any assignor, so one
    file can be run under several strategies (``kgroup assign --compare``)."""

    assignor: str | None
    topics: Mapping[str, TopicMetadata]
    members: tuple[MemberSpec, ...]
    prefer_rack_aware_logic: bool = False
    prior_max_generation: int | None = None
    expected: Assignment | None = None
    expected_error: str | None = None
    source: str = "input"

    @property
    def request(self) -> AssignmentRequest:
        """The request for the file's own assignor."""
        if self.assignor is None:
            raise KgroupError(f'{self.source}: \'assignor\' is missing; add "assignor": "range" or name one')
        return self.request_for(self.assignor)

    def request_for(self, assignor: str) -> AssignmentRequest:
        members = [_with_user_data(spec, assignor, self.source) for spec in self.members]
        if assignor in _LEGACY:
            from kgroup.assignors.legacy import LegacyAssignmentRequest

            streams = {s.member.member_id: dict(s.streams) for s in self.members if s.streams is not None}
            return LegacyAssignmentRequest(
                members, self.topics, self.prefer_rack_aware_logic, streams=streams
            )
        return AssignmentRequest(members, self.topics, self.prefer_rack_aware_logic)


# --- parsing ------------------------------------------------------------------------------------


def load_assignment_file(path: str | Path, *, assignor: str | None = None) -> AssignmentFile:
    """Read and validate an assignment file; ``assignor`` overrides the file's own."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KgroupError(f"{path}: cannot read the file ({exc.strerror or exc}); check the path") from None
    except UnicodeDecodeError:
        raise KgroupError(f"{path}: is not UTF-8 text; give a JSON assignment file") from None
    data = decode_json(text, str(path))
    return parse_assignment_file(data, source=str(path), assignor=assignor)


def decode_json(text: str, source: str) -> Any:
    """JSON text → data; malformed or absurdly nested JSON is one :class:`KgroupError` line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise KgroupError(
            f"{source}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; "
            "fix the JSON syntax"
        ) from None
    except RecursionError:
        raise KgroupError(
            f"{source}: JSON nested too deeply to read; give an assignment file (see docs/assignors.md)"
        ) from None


def parse_assignment_file(data: Any, *, source: str = "input", assignor: str | None = None) -> AssignmentFile:
    """Validate decoded JSON (a dict) as an assignment file."""
    where = source
    _expect_type(data, dict, where, "a JSON object with 'assignor' and 'input'")
    _reject_unknown(data, _TOP_KEYS, where)
    name = data.get("assignor")
    if name is not None:
        _expect_type(name, str, f"{where}: 'assignor'", 'a string such as "range"')
    if assignor is not None:
        name = assignor
    if "input" not in data:
        raise KgroupError(
            f'{where}: \'input\' is missing; add "input": {{"topics": [...], "members": [...]}}'
        )
    raw = data["input"]
    _expect_type(raw, dict, f"{where}: 'input'", "an object with 'topics' and 'members'")
    _reject_unknown(raw, _INPUT_KEYS, f"{where}: 'input'")
    if "topics" not in raw:
        raise KgroupError(
            f'{where}: input.topics: is missing; add "topics": [{{"name": "t1", "partitions": 3}}]'
        )
    topics = _parse_topics(raw["topics"], f"{where}: input.topics")
    members = _parse_members(raw.get("members"), f"{where}: input.members", topics)
    prefer = raw.get("preferRackAwareLogic", False)
    _expect_type(prefer, bool, f"{where}: input.preferRackAwareLogic", "true or false")
    prior = raw.get("priorMaxGeneration")
    if prior is not None:
        _expect_int(prior, f"{where}: input.priorMaxGeneration")
    expected, expected_error = _parse_expected(data.get("expected"), f"{where}: expected")
    return AssignmentFile(
        assignor=name,
        topics=topics,
        members=members,
        prefer_rack_aware_logic=prefer,
        prior_max_generation=prior,
        expected=expected,
        expected_error=expected_error,
        source=source,
    )


def _parse_topics(raw: Any, where: str) -> dict[str, TopicMetadata]:
    _expect_type(raw, list, where, 'a list of {"name": ..., "partitions": N}')
    topics: dict[str, TopicMetadata] = {}
    total = 0
    for i, entry in enumerate(raw):
        here = f"{where}[{i}]"
        _expect_type(entry, dict, here, "an object with 'name' and 'partitions'")
        _reject_unknown(entry, _TOPIC_KEYS, here)
        name = _required(entry, "name", here)
        _expect_type(name, str, f"{here}.name", "a non-empty string")
        if not name:
            raise KgroupError(f"{here}.name: is empty; give every topic a non-empty name")
        if name in topics:
            raise KgroupError(f"{here}: topic {name!r} is listed twice; list each topic once")
        count = _required(entry, "partitions", here)
        _expect_int(count, f"{here}.partitions")
        if count < 0:
            raise KgroupError(f"{here}.partitions: is {count}; a partition count must be 0 or more")
        if count > JAVA_INT_MAX:
            raise KgroupError(
                f"{here}.partitions: is {count}, beyond Java's int; give at most {JAVA_INT_MAX:,}"
            )
        total += count
        if total > MAX_TOTAL_PARTITIONS:
            raise KgroupError(
                f"{here}.partitions: the file's topics hold {total:,} partitions, more than kgroup assigns "
                f"in one run ({MAX_TOTAL_PARTITIONS:,}); give fewer partitions"
            )
        racks: tuple[frozenset[str], ...] | None = None
        if entry.get("racks") is not None:
            racks = _parse_racks(entry["racks"], count, f"{here}.racks")
        topics[name] = TopicMetadata(name, count, racks)
    return topics


def _parse_racks(raw: Any, count: int, where: str) -> tuple[frozenset[str], ...]:
    _expect_type(raw, list, where, "one list of replica racks per partition")
    if len(raw) != count:
        raise KgroupError(
            f"{where}: has {len(raw)} entries but the topic has {count} partitions; give one per partition"
        )
    out: list[frozenset[str]] = []
    for p, replicas in enumerate(raw):
        _expect_type(replicas, list, f"{where}[{p}]", "a list of rack names (null for a rack-less replica)")
        for rack in replicas:
            if rack is not None and not isinstance(rack, str):
                raise KgroupError(f"{where}[{p}]: rack {rack!r} is not a string; use a rack name or null")
        out.append(frozenset(r for r in replicas if r is not None))
    return tuple(out)


def _parse_members(
    raw: Any, where: str, known_topics: Mapping[str, TopicMetadata]
) -> tuple[MemberSpec, ...]:
    if raw is None:
        raise KgroupError(f'{where}: is missing; add "members": [{{"memberId": "c1", "topics": [...]}}]')
    _expect_type(raw, list, where, "a list of members")
    seen: set[str] = set()
    out: list[MemberSpec] = []
    for i, entry in enumerate(raw):
        here = f"{where}[{i}]"
        _expect_type(entry, dict, here, "an object with 'memberId' and 'topics'")
        _reject_unknown(entry, _MEMBER_KEYS, here)
        member_id = entry.get("memberId")
        if member_id is None:
            raise KgroupError(f"{here}: has no 'memberId'; give every member an id")
        _expect_type(member_id, str, f"{here}.memberId", "a non-empty string")
        if not member_id:
            raise KgroupError(f"{here}.memberId: is empty; give every member a non-empty id")
        if member_id in seen:
            raise KgroupError(f"{here}.memberId: {member_id!r} appears twice; give every member a unique id")
        seen.add(member_id)
        here = f"{where}[{member_id!r}]"
        topics = _required(entry, "topics", here)
        _expect_type(topics, list, f"{here}.topics", "a list of topic names")
        for t in topics:
            _expect_type(t, str, f"{here}.topics", "a list of topic names (strings)")
        owned_raw = entry.get("owned", [])
        _expect_type(owned_raw, list, f"{here}.owned", 'a list of "topic-N" strings')
        owned = tuple(_parse_partition(s, f"{here}.owned") for s in owned_raw)
        for tp in owned:
            # A topic absent from 'topics' may have been deleted (Kafka drops those claims); a
            # partition beyond a listed topic's count never existed (Kafka cannot shrink a topic).
            if tp.topic in known_topics and tp.partition >= (count := known_topics[tp.topic].partitions):
                numbered = f", numbered 0..{count - 1}" if count else ""
                raise KgroupError(
                    f"{here}.owned: {tp} does not exist ({tp.topic!r} has {count} partitions{numbered}); "
                    "fix or drop it"
                )
        generation = entry.get("generation", -1)
        if generation is None:
            generation = -1
        _expect_int(generation, f"{here}.generation")
        instance = entry.get("groupInstanceId")
        if instance is not None:
            _expect_type(instance, str, f"{here}.groupInstanceId", "a string or null")
        rack = entry.get("rackId")
        if rack is not None:
            _expect_type(rack, str, f"{here}.rackId", "a string or null")
        user_data = entry.get("userData", UNSET)
        if user_data is not UNSET and user_data is not None:
            _expect_type(user_data, dict, f"{here}.userData", 'null or an object like {"generation": 3}')
        streams = _parse_streams(entry.get("streams"), topics, f"{here}.streams")
        member = Member(
            member_id=member_id,
            topics=tuple(topics),
            owned=owned,
            generation=generation,
            group_instance_id=instance,
            rack_id=rack or None,  # "" is no rack, as Kafka's assignors treat it
        )
        out.append(MemberSpec(member, user_data, streams))
    return tuple(out)


def _parse_streams(raw: Any, topics: Sequence[str], where: str) -> dict[str, int] | None:
    if raw is None:
        return None
    _expect_type(raw, dict, where, 'an object of topic -> stream count, e.g. {"t1": 2}')
    for topic, count in raw.items():
        _expect_int(count, f"{where}.{topic}")
        if count < 1:
            raise KgroupError(f"{where}.{topic}: is {count}; a stream count must be 1 or more")
        if topic not in topics:
            raise KgroupError(
                f"{where}.{topic}: the member does not subscribe to {topic!r}; add it to 'topics'"
            )
    return dict(raw)


def _parse_partition(text: Any, where: str) -> TopicPartition:
    _expect_type(text, str, where, 'a list of "topic-N" strings')
    topic, sep, number = text.rpartition("-")
    if not sep or not topic or not number.isdigit():
        raise KgroupError(f"{where}: {text!r} is not of the form 'topic-N'; write e.g. \"t1-0\"")
    return TopicPartition(topic, int(number))


def _parse_expected(raw: Any, where: str) -> tuple[Assignment | None, str | None]:
    if raw is None:
        return None, None
    _expect_type(raw, dict, where, "an object with 'assignment'")
    if "error" in raw and "assignment" not in raw:
        error = raw["error"]
        _expect_type(error, str, f"{where}.error", "a string")
        return None, error
    if "assignment" not in raw:
        return None, None
    assignment = raw["assignment"]
    _expect_type(assignment, dict, f"{where}.assignment", "an object of member -> partitions")
    out: Assignment = {}
    for member_id, partitions in assignment.items():
        _expect_type(partitions, list, f"{where}.assignment.{member_id}", 'a list of "topic-N" strings')
        out[member_id] = [_parse_partition(p, f"{where}.assignment.{member_id}") for p in partitions]
    return out, None


def _with_user_data(spec: MemberSpec, assignor: str, source: str) -> Member:
    """The member with the user data a client of ``assignor`` would send (FORMAT.md's defaults)."""
    m = spec.member
    where = f"{source}: input.members[{m.member_id!r}].userData"
    if assignor == _STICKY:
        encode_sticky_user_data = _sticky_encoder("encode_sticky_user_data")
        raw = spec.user_data
        if raw is UNSET:
            if not m.owned and m.generation == -1:
                return m
            return _replace_user_data(m, encode_sticky_user_data(m.owned, m.generation))
        if raw is None:
            return m
        partitions = raw.get("partitions", [])
        _expect_type(partitions, list, f"{where}.partitions", 'a list of "topic-N" strings')
        parsed = [_parse_partition(p, f"{where}.partitions") for p in partitions]
        generation = raw.get("generation")
        if generation is not None:
            _expect_int(generation, f"{where}.generation")
        return _replace_user_data(m, encode_sticky_user_data(parsed, generation))
    if assignor == _COOPERATIVE:
        encode_cooperative_user_data = _sticky_encoder("encode_cooperative_user_data")
        raw = spec.user_data
        if raw is None:
            return m
        generation = m.generation if raw is UNSET else raw.get("generation")
        if generation is None:  # e.g. a sticky V0 user data run under cooperative-sticky
            generation = -1
        _expect_int(generation, f"{where}.generation")
        return _replace_user_data(m, encode_cooperative_user_data(generation))
    return m


def _sticky_encoder(name: str) -> Any:
    """One of the sticky assignors' user-data encoders, imported only when a sticky assignor runs."""
    try:
        userdata = import_module("kgroup.assignors.sticky.userdata")
    except ImportError as exc:
        raise KgroupError(
            f"the sticky assignors are not available ({exc}); choose another assignor"
        ) from None
    return getattr(userdata, name)


def _replace_user_data(m: Member, data: bytes) -> Member:
    return Member(m.member_id, m.topics, m.owned, m.generation, m.group_instance_id, m.rack_id, data)


def _required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise KgroupError(f"{where}: '{key}' is missing; add it")
    return obj[key]


def _expect_type(value: Any, kind: type, where: str, what: str) -> None:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise KgroupError(f"{where}: got {_json_kind(value)}; expected {what}")


def _expect_int(value: Any, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise KgroupError(f"{where}: got {_json_kind(value)}; expected an integer")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _reject_unknown(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise KgroupError(f"{where}: unknown field {unknown[0]!r}; use only {', '.join(sorted(allowed))}")


# --- output -------------------------------------------------------------------------------------


def dump_assignment(assignment: Mapping[str, Sequence[TopicPartition]]) -> dict[str, dict[str, list[str]]]:
    """``{"assignment": {member: ["t-p", ...]}}`` with each list sorted by topic (Java order), partition."""
    return {"assignment": {m: [str(tp) for tp in sorted_partitions(ps)] for m, ps in assignment.items()}}


# --- running and checking -----------------------------------------------------------------------


def make_assignor(name: str, prior_max_generation: int | None = None) -> Assignor:
    """A fresh assignor; ``prior_max_generation`` goes through the ``set_prior_max_generation`` hook.

    The hook models Kafka's ``AbstractStickyAssignor.maxGeneration``, instance state a reused assignor
    carries over between rebalances; assignors without that state (Range, RoundRobin) ignore it.
    """
    try:
        assignor = create_assignor(name)
    except ImportError as exc:
        raise KgroupError(f"assignor {name!r} could not be loaded ({exc}); choose another assignor") from None
    if prior_max_generation is not None:
        hook = getattr(assignor, "set_prior_max_generation", None)
        if callable(hook):
            hook(prior_max_generation)
    return assignor


def run_assignment_file(af: AssignmentFile, assignor: str | None = None) -> Assignment:
    """Run ``assignor`` (default: the file's own) on the file's group, on a fresh instance."""
    name = assignor or af.assignor
    if name is None:
        raise KgroupError(f'{af.source}: \'assignor\' is missing; add "assignor": "range" or name one')
    instance = make_assignor(name, af.prior_max_generation)
    return instance.assign(af.request_for(name))


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One member whose partitions differ from the expected ones (both sorted)."""

    member: str
    expected: tuple[TopicPartition, ...] | None
    got: tuple[TopicPartition, ...] | None


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of running one vector: exact, or the differing members, or the error raised.

    ``invalid`` marks a file that could not be checked at all (unreadable, malformed, no
    ``expected``): bad input, not a disagreement with Kafka."""

    name: str
    assignor: str
    exact: bool
    mismatches: tuple[Mismatch, ...] = ()
    error: str | None = None
    invalid: bool = False


def compare_assignments(expected: Assignment, got: Assignment) -> list[Mismatch]:
    """Members whose partitions differ (order-insensitive per member; a missing member differs)."""
    out: list[Mismatch] = []
    for member in sorted(set(expected) | set(got), key=java_string_key):
        want = tuple(sorted_partitions(expected[member])) if member in expected else None
        have = tuple(sorted_partitions(got[member])) if member in got else None
        if want != have:
            out.append(Mismatch(member, want, have))
    return out


def check_vector(path_or_data: str | Path | Mapping[str, Any], *, name: str | None = None) -> CheckResult:
    """Run a vector's assignor on its input and compare with ``expected``.

    Bad input inside a vector (or an assignor that cannot be loaded) is reported as the result's
    ``error`` rather than raised, so one broken file does not stop a folder check.
    """
    label = name or (str(path_or_data) if isinstance(path_or_data, (str, Path)) else "input")
    try:
        if isinstance(path_or_data, (str, Path)):
            af = load_assignment_file(path_or_data)
        else:
            af = parse_assignment_file(dict(path_or_data), source=label)
        if af.assignor is None:
            return CheckResult(
                label, "?", False, error=f"{label}: 'assignor' is missing; add one", invalid=True
            )
        assignor = af.assignor
        if af.expected is None and af.expected_error is None:
            return CheckResult(
                label,
                assignor,
                False,
                error=f"{label}: 'expected' is missing; add Kafka's answer to check against "
                '("expected": {"assignment": {...}}), or run it without --check',
                invalid=True,
            )
        instance = make_assignor(assignor, af.prior_max_generation)
        request = af.request_for(assignor)
        try:
            got = instance.assign(request)
        except Exception as exc:  # the assignor failed, as Kafka's may (expected.error)
            thrown = java_exception_of(exc)
            if af.expected_error is not None:
                wanted = af.expected_error.partition(":")[0].strip()
                if thrown == wanted:
                    return CheckResult(label, assignor, True)
                return CheckResult(
                    label, assignor, False, error=f"expected Java's {wanted}, got {thrown or _describe(exc)}"
                )
            return CheckResult(label, assignor, False, error=_describe(exc))
        if af.expected is None:
            return CheckResult(label, assignor, False, error=f"expected the error {af.expected_error!r}")
        mismatches = compare_assignments(af.expected, got)
        return CheckResult(label, assignor, not mismatches, tuple(mismatches))
    except KgroupError as exc:
        return CheckResult(label, "?", False, error=exc.message, invalid=True)
    except ImportError as exc:
        return CheckResult(label, "?", False, error=f"assignor not available: {exc}", invalid=True)


def java_exception_of(exc: BaseException) -> str | None:
    """The Java exception class Kafka's assignor throws where ``exc`` was raised, if known: kgroup's
    assignors name it (``StickyAssignmentError.java_exception``); anything else is not Kafka's."""
    kind = getattr(exc, "java_exception", None)
    return kind if isinstance(kind, str) else None


def _describe(exc: BaseException) -> str:
    return exc.message if isinstance(exc, KgroupError) else f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class CheckReport:
    """All results of a file or folder check, plus the JSON files skipped as not assignor vectors."""

    results: tuple[CheckResult, ...]
    skipped: tuple[str, ...] = field(default=())

    @property
    def exact(self) -> int:
        return sum(1 for r in self.results if r.exact)

    @property
    def total(self) -> int:
        return len(self.results)

    @property
    def all_exact(self) -> bool:
        return self.exact == self.total


def _vector_files(path: Path) -> Iterator[Path]:
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*.json") if p.is_file())
    elif path.exists():
        yield path
    else:
        raise KgroupError(f"{path}: no such file or folder; give a vector file or a folder of them")


def check_path(path: str | Path) -> CheckReport:
    """Check one vector file, or every assignor vector under a folder (recursively).

    In a folder, JSON files that are not consumer-assignor vectors (murmur2, replica placement, the
    producer partitioner, server-side assignors …: anything whose ``assignor`` is not a known
    assignor name) are skipped and listed in ``skipped``. A single file is always checked.
    """
    root = Path(path)
    known = set(available_assignors())
    results: list[CheckResult] = []
    skipped: list[str] = []
    single = not root.is_dir()
    for file in _vector_files(root):
        label = str(file)
        if single:
            results.append(check_vector(file))
            continue
        try:
            data = decode_json(file.read_text(encoding="utf-8"), label)
        except (OSError, UnicodeDecodeError) as exc:
            results.append(CheckResult(label, "?", False, error=f"{label}: unreadable ({exc})", invalid=True))
            continue
        except KgroupError as exc:
            results.append(CheckResult(label, "?", False, error=exc.message, invalid=True))
            continue
        if not isinstance(data, dict) or data.get("assignor") not in known:
            skipped.append(label)
            continue
        results.append(check_vector(data, name=label))
    return CheckReport(tuple(results), tuple(skipped))
