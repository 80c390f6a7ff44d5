"""FlatPartitionList behaves as the plain list of the same TopicPartitions, everywhere a caller can tell."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest

from kgroup.assignors.fast.partition_list import FlatPartitionList, TopicTable
from kgroup.model import TopicPartition

TP = TopicPartition
# topics "a" (3 partitions, flat 0-2), "b" (0 partitions), "c" (4 partitions, flat 3-6)
TABLE = TopicTable(["a", "b", "c"], np.array([0, 3, 3], dtype=np.int64))
FLAT = [0, 2, 3, 6]
PLAIN = [TP("a", 0), TP("a", 2), TP("c", 0), TP("c", 3)]


def lazy() -> FlatPartitionList:
    return FlatPartitionList(np.array(FLAT, dtype=np.int64), TABLE)


def test_contents_types_and_length_without_materialising() -> None:
    x = lazy()
    assert isinstance(x, list)
    assert len(x) == 4 and bool(x)
    assert not x.is_materialised()
    assert list(x) == PLAIN
    assert not x.is_materialised()  # iterating builds objects for that pass only
    assert list(x) == PLAIN
    assert x[0] == PLAIN[0]
    assert x.is_materialised()
    assert list(x) == PLAIN and x[0] is x[0]
    assert all(type(tp) is TopicPartition for tp in x)
    assert [tp.topic for tp in x] == ["a", "a", "c", "c"]
    assert not FlatPartitionList(np.zeros(0, dtype=np.int64), TABLE)


@pytest.mark.parametrize(
    "probe",
    [
        lambda x: x == PLAIN,
        lambda x: PLAIN == x,  # noqa: SIM300 - the reflected comparison is the point
        lambda x: x != PLAIN[:3],
        lambda x: PLAIN[:3] != x,
        lambda x: x == lazy(),
        lambda x: {"m": x} == {"m": PLAIN},
        lambda x: {"m": PLAIN} == {"m": x},  # noqa: SIM300
        lambda x: x[1] == TP("a", 2),
        lambda x: x[-1] == TP("c", 3),
        lambda x: x[1:3] == PLAIN[1:3],
        lambda x: TP("c", 0) in x,
        lambda x: TP("b", 0) not in x,
        lambda x: x + [TP("z", 1)] == [*PLAIN, TP("z", 1)],  # noqa: RUF005 - list.__add__
        lambda x: [TP("z", 1)] + x == [TP("z", 1), *PLAIN],  # noqa: RUF005 - __radd__
        lambda x: x + lazy() == PLAIN + PLAIN,
        lambda x: x * 2 == PLAIN * 2,
        lambda x: sorted(x, reverse=True) == sorted(PLAIN, reverse=True),
        lambda x: list(reversed(x)) == PLAIN[::-1],
        lambda x: tuple(x) == tuple(PLAIN),
        lambda x: x.index(TP("c", 0)) == 2,
        lambda x: x.count(TP("a", 0)) == 1,
        lambda x: repr(x) == repr(PLAIN),
        lambda x: str(x) == str(PLAIN),
        lambda x: json.dumps(x) == json.dumps(PLAIN),
        lambda x: json.dumps({"m": x}, indent=2) == json.dumps({"m": PLAIN}, indent=2),
        lambda x: ", ".join(map(str, x)) == "a-0, a-2, c-0, c-3",
        lambda x: x < [TP("a", 1)] and x > [TP("a", 0)],
        lambda x: set(x) == set(PLAIN),
    ],
)
def test_reads_see_the_plain_list(probe: object) -> None:
    assert callable(probe)
    assert probe(lazy()) is True


def test_mutations_act_on_the_materialised_list() -> None:
    x = lazy()
    x.append(TP("z", 0))
    assert x == [*PLAIN, TP("z", 0)]
    y = lazy()
    y.sort(reverse=True)
    assert y == sorted(PLAIN, reverse=True)
    z = lazy()
    z += [TP("z", 0)]
    assert z == [*PLAIN, TP("z", 0)]
    w = lazy()
    del w[0]
    assert w == PLAIN[1:]
    v = lazy()
    v[0] = TP("q", 9)
    assert v == [TP("q", 9), *PLAIN[1:]]
    u = lazy()
    assert u.pop() == TP("c", 3) and len(u) == 3
    t = lazy()
    t.clear()
    assert t == [] and len(t) == 0
    s = lazy()
    s.extend(lazy())
    assert s == PLAIN + PLAIN
    r = [TP("z", 0)]
    r.extend(lazy())
    assert r == [TP("z", 0), *PLAIN]


def test_copies_and_pickles_are_plain_lists() -> None:
    for made in (copy.copy(lazy()), copy.deepcopy(lazy()), pickle.loads(pickle.dumps(lazy())), lazy().copy()):
        assert type(made) is list
        assert made == PLAIN


def test_unhashable_like_a_list() -> None:
    with pytest.raises(TypeError):
        hash(lazy())


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky", "range", "roundrobin"])
def test_assignors_never_pause_the_garbage_collector(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """kgroup runs inside servers: no assignor may switch the process-wide collector off."""
    import gc

    from kgroup.assignors.registry import create_assignor
    from kgroup.bench.cases import CASES, Phase, build_request

    def refuse() -> None:
        raise AssertionError("gc.disable() called")

    monkeypatch.setattr(gc, "disable", refuse)
    shape = CASES["uniform"].scaled(0.1)  # 50 topics x 200 partitions, 200 members: the fast path
    assignment = create_assignor(name).assign(build_request(shape, name, Phase.INITIAL))
    assert sum(map(len, assignment.values())) == shape.total_partitions
    # an initial assignment (no racks) builds no TopicPartition until the lists are read
    assert all(isinstance(v, FlatPartitionList) and not v.is_materialised() for v in assignment.values())
