"""``kgroup.object_ids``: every item's ``id`` in one copy of a list's own pointer array, the same as
``map(id, …)`` whatever the list went through."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup import object_ids as module
from kgroup.object_ids import READS_LIST_MEMORY, object_ids


def _expected(items: list[object]) -> list[int]:
    return [id(x) for x in items]


def test_this_interpreter_reads_the_pointers() -> None:
    """The speed the server assignors count on: CPython on a 64-bit machine takes the direct read."""
    assert sys.implementation.name == "cpython"
    assert READS_LIST_MEMORY


@given(st.lists(st.sampled_from([None, 0, 1, "a", (), (1,), 2.5, b"x"]), max_size=300), st.data())
def test_the_same_ids_as_one_by_one_after_growing_shrinking_and_slicing(
    items: list[object], data: st.DataObject
) -> None:
    objects: list[object] = [*items, {}, {"k": 1}, object()]
    assert object_ids(objects).tolist() == _expected(objects)
    for _ in range(data.draw(st.integers(0, 5))):  # the pointer array moves as the list grows
        objects.extend(object() for _ in range(data.draw(st.integers(0, 200))))
        del objects[: data.draw(st.integers(0, len(objects)))]
        assert object_ids(objects).tolist() == _expected(objects)
        sliced = objects[1::2]
        assert object_ids(sliced).tolist() == _expected(sliced)


def test_an_empty_list_a_shared_object_and_the_list_itself() -> None:
    assert object_ids([]).dtype == np.int64 and len(object_ids([])) == 0
    shared = {"a": 1}
    items: list[object] = [shared, shared, shared]
    items.append(items)
    assert object_ids(items).tolist() == _expected(items)


def test_the_array_is_a_copy_the_list_can_change_after() -> None:
    items: list[object] = [object() for _ in range(10)]
    ids = object_ids(items)
    before = ids.tolist()
    items[:] = [object() for _ in range(10)]
    assert ids.tolist() == before


@pytest.mark.parametrize("other", [(1, 2), "ab", range(3)])
def test_only_a_list_is_read(other: object) -> None:
    with pytest.raises(TypeError, match="object_ids takes a list"):
        object_ids(other)  # type: ignore[arg-type]


class _MyList(list):  # type: ignore[type-arg]
    pass


def test_a_list_subclass_is_refused() -> None:
    with pytest.raises(TypeError, match="_MyList"):
        object_ids(_MyList([1, 2]))


def test_without_the_layout_the_ids_come_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "READS_LIST_MEMORY", False)
    items: list[object] = [object() for _ in range(50)]
    assert object_ids(items).tolist() == _expected(items)
