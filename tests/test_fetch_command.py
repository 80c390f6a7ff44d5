"""``python -m kgroup.testing.<tool> fetch``'s shared command line (kgroup.testing.fetch_command)."""

from __future__ import annotations

import pytest

from kgroup.model import KgroupError
from kgroup.testing.fetch_command import fetch_main


class _Missing(KgroupError):
    pass


def _fetch(args: list[str]) -> str:
    if args == ["missing"]:
        raise _Missing("no such release; name another")
    return f"tool {args[0] if args else 'default'}: /cache/tool"


def _main(argv: list[str]) -> int:
    return fetch_main(
        argv, usage="python -m tool fetch [V]", fetch=_fetch, unavailable=_Missing, optional_args=1
    )


@pytest.mark.parametrize("argv", [[], ["get"], ["fetch", "1", "2"]])
def test_another_command_line_prints_the_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", "usage: python -m tool fetch [V]\n")


def test_fetched_prints_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["fetch"]) == 0
    assert capsys.readouterr().out == "tool default: /cache/tool\n"
    assert _main(["fetch", "4.2"]) == 0
    assert capsys.readouterr().out == "tool 4.2: /cache/tool\n"


def test_unavailable_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["fetch", "missing"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", "error: no such release; name another\n")
