"""Long work is visible: a progress bar on stderr when stderr is a terminal, nothing extra in a
pipe or with ``--json`` (issue 10). The terminal is a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

KGROUP = [sys.executable, "-m", "kgroup"]
EXAMPLES = Path(__file__).parents[1] / "examples"

pytestmark = pytest.mark.skipif(not hasattr(pty, "openpty"), reason="needs a pseudo-terminal")


def run_with_terminal_stderr(*args: str, timeout_s: float = 300) -> tuple[int, str, str]:
    """Run kgroup with stdout to a pipe and stderr to a pseudo-terminal; (code, stdout, stderr)."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([*KGROUP, *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    out_chunks: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    assert proc.stdout is not None
    stdout_fd = proc.stdout.fileno()
    open_fds = {master, stdout_fd}
    try:
        # stdout and the terminal are read together: a child writing more than a pipe holds (a large
        # --json answer) would otherwise block until the deadline
        while open_fds and time.monotonic() < deadline:
            ready, _, _ = select.select(list(open_fds), [], [], 0.2)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # the child closed the terminal
                    data = b""
                if not data:
                    open_fds.discard(fd)
                elif fd == master:
                    chunks.append(data)
                else:
                    out_chunks.append(data)
            if not ready and proc.poll() is not None and master in open_fds:
                open_fds.discard(master)
        out = b"".join(out_chunks)
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        os.close(master)
    terminal = b"".join(chunks).decode(errors="replace")
    return code, out.decode(), re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal)  # colours and cursor moves


BENCH = ("bench", "simulate", "--members", "3", "--partitions", "6", "--minutes", "1", "--runs", "2")


def test_bench_simulate_shows_progress_on_a_terminal() -> None:
    code, out, err = run_with_terminal_stderr(*BENCH)
    assert code == 0, err
    assert "timing bench-3x6 (1 min virtual)" in err
    assert "2/2" in err  # the bar ends complete
    assert out.startswith("simulate bench-3x6 (3 members, 6 partitions), 1 min virtual")
    assert " steps/s, " in out and len(out.splitlines()) == 1  # one line, though longer than 80 columns


def test_bench_simulate_json_on_a_terminal_prints_nothing_extra() -> None:
    code, out, err = run_with_terminal_stderr(*BENCH, "--json")
    assert code == 0
    assert err == ""
    assert json.loads(out)["runs"] and len(json.loads(out)["runs"]) == 2


def test_bench_simulate_in_a_pipe_prints_no_progress() -> None:
    result = subprocess.run([*KGROUP, *BENCH], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0
    assert result.stderr == ""


def test_simulate_compare_shows_progress_on_a_terminal_and_nothing_with_json() -> None:
    scenario = str(EXAMPLES / "crash.yaml")
    code, out, err = run_with_terminal_stderr("simulate", scenario, "--compare", "--engine", "local")
    assert code == 0, err
    # 10 classic variants, 4 on the consumer protocol and a share group
    assert "simulating 15 runs (15 variants × 1 seed(s))" in err
    assert "15/15" in err
    code, out, err = run_with_terminal_stderr(
        "simulate", scenario, "--compare", "--engine", "local", "--json"
    )
    assert code == 0
    assert err == ""
    assert len(json.loads(out)["runs"]) == 15


def test_assigning_a_large_file_shows_its_stages_on_a_terminal(tmp_path: Path) -> None:
    partitions = 500_000
    owned = [f"t1-{p}" for p in range(partitions)]
    data = {
        "assignor": "range",
        "input": {
            "topics": [{"name": "t1", "partitions": partitions}],
            "members": [
                {"memberId": "a", "topics": ["t1"], "owned": owned},
                {"memberId": "b", "topics": ["t1"]},
            ],
        },
    }
    path = tmp_path / "large.json"
    path.write_text(json.dumps(data))
    assert path.stat().st_size > 5_000_000
    code, out, err = run_with_terminal_stderr("assign", str(path))
    assert code == 0, err
    assert f"✓ reading {path}" in err and "✓ assigning with range" in err
    assert "range: 500,000 partitions over 2 members" in out
    code, out, err = run_with_terminal_stderr("assign", str(path), "--json")
    assert code == 0 and err == ""
    assert len(json.loads(out)["assignment"]["a"]) == 250_000
