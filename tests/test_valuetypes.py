"""kgroup.valuetypes: the faster __init__ and replace() keep every dataclass behaviour."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from kgroup.messages import Envelope, HeartbeatRequest
from kgroup.valuetypes import fast_init, replace


@fast_init
@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    count: int = 3
    tags: tuple[str, ...] = field(default_factory=tuple)
    extra: list[int] = field(default_factory=list)
    flag: bool = field(default=False, kw_only=True)


@fast_init
@dataclass(frozen=True, slots=True)
class Checked:
    value: int

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("value: negative")


@dataclass(frozen=True, slots=True)
class Plain:
    name: str
    count: int = 3
    tags: tuple[str, ...] = field(default_factory=tuple)
    extra: list[int] = field(default_factory=list)
    flag: bool = field(default=False, kw_only=True)


def test_fast_init_builds_what_the_dataclass_init_builds() -> None:
    calls: list[tuple[tuple[object, ...], dict[str, object]]] = [
        (("a",), {}),
        (("a", 5), {}),
        (("a", 5, ("x",)), {"flag": True}),
        ((), {"name": "k"}),
    ]
    for args, kwargs in calls:
        fast, plain = Sample(*args, **kwargs), Plain(*args, **kwargs)
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
        assert repr(fast).removeprefix("Sample") == repr(plain).removeprefix("Plain")
    assert Sample("a") == Sample("a") and Sample("a", tags=("t",)) != Sample("a")
    assert hash(Checked(4)) == hash(Checked(4))
    assert Sample("a").extra is not Sample("a").extra  # a fresh default per instance
    with pytest.raises(TypeError):
        Sample("a", 1, (), [], True)  # type: ignore[misc]  # flag is keyword-only
    with pytest.raises(TypeError):
        Sample()  # type: ignore[call-arg]


def test_frozen_and_post_init_are_kept() -> None:
    s = Sample("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "b"  # type: ignore[misc]
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    assert pickle.loads(pickle.dumps(Sample("a", 2, ("t",)))) == Sample("a", 2, ("t",))
    # a message whose __post_init__ fills a field: the API version Kafka's consumer sends
    assert Envelope("c", 1, HeartbeatRequest("g", 1, "m")).api_version == 4


def test_replace_equals_dataclasses_replace() -> None:
    s = Sample("a", 2, ("t",), [1], flag=True)
    for changes in [{}, {"count": 9}, {"name": "b", "flag": False}, {"extra": [2, 3]}]:
        assert replace(s, **changes) == dataclasses.replace(s, **changes)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nope"):
        replace(s, nope=1)
    with pytest.raises(ValueError, match="negative"):
        replace(Checked(1), value=-5)
    assert replace(Plain("p"), count=1) == Plain("p", 1)  # any dataclass: the standard replace


def test_fast_init_refuses_what_it_cannot_keep() -> None:
    @dataclass
    class Mutable:
        x: int

    with pytest.raises(TypeError, match="frozen=True, slots=True"):
        fast_init(Mutable)
