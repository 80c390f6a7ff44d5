"""``dispatch._fewer_entries_than`` (whether a response is small enough to encode on the loop) against
the plain walk it replaced — every Mapping, list and tuple looked at through ``isinstance`` — on
random nested answers: dicts, lists, tuples, iterators, mapping proxies and the leaves of a response."""

from __future__ import annotations

import types
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.broker.dispatch import _fewer_entries_than


def _plain(data: Any, limit: int) -> bool:
    left = limit
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend(v for v in value.values() if isinstance(v, Mapping | list | tuple | Iterator))
        elif isinstance(value, list | tuple):
            left -= len(value)
            if left <= 0:
                return False
            stack.extend(v for v in value if isinstance(v, Mapping | list | tuple | Iterator))
        elif isinstance(value, Iterator):
            return False
    return True


class _Opaque:
    """A field value of no known type (a file region, say): neither counted nor walked."""


_LEAVES = st.one_of(
    st.integers(),
    st.text(max_size=3),
    st.binary(max_size=3),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.just(uuid.UUID(int=7)),
    st.builds(lambda b: memoryview(b), st.binary(max_size=3)),
    st.builds(_Opaque),
)


def _tree(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=6),
        st.lists(children, max_size=6).map(tuple),
        st.dictionaries(st.text(max_size=2), children, max_size=5),
        st.dictionaries(st.text(max_size=2), children, max_size=5).map(types.MappingProxyType),
        st.lists(children, max_size=3).map(iter),
    )


@settings(max_examples=400, deadline=None)
@given(data=st.recursive(_LEAVES, _tree, max_leaves=60), limit=st.integers(1, 40))
def test_the_count_is_the_plain_walks(data: Any, limit: int) -> None:
    assert _fewer_entries_than(data, limit) == _plain(data, limit)
