"""Running Kafka's assignor vectors through a client's call shape, with the fields that shape can carry."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.assignors.api import AssignmentRequest
from kgroup.assignors.fileformat import AssignmentFile, load_assignment_file
from kgroup.assignors.sticky.userdata import decode_sticky_user_data
from kgroup.model import Assignment, sorted_partitions

VECTORS = Path(__file__).parent.parent / "vectors"
ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")


def vector_files(assignor: str) -> list[Path]:
    return sorted((VECTORS / assignor).rglob("*.json"))


def load(path: Path) -> AssignmentFile:
    return load_assignment_file(path)


def _claims(request: AssignmentRequest) -> Counter[Any]:
    counts: Counter[Any] = Counter()
    for m in request.members:
        if m.user_data:
            try:
                partitions, _ = decode_sticky_user_data(m.user_data)
            except ValueError:
                continue
            counts.update(set(partitions))
    return counts


def aiokafka_hides(assignor: str, request: AssignmentRequest) -> str | None:
    """Why aiokafka's leader cannot see what this vector's answer depends on (``None``: it can)."""
    members = request.members
    if request.prefer_rack_aware_logic:
        return "preferRackAwareLogic"
    if assignor in ("range", "roundrobin") and any(m.group_instance_id is not None for m in members):
        return "group.instance.id"
    if assignor != "roundrobin" and any(m.rack_id for m in members):
        return "member rack"
    if assignor == "cooperative-sticky" and any(m.owned for m in members):
        return "owned partitions"
    competing = assignor == "sticky" and any(m.generation >= 0 for m in members)
    if competing and any(n > 1 for n in _claims(request).values()):
        return "generation of a competing claim"
    return None


def kafka_python_hides(assignor: str, request: AssignmentRequest) -> str | None:
    if request.prefer_rack_aware_logic:
        return "preferRackAwareLogic"
    return None


@dataclass
class Tally:
    exact: int = 0
    errors_as_expected: int = 0
    hidden: Counter[str] | None = None
    hidden_but_exact: int = 0
    mismatches: list[str] | None = None

    def __post_init__(self) -> None:
        self.hidden = Counter()
        self.mismatches = []


def normal(assignment: Assignment) -> dict[str, list[str]]:
    return {m: [str(tp) for tp in sorted_partitions(ps)] for m, ps in assignment.items()}


def run_all(
    assignor: str,
    hides: Callable[[str, AssignmentRequest], str | None],
    run: Callable[[AssignmentFile, AssignmentRequest], Assignment],
) -> Tally:
    tally = Tally()
    assert tally.hidden is not None and tally.mismatches is not None
    for path in vector_files(assignor):
        af = load(path)
        request = af.request_for(assignor)
        reason = hides(assignor, request)
        try:
            got: Assignment | None = run(af, request)
        except Exception as exc:
            if af.expected_error is not None and reason is None:
                tally.errors_as_expected += 1
                continue
            if reason is None:
                tally.mismatches.append(f"{path}: raised {exc!r}")
            else:
                tally.hidden[reason] += 1
            continue
        if af.expected_error is not None:
            if reason is None:
                tally.mismatches.append(f"{path}: expected error {af.expected_error!r}, got an assignment")
            else:
                tally.hidden[reason] += 1
            continue
        assert af.expected is not None, path
        same = normal(got) == normal(af.expected)
        if reason is not None:
            tally.hidden[reason] += 1
            tally.hidden_but_exact += int(same)
        elif same:
            tally.exact += 1
        else:
            tally.mismatches.append(str(path))
    return tally


def iter_counts(tally: Tally) -> Iterator[str]:
    yield f"exact={tally.exact} errors={tally.errors_as_expected} hidden={dict(tally.hidden or {})}"
