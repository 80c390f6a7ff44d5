"""``register(spark)`` adds the group-commit listener once per session — and to every new session,
including one started after another was stopped (whose Python object may take the old one's
``id()``). Runs in its own process: the test suite's shared session must not be stopped."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

_SCRIPT = """
import gc, json
from kgroup.spark.session import get_spark
from kgroup.spark.source.datasource import register, session_key

def python_listeners(spark):
    found = spark._jsparkSession.streams().listListeners()
    return sum(1 for listener in found if "Python" in listener.getClass().getName())

first = get_spark("local[1]", app_name="kgroup-register-a")
register(first)
register(first)  # once per session
out = {"first": python_listeners(first), "first_key": list(session_key(first))}
first.stop()
del first
gc.collect()
second = get_spark("local[1]", app_name="kgroup-register-b")
before = python_listeners(second)
register(second)
out.update(second_before=before, second=python_listeners(second), second_key=list(session_key(second)))
third = second.newSession()  # same SparkContext, a session of its own
register(third)
out.update(third=python_listeners(third), third_key=list(session_key(third)))
out["dataframe"] = second.read.format("kgroup").option("kafka.bootstrap.servers", "127.0.0.1:1") \\
    .option("subscribe", "t").load().columns
second.stop()
print(json.dumps(out))
"""


def test_a_new_session_gets_its_own_commit_listener() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["first"] == 1  # registered twice, one listener
    assert out["second_before"] == 0  # a new session starts without it …
    assert out["second"] == 1  # … and register() adds it, though the stopped one had one
    assert out["third"] == 1
    keys = [tuple(out[k]) for k in ("first_key", "second_key", "third_key")]
    assert len(set(keys)) == 3
    assert keys[1][0] == keys[2][0]  # same application, different sessions
    assert keys[0][0] != keys[1][0]  # a stopped context's application id is not reused
    assert out["dataframe"][:3] == ["key", "value", "topic"]  # the format works on the new session
