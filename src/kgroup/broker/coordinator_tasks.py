"""Where the broker runs each of the group coordinator's tasks: one registration per task type.

The coordinator hands its host tasks (:class:`~kgroup.group.txn.CoordinatorTask`: work to run apart
from every request, as Kafka's ``CoordinatorExecutor`` runs it). The runtime
(:mod:`kgroup.broker.coordinator_runtime`) runs each through the runner registered for its type in
:func:`task_runners`, else as :func:`run_apart` does: ``task.run()`` in the tasks' thread
(``kgroup-coordinator-tasks``). It knows no task kind; a new one that needs more of the broker than
that thread is one runner here and one line in :func:`task_runners`:

* ``InitializeShareState`` (a share group's partitions start their share state): answered by the
  share host, on the broker's loop (Kafka's persister call to the share coordinator);
* ``RegexResolution`` (a consumer group's regexes over the topics): RE2 in the tasks' thread, then, with
  an authorizer, each regex loses the topics its requester may not describe — on the broker's loop,
  where the ACLs are (``TopicRegexResolver.filterTopicDescribeAuthorizedTopics``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any

from kgroup.group.consumer.steps import RegexResolution
from kgroup.group.share.heartbeat import InitializeShareState
from kgroup.group.txn import CoordinatorTask

__all__ = ["TaskPlaces", "TaskRunner", "run_apart", "task_runners"]


@dataclass(frozen=True, slots=True)
class TaskPlaces:
    """Where a runner may put its task's work (the runtime's threads and loops)."""

    #: ``work()`` in the tasks' thread, off every loop
    apart: Callable[[Callable[[], object]], Awaitable[object]]
    #: a coroutine run on the broker's loop (where the share host and the ACLs are)
    on_broker: Callable[[Coroutine[Any, Any, Any]], Awaitable[Any]]


#: (task, places) -> the outcome the coordinator's ``complete`` takes
TaskRunner = Callable[[Any, TaskPlaces], Awaitable[object]]


def run_apart(task: CoordinatorTask, places: TaskPlaces) -> Awaitable[object]:
    """A task no runner is registered for: ``task.run()`` in the tasks' thread."""
    return places.apart(task.run)


def task_runners(
    *,
    share_state: Callable[[InitializeShareState], Coroutine[Any, Any, bool]] | None = None,
    describable: Callable[[str, str, str], bool] | None = None,
) -> dict[type, TaskRunner]:
    """The runners of the task types that need more of the broker than the tasks' thread, given what
    answers them: ``share_state`` (the share host's InitializeShareGroupState), ``describable``
    ((principal, host, topic) -> may it describe the topic; ``None``: no authorizer)."""
    runners: dict[type, TaskRunner] = {}
    if share_state is not None:
        runners[InitializeShareState] = partial(_initialize_share_state, share_state)
    if describable is not None:
        runners[RegexResolution] = partial(_resolve_regexes, describable)
    return runners


async def _initialize_share_state(
    share_state: Callable[[InitializeShareState], Coroutine[Any, Any, bool]],
    task: InitializeShareState,
    places: TaskPlaces,
) -> object:
    return await places.on_broker(share_state(task))


async def _resolve_regexes(
    describable: Callable[[str, str, str], bool], task: RegexResolution, places: TaskPlaces
) -> object:
    outcome = await places.apart(task.run)
    assert isinstance(outcome, dict)
    return await places.on_broker(_filter_regex_topics(describable, task.requester, outcome))


async def _filter_regex_topics(
    describable: Callable[[str, str, str], bool],
    requester: tuple[str, str] | None,
    resolved: dict[str, frozenset[str]],
) -> dict[str, frozenset[str]] | None:
    """``TopicRegexResolver.filterTopicDescribeAuthorizedTopics``: every regex loses the topics the
    requester may not describe. Unknown requester (a resolution due at a reload): no answer — the
    group keeps what it had and the next heartbeat asks again."""
    if requester is None:
        return None
    principal, host = requester
    denied: set[str] = set()
    for count, topic in enumerate({t for topics in resolved.values() for t in topics}):
        if count % 1000 == 999:
            await asyncio.sleep(0)  # the broker's loop serves its connections in between
        if not describable(principal, host, topic):
            denied.add(topic)
    return {regex: topics - denied for regex, topics in resolved.items()} if denied else resolved
