"""Where the broker runs the group coordinator's tasks (:mod:`kgroup.broker.coordinator_tasks`): by the
runner registered for the task's type, else ``task.run()`` in the tasks' thread; each place recorded
by stand-ins for the runtime's thread and loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from kgroup.broker.coordinator_tasks import TaskPlaces, run_apart, task_runners
from kgroup.group.consumer.steps import RegexResolution
from kgroup.group.metadata import MetadataImage, TopicImage
from kgroup.group.share.heartbeat import InitializeShareState
from kgroup.model import TopicId

# issue 35's coordinator work (the coordinators' thread, RE2 apart) is the hostile suite's
pytestmark = pytest.mark.hostile

IMAGE = MetadataImage.of(
    (TopicImage(TopicId.from_int(i + 1), name, 1) for i, name in enumerate(("a-1", "a-2", "b-1"))), 1
)


def _places(where: list[str]) -> TaskPlaces:
    async def apart(work: Callable[[], object]) -> object:
        where.append("apart")
        return work()

    async def on_broker(work: Coroutine[Any, Any, Any]) -> Any:
        where.append("broker")
        return await work

    return TaskPlaces(apart, on_broker)


def _run(task: object, runners: dict[type, Any]) -> tuple[object, list[str]]:
    where: list[str] = []
    runner = runners.get(type(task), run_apart)
    return asyncio.run(runner(task, _places(where))), where


def test_without_registered_runners_every_task_runs_apart() -> None:
    regexes = RegexResolution("g", ("a-.*",), IMAGE, 0, ("User:alice", "h"))
    share = InitializeShareState("s", 1, ((TopicId.from_int(1), "a-1", (0,)),))
    runners = task_runners()
    assert _run(regexes, runners) == ({"a-.*": frozenset({"a-1", "a-2"})}, ["apart"])
    assert _run(share, runners) == (True, ["apart"])


def test_share_state_is_answered_on_the_brokers_loop() -> None:
    asked: list[InitializeShareState] = []

    async def share_state(task: InitializeShareState) -> bool:
        asked.append(task)
        return False

    task = InitializeShareState("s", 1, ((TopicId.from_int(1), "a-1", (0,)),))
    assert _run(task, task_runners(share_state=share_state)) == (False, ["broker"])
    assert asked == [task]


def test_regexes_are_resolved_apart_then_filtered_by_describe_on_the_brokers_loop() -> None:
    def describable(principal: str, host: str, topic: str) -> bool:
        return principal == "User:alice" and topic != "a-2"

    runners = task_runners(describable=describable)
    alice = RegexResolution("g", ("a-.*", "b-.*"), IMAGE, 0, ("User:alice", "h"))
    assert _run(alice, runners) == (
        {"a-.*": frozenset({"a-1"}), "b-.*": frozenset({"b-1"})},
        ["apart", "broker"],
    )
    bob = RegexResolution("g", ("a-.*",), IMAGE, 0, ("User:bob", "h"))
    assert _run(bob, runners) == ({"a-.*": frozenset()}, ["apart", "broker"])
    # a resolution due at a reload knows no requester: no answer, the group keeps what it had
    unknown = RegexResolution("g", ("a-.*",), IMAGE, 0, None)
    assert _run(unknown, runners) == (None, ["apart", "broker"])
