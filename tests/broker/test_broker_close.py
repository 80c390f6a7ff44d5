"""A broker's close ends every connection's task, including one whose connection was accepted just
before the listeners closed: its task starts (and registers itself) a turn of the loop later, while
the first ones are being waited for — left pending, the loop closed under it ("Task was destroyed
but it is pending!", and its transport closed on a closed loop when it was collected)."""

from __future__ import annotations

import asyncio
import faulthandler
import time
from typing import Any

import pytest

import kgroup.broker.broker as broker_module
from kgroup.broker.broker import END_CONNECTION_ROUNDS, end_connection_tasks


def _serving(tasks: set[asyncio.Task[Any]], started: list[str], name: str, then: str | None = None) -> None:
    """A connection's task as the broker's ``on_connect`` runs it: it adds itself when it starts, serves
    until cancelled; ``then``: another connection's task is created while this one ends."""

    async def serve() -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        started.append(name)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if then is not None:
                _serving(tasks, started, then)
            return
        finally:
            tasks.discard(task)

    asyncio.get_running_loop().create_task(serve())


def test_a_connection_task_that_starts_while_the_others_end_is_ended_too() -> None:
    async def run() -> tuple[list[str], list[asyncio.Task[Any]]]:
        tasks: set[asyncio.Task[Any]] = set()
        started: list[str] = []
        _serving(tasks, started, "first", then="late")
        await asyncio.sleep(0)
        assert started == ["first"] and len(tasks) == 1
        _serving(tasks, started, "not started yet")  # accepted, its task not run a step yet
        await end_connection_tasks(tasks)
        me = asyncio.current_task()
        return started, [t for t in asyncio.all_tasks() if t is not me and not t.done()]

    started, pending = asyncio.run(run())
    assert sorted(started) == ["first", "late", "not started yet"]
    assert pending == []


def test_the_rounds_are_bounded() -> None:
    """A connection that keeps making new ones as it ends does not hold the close for ever."""

    async def run() -> int:
        tasks: set[asyncio.Task[Any]] = set()
        started: list[str] = []

        def chain(k: int) -> None:
            _serving(tasks, started, f"c{k}")

        async def endless() -> None:
            k = 0
            while True:
                chain(k)
                k += 1
                await asyncio.sleep(0)

        maker = asyncio.get_running_loop().create_task(endless())
        await asyncio.sleep(0)
        await asyncio.wait_for(end_connection_tasks(tasks), timeout=10)
        maker.cancel()
        await asyncio.gather(maker, return_exceptions=True)
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return len(started)

    assert run_count(run) > END_CONNECTION_ROUNDS


def run_count(run: Any) -> int:
    return int(asyncio.run(run()))


def test_a_close_that_takes_too_long_after_the_signal_writes_every_thread_s_stack(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kgroup serve``'s SIGTERM arms a one-off dump of every thread's stack, cancelled when the
    broker has closed: a close that hangs leaves on stderr what it waits for."""
    monkeypatch.setattr(broker_module, "STOP_TRACEBACK_AFTER_S", 0.05)
    stop = asyncio.Event()
    try:
        broker_module._stopping(stop)
        time.sleep(0.5)
    finally:
        faulthandler.cancel_dump_traceback_later()
    assert stop.is_set()
    err = capfd.readouterr().err
    assert "Timeout (0:00:00.050000)!" in err and "most recent call first" in err
    assert "test_broker_close.py" in err  # this thread's own frame
