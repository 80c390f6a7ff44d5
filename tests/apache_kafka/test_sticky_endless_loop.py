"""A group Kafka 4.4.0's sticky assignors never finish, beside Kafka itself.

Found by ``test_oracle_random_groups.py`` (a CI run whose oracle was stopped past its bound) and shrunk
with kgroup's loop check: with rack-aware assignment, a member subscribing to a topic twice and two
members holding partitions of topics they do not subscribe to, the general builder's
``performReassignments`` ends its second pass where the first ended, and so moves the same partitions
round forever. kgroup reproduces the passes and stops at the repeat (:class:`StickyReassignmentLoops`);
here Kafka's own assignor, asked the same group, is still busy when the bound runs out, while the same
group without the repeated subscription is answered at once, and the same as kgroup answers it.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from kgroup.assignors.fileformat import parse_assignment_file, run_assignment_file
from kgroup.assignors.sticky.errors import StickyReassignmentLoops
from kgroup.testing.apache_kafka import KafkaOracle, OracleDied, require_apache_kafka

pytestmark = pytest.mark.apache_kafka

#: the shrunk group (replica racks on t2 only; member d lists t1 twice; e and xa own partitions of
#: topics outside their subscriptions); tests/assignors/test_sticky_endless.py holds kgroup to it alone
ENDLESS: dict[str, Any] = json.loads(
    (Path(__file__).parents[1] / "assignors" / "sticky_endless_assignment.json").read_text()
)["input"]

#: how long Kafka is given on the endless group: the near-identical group takes it milliseconds
BOUND_S = 15.0


def _kgroup(assignor: str, data: dict[str, Any]) -> Any:
    return run_assignment_file(parse_assignment_file({"assignor": assignor, "input": data}, source="test"))


def _once(data: dict[str, Any]) -> dict[str, Any]:
    """The same group with d subscribing to t1 once."""
    changed = copy.deepcopy(data)
    changed["members"][3]["topics"] = ["t1"]
    return changed


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_kafka_never_finishes_where_kgroup_finds_the_loop(assignor: str) -> None:
    with pytest.raises(StickyReassignmentLoops):
        _kgroup(assignor, ENDLESS)
    with KafkaOracle(require_apache_kafka(), call_timeout_s=BOUND_S) as oracle:
        # the JVM answers the near-identical group (warm, and the same answer as kgroup's) ...
        answer = oracle.assign(assignor, _once(ENDLESS))
        assert answer.error is None
        assert answer.assignment == _kgroup(assignor, _once(ENDLESS))
        # ... and is still inside Kafka's assignor when the bound runs out on the endless one
        asked = time.monotonic()
        with pytest.raises(OracleDied, match="did not answer"):
            oracle.assign(assignor, ENDLESS)
        assert time.monotonic() - asked >= BOUND_S
