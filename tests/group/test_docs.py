"""The state table, its diagram, and the documentation that embeds it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kgroup.group import ALLOWED_PREVIOUS_STATES, GroupState, IllegalStateTransition, mermaid_diagram
from kgroup.group.diagram import embedded_block, main
from kgroup.group.states import check_transition

DOCS = Path(__file__).parents[2] / "docs"
S = GroupState


def test_table_is_kafkas() -> None:
    assert {
        S.EMPTY: {S.PREPARING_REBALANCE},
        S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
        S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
        S.STABLE: {S.COMPLETING_REBALANCE},
        S.DEAD: set(S),
    } == ALLOWED_PREVIOUS_STATES
    assert [s.kafka_name for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


@pytest.mark.parametrize("source", list(S))
@pytest.mark.parametrize("target", list(S))
def test_check_transition_allows_exactly_the_table(source: GroupState, target: GroupState) -> None:
    if source in ALLOWED_PREVIOUS_STATES[target]:
        check_transition(source, target)
    else:
        with pytest.raises(IllegalStateTransition):
            check_transition(source, target)


def test_diagram_has_one_arrow_per_table_edge() -> None:
    arrows = [line for line in mermaid_diagram().splitlines() if "-->" in line and "[*]" not in line]
    assert len(arrows) == sum(len(sources) for sources in ALLOWED_PREVIOUS_STATES.values())


def test_docs_embed_the_current_diagram() -> None:
    assert (DOCS / "coordinator-states.mmd").read_text(encoding="utf-8") == mermaid_diagram()
    assert embedded_block() in (DOCS / "coordinator.md").read_text(encoding="utf-8")
    assert main(["--check", str(DOCS)]) == 0
