"""Sessions kgroup's tests cannot start in the test process (whose one shared session must run on):
run as a script in a process of its own (``python own_process_sessions.py``), it prints one JSON
line with what each part saw. One process serves three tests (the ``own_process_sessions`` fixture of
``conftest.py``), each reading its part, so the suite starts one more Python and JVM, not two:

* ``user_session`` (``test_jvm_partitioning``): a session kgroup did not start — a plain
  ``SparkSession.builder`` session, nothing of kgroup's in its configuration — gets the jar and the
  JVM function from ``with_kafka_partition`` and from ``kgroup.spark.register``. It runs first: the
  process's first SparkContext is the user's own, before kgroup has started anything.
* ``register`` (``test_register``): ``register(spark)`` adds the group-commit listener once per
  session, and to every new session, including one started after another was stopped (whose Python
  object may take the old one's ``id()``). The user's session is stopped by then, as ``first`` is
  before ``second`` starts: another stopped context before them changes nothing of that.
* ``worker_python`` (``test_register``): a local session whose Python workers would run a Python
  without kgroup gets the driver's from ``register(spark)``, with one line saying so.
"""

from __future__ import annotations

import gc
import json
import threading
import traceback
from collections.abc import Callable
from typing import Any


def user_session() -> dict[str, Any]:
    from pyspark.sql import SparkSession

    import kgroup.spark
    from kgroup.spark.partitioning import jvm
    from kgroup.spark.partitioning.partition_column import JVM_FUNCTION_NAME, with_kafka_partition

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("a-users-own-session")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    out: dict[str, Any] = {"jars": spark.conf.get("spark.jars", "")}
    probe = "select kgroup_kafka_partition(cast('a' as binary), 12) as p"
    try:
        spark.sql(probe).collect()
        out["before"] = "callable"
    except Exception as exc:
        out["before"] = type(exc).__name__
    plain = spark.createDataFrame([(f"k{i}",) for i in range(500)] + [(None,)] * 20, "k string")
    auto = with_kafka_partition(plain, "k", 12)
    plan = auto._jdf.queryExecution().executedPlan().toString()
    out["auto_plan"] = JVM_FUNCTION_NAME in plan
    # the null keys too are placed in the JVM: no Python UDF
    out["auto_keyless_plan"] = "kgroup_keyless_partition" in plan and "ArrowEvalPython" not in plan
    out["auto"] = [(r["k"], r["partition"]) for r in auto.collect()]

    def on_another_thread() -> None:  # ADD JAR gave the jar to the first thread's class loader only
        again = with_kafka_partition(plain, "k", 12)
        again_plan = again._jdf.queryExecution().executedPlan().toString()
        out["thread_keyless_plan"] = "kgroup_keyless_partition" in again_plan
        out["thread"] = [(r["k"], r["partition"]) for r in again.collect()]

    thread = threading.Thread(target=on_another_thread)
    thread.start()
    thread.join()
    out["register"] = kgroup.spark.register(spark)
    out["sql"] = spark.sql(probe).collect()[0]["p"]
    other = spark.newSession()  # a session of the same context: register() gives it the function
    out["other"] = kgroup.spark.register(other)
    out["other_sql"] = other.sql(probe).collect()[0]["p"]
    out["jar"] = jvm.kgroup_jar()
    spark.stop()
    return out


def _python_listeners(spark: Any) -> int:
    found = spark._jsparkSession.streams().listListeners()
    return sum(1 for listener in found if "Python" in listener.getClass().getName())


def register_per_session() -> dict[str, Any]:
    from kgroup.spark.session import get_spark
    from kgroup.spark.source.datasource import register, session_key

    first = get_spark("local[1]", app_name="kgroup-register-a")
    register(first)
    register(first)  # once per session
    out: dict[str, Any] = {"first": _python_listeners(first), "first_key": list(session_key(first))}
    first.stop()
    del first
    gc.collect()
    second = get_spark("local[1]", app_name="kgroup-register-b")
    before = _python_listeners(second)
    register(second)
    out.update(second_before=before, second=_python_listeners(second), second_key=list(session_key(second)))
    third = second.newSession()  # same SparkContext, a session of its own
    register(third)
    out.update(third=_python_listeners(third), third_key=list(session_key(third)))
    out["dataframe"] = (
        second.read.format("kgroup")
        .option("kafka.bootstrap.servers", "127.0.0.1:1")
        .option("subscribe", "t")
        .load()
        .columns
    )
    second.stop()
    return out


def worker_python() -> dict[str, Any]:
    """A user's own local session started without ``PYSPARK_PYTHON`` naming a Python with kgroup
    (here: this Python without its site-packages, where kgroup is installed): ``register(spark)``
    says so in one line and runs the workers on the driver's Python, so a read works. Runs last: it
    sets ``PYSPARK_PYTHON`` for the sessions started after it."""
    import logging
    import os
    import sys
    import tempfile
    from pathlib import Path

    from confluent_kafka import Producer
    from pyspark.sql import SparkSession

    import kgroup.spark
    from kgroup.spark.worker_python import has_kgroup
    from kgroup.testing import KafkaBroker

    wrapper = Path(tempfile.mkdtemp()) / "python-without-kgroup"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(0o755)
    os.environ["PYSPARK_PYTHON"] = str(wrapper)
    said: list[str] = []

    class Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logging.getLogger("kgroup.spark").addHandler(Lines())
    spark = SparkSession.builder.master("local[1]").appName("users-python").getOrCreate()
    out: dict[str, Any] = {
        "wrapper_has_kgroup": has_kgroup(str(wrapper)),
        "before": spark.sparkContext.pythonExec,
    }
    out["register"] = kgroup.spark.register(spark)
    out["said"] = said
    out["after"] = spark.sparkContext.pythonExec
    out["driver"] = sys.executable
    with KafkaBroker(topics={"orders": 2}) as kafka:
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        producer.produce("orders", b"v", b"k")
        assert producer.flush(10) == 0
        reader = spark.read.format("kgroup").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        out["rows"] = reader.option("subscribe", "orders").load().count()
    spark.stop()
    return out


def _part(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """What ``run`` saw, or its traceback under ``"error"``: a failing part fails its own test only."""
    try:
        return run()
    except Exception:
        return {"error": traceback.format_exc()}


if __name__ == "__main__":
    parts = {
        "user_session": _part(user_session),
        "register": _part(register_per_session),
        "worker_python": _part(worker_python),
    }
    print(json.dumps(parts))
