"""kgroup's Spark tasks freeze a Python worker's long-lived objects at its second kgroup task, and again
at a later one when modules were imported since the task before."""

from __future__ import annotations

import gc
import sys
import types
import weakref

import pytest

from kgroup.spark import worker_gc


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def _tracked(obj: object) -> bool:
    """Whether the collector's generations (not the frozen one) hold ``obj``."""
    return any(o is obj for o in gc.get_objects())


def test_the_second_task_freezes_what_is_alive_and_later_tasks_freeze_nothing_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker_gc, "_tasks", 0)
    monkeypatch.setattr(worker_gc, "_modules_at_last_task", 0)
    gc.unfreeze()
    try:
        worker_gc.task_started()  # the first task imports and loads its kernels: nothing frozen yet
        assert gc.get_freeze_count() == 0
        dropped = weakref.ref(_Node())  # garbage the first task left
        kept = _Node()  # alive across tasks, as a module's objects are
        assert dropped() is not None and _tracked(kept)

        worker_gc.task_started()
        assert gc.get_freeze_count() > 0 and not _tracked(kept)  # frozen: later collections skip it
        assert dropped() is None  # collected first, not frozen with the rest

        later = _Node()
        worker_gc.task_started()  # once per process: later objects stay with the collector
        assert _tracked(later)  # (the frozen count itself only falls, as frozen objects are freed)
    finally:
        gc.unfreeze()


def test_a_later_task_after_new_imports_freezes_them_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that ran one kind of kgroup task and then another (the demo's event generator, then
    a Kafka reader) holds the second kind's modules too: they are frozen at the task after."""
    monkeypatch.setattr(worker_gc, "_tasks", 0)
    monkeypatch.setattr(worker_gc, "_modules_at_last_task", 0)
    gc.unfreeze()
    try:
        worker_gc.task_started()
        worker_gc.task_started()  # the second: frozen
        module_object = _Node()  # what a task of another kind imports ...
        monkeypatch.setitem(sys.modules, "kgroup_test_imported_later", types.ModuleType("later"))
        worker_gc.task_started()  # ... is frozen at the task after it: modules were imported since
        assert not _tracked(module_object)
        task_object = _Node()
        worker_gc.task_started()  # nothing imported since the task before: nothing frozen
        assert _tracked(task_object)
    finally:
        gc.unfreeze()
