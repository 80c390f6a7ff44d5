"""A broker warms its numba kernels in a thread of its own (``kgroup.broker.warmup``): while the server
assignors' kernels are not ready, groups are assigned by the step-by-step builders — the same answer —
instead of waiting on the coordinators' thread for a compile (about 40 s of CPU on a cold cache, during
which no group's heartbeat was answered)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from tests.apache_kafka.wire import Raw

from kgroup.broker import warmup
from kgroup.group.assignors import (
    MemberSpec,
    RangeAssignor,
    SubscriptionType,
    TopicDescriber,
    TopicId,
    UniformAssignor,
    fast,
    group_spec,
)
from kgroup.group.assignors.fast import range_fast, uniform_fast, uniform_heterogeneous_fast
from kgroup.testing import KafkaBroker


def _group(kind: SubscriptionType) -> tuple[Any, TopicDescriber]:
    topics = {TopicId(0, i): 2 + i for i in range(5)}
    if kind is SubscriptionType.HOMOGENEOUS:
        members = [(f"m{i}", MemberSpec(tuple(topics))) for i in range(4)]
    else:
        members = [(f"m{i}", MemberSpec(tuple(topics)[i:])) for i in range(4)]
    return group_spec(members, kind), TopicDescriber(topics)


def _refuse(*_: object) -> None:
    raise AssertionError("the fast path ran while its kernels were held")


@pytest.mark.parametrize("kind", list(SubscriptionType))
def test_held_kernels_leave_the_answer_to_the_step_by_step_builders(
    kind: SubscriptionType, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, topics = _group(kind)
    expected = {a.name: a.assign_reference(spec, topics) for a in (RangeAssignor(), UniformAssignor())}
    for module, name in (
        (range_fast, "assign_range"),
        (uniform_fast, "assign_uniform_homogeneous"),
        (uniform_heterogeneous_fast, "assign_uniform_heterogeneous"),
    ):
        monkeypatch.setattr(module, name, _refuse)
    fast.hold_until_warm()
    try:
        assert {a.name: a.assign(spec, topics) for a in (RangeAssignor(), UniformAssignor())} == expected
    finally:
        fast.release()
    with pytest.raises(AssertionError, match="fast path ran"):  # released: the fast path again
        UniformAssignor().assign(spec, topics)


def test_a_group_is_assigned_while_the_kernels_are_still_warming(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm-up made as slow as a cold compile — and so the fast paths, which would wait for it as
    a first call waits on numba's compile — until the test lets it go: a KIP-848 member is given its
    partitions meanwhile; then the warm-up ends and the kernels are ready."""
    go = threading.Event()
    warmed: list[str] = []

    def slow_warm() -> None:
        assert go.wait(60), "the test never let the warm-up go"
        warmed.append("done")

    def compiling(original: Any) -> Any:
        def wait_then_run(*args: Any) -> Any:
            go.wait(60)
            return original(*args)

        return wait_then_run

    monkeypatch.setattr(fast, "warm", slow_warm)
    for module, name in (
        (range_fast, "assign_range"),
        (uniform_fast, "assign_uniform_homogeneous"),
        (uniform_heterogeneous_fast, "assign_uniform_heterogeneous"),
    ):
        monkeypatch.setattr(module, name, compiling(getattr(module, name)))
    monkeypatch.setattr(warmup, "_started", None)  # as in a process that has not warmed yet
    group = f"warm-{uuid.uuid4().hex[:8]}"
    try:
        with KafkaBroker(topics={"orders": 3}) as kafka, Raw(kafka.bootstrap_servers) as raw:
            thread = warmup._started
            assert thread is not None and thread.is_alive()
            assert not fast.kernels_ready()
            deadline = time.monotonic() + 20
            member, epoch, assigned = "", 0, None
            while assigned is None:
                answer = raw.call(
                    "ConsumerGroupHeartbeat",
                    1,
                    {
                        "group_id": group,
                        "member_id": member or uuid.uuid4().hex[:22],
                        "member_epoch": epoch,
                        "instance_id": None,
                        "rack_id": None,
                        "rebalance_timeout": 30000 if epoch == 0 else -1,
                        "subscribed_topic_names": ["orders"] if epoch == 0 else None,
                        "subscribed_topic_regex": None,
                        "server_assignor": None,
                        "topic_partitions": [] if epoch == 0 else None,
                    },
                )
                assert answer["error_code"] == 0, answer
                member, epoch = answer["member_id"], answer["member_epoch"]
                if answer["assignment"] is not None:
                    assigned = answer["assignment"]
                assert time.monotonic() < deadline, "no assignment within 20 s while the kernels warmed"
                time.sleep(0.1)
            assert sorted(p for t in assigned["topic_partitions"] for p in t["partitions"]) == [0, 1, 2]
            assert not fast.kernels_ready() and warmed == []  # assigned before the warm-up ended
            go.set()
            thread.join(30)
            assert warmed == ["done"] and fast.kernels_ready()
    finally:
        go.set()
        fast.release()


_ENDING = """
import sys, threading, time
from kgroup.broker import warmup
from kgroup.cli import serve

done = threading.Event()
thread = threading.Thread(target=lambda: time.sleep(float(sys.argv[1])) or done.set(), daemon=True)
warmup._threads.append(thread)
thread.start()
serve.WARM_UP_EXIT_WAIT_S = 1.0
print("closed", flush=False)  # written before the process ends, either way
serve._end_warm_up()
print("after", done.is_set())
"""


@pytest.mark.parametrize(("warming_s", "expected"), [(0.2, "closed\nafter True\n"), (60.0, "closed\n")])
def test_a_stopped_serve_waits_for_its_warm_up_or_leaves_at_once(warming_s: float, expected: str) -> None:
    """``kgroup serve``, its broker closed: a warm-up thread that ends within the wait is waited for;
    one still compiling is not left to the interpreter's finalization (which aborted the process in
    numba's compiler: "FATAL: exception not rethrown", exit -6, in CI) — the process leaves at once,
    exit 0, its output flushed."""
    import subprocess
    import sys

    started = time.monotonic()
    command = [sys.executable, "-c", _ENDING, str(warming_s)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, expected), done.stderr
    assert time.monotonic() - started < 30
