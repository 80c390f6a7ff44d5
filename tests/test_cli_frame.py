"""The `kgroup` command's frame: every sub-command present, one-line errors, exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kgroup.cli import COMMAND_MODULES

KGROUP = [sys.executable, "-m", "kgroup"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KGROUP, *args], capture_output=True, text=True, timeout=120, check=False)


def test_help_lists_every_command() -> None:
    result = run("--help")
    assert result.returncode == 0
    for name in (*COMMAND_MODULES, "version"):  # module serve_ctl registers serve-ctl
        assert f" {name.replace('_', '-')} " in result.stdout, name


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("no-such-command",), "No such command"),
        (("version", "--bogus"), "No such option: --bogus"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(args: tuple[str, ...], needle: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kgroup: error: ")
    assert needle in lines[0]
    assert "Traceback" not in result.stderr


def test_version() -> None:
    result = run("version")
    assert result.returncode == 0
    assert result.stdout.startswith("kgroup 0.1.0")
