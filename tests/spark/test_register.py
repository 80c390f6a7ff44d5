"""``register(spark)`` adds the group-commit listener once per session — and to every new session,
including one started after another was stopped (whose Python object may take the old one's
``id()``). Runs in its own process (``own_process_sessions.py``, its ``register`` part): the test
suite's shared session must not be stopped."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_a_new_session_gets_its_own_commit_listener(own_process_sessions: dict[str, Any]) -> None:
    out = own_process_sessions["register"]  # what own_process_sessions.py's register part saw
    assert "error" not in out, out.get("error")
    assert out["first"] == 1  # registered twice, one listener
    assert out["second_before"] == 0  # a new session starts without it …
    assert out["second"] == 1  # … and register() adds it, though the stopped one had one
    assert out["third"] == 1
    keys = [tuple(out[k]) for k in ("first_key", "second_key", "third_key")]
    assert len(set(keys)) == 3
    assert keys[1][0] == keys[2][0]  # same application, different sessions
    assert keys[0][0] != keys[1][0]  # a stopped context's application id is not reused
    assert out["dataframe"][:3] == ["key", "value", "topic"]  # the format works on the new session


def test_a_local_session_without_pysparks_python_gets_the_drivers(
    own_process_sessions: dict[str, Any],
) -> None:
    """Issue 31: `register(spark)` returned as if all was well and the first read failed in a Spark
    traceback with "No module named 'kgroup'"; it now says so in one line and arranges it."""
    out = own_process_sessions["worker_python"]
    assert "error" not in out, out.get("error")
    assert out["wrapper_has_kgroup"] is False  # the case: the workers' Python has no kgroup
    assert out["before"].endswith("python-without-kgroup") and out["after"] == out["driver"]
    assert out["said"] == [
        f"kgroup: this local SparkSession's Python workers ran {out['before']!r}, which has no kgroup; "
        f"register() runs them on {out['driver']} (the driver's Python) instead. To choose, start the "
        "session with PYSPARK_PYTHON set to a Python that has kgroup (docs/spark.md)"
    ]
    assert out["rows"] == 1
