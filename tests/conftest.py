"""Shared test fixtures (the copied Kafka vectors, the run's Spark session) and the suite's split.

Markers the run adds itself (``pytest_collection_modifyitems``), so a new test file fits without
naming them:

* ``apache_kafka`` on every test that starts Apache Kafka, its Java client or its oracle: all of
  ``tests/apache_kafka/``, any test using the ``apache_kafka`` or ``kafka_oracle`` fixture, and the
  ``[apache]`` variant of any test with a parameter valued ``"apache"`` (``target``, ``kind``,
  ``cluster``, ``kafka_cluster``: the suite's convention for "run this on Apache Kafka").
  ``make test`` runs these in their own invocation (``-m apache_kafka``), timed on their own. A test
  that reaches Apache Kafka another way (``require_apache_kafka()``, the Java members) carries
  ``pytest.mark.apache_kafka`` itself.
* the suites issues after the suite's 4-minute budget (issue 19) added, each under its own marker:
  ``consumer_protocol``, ``hostile``, ``recording``, ``security`` and ``speed`` on the folders and
  modules of ``LATER_SUITES``; a test such an issue added to an older module carries the marker in
  its own file. ``make test`` runs them with the rest of the suite in its first run (the Apache
  Kafka tests in its second), and each run ends with its time per marker.
* ``core`` on the pure core's tests (``CORE_PATHS``: the group coordinator, the assignors,
  partitioning, the simulator, the wire, the log, the member; no server, no Spark, no JVM — a
  ``spark`` or ``apache_kafka`` test there does not get it): ``make test`` runs them in one process
  beside the Apache Kafka tests, whose run waits on JVMs and Kafka's timeouts more than it computes,
  instead of in the first run, which keeps both cores busy; ``make test-core`` runs them alone.
* ``xdist_group`` on every ``spark`` test and every test using the ``spark`` fixtures, so under
  ``pytest -n N --dist loadgroup`` they run on as few workers as there are groups, each sharing its
  worker's one SparkSession: five groups, so the Spark tests are not one worker's long queue —
  ``spark-demo`` (``test_demo.py``: the demo's pipeline, which starts its own broker),
  ``spark-kafka`` (the tests that reach a Kafka broker: the ``kgroup_cluster`` / ``kafka_cluster``
  / ``apache_kafka`` fixtures) and ``spark`` (the rest), the last two each split in two by suite
  (``spark-later``, ``spark-kafka-later``: the Spark tests of the ``LATER_SUITES``). A Spark test
  whose Spark runs only in processes it starts needs no worker's session: the two tests sharing
  ``own_process_sessions`` form a group of their own (so its one process serves both), and one
  marked ``spark_own_process`` runs on any worker.
  (pytest < 9.2: pytest 9.2's node ids make pytest-xdist 3.8 drop the group silently,
  pytest-dev/pytest-xdist#1386; pyproject.toml pins it.)
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from tests.jvm_archive import LEAN_JVM
from tests.jvm_archive import jvm_options as spark_archive_options

# Hypothesis's per-example deadline is a timed assertion: on a loaded 2-core machine (parallel workers,
# JVMs beside) a first example can take 0.6 s and fail a test whose checks all pass. Speed is measured
# by the benchmarks; here every example only has to be right.
settings.register_profile("kgroup", deadline=None)
settings.load_profile("kgroup")

# The suite's JVMs (its Spark drivers, the Apache Kafka nodes) live seconds to minutes and handle
# little data: C2's compiler threads and G1's concurrent threads cost them more CPU than they save
# (a third of the Spark tests' CPU, measured). Each is set through the variable its own launcher
# reads — Spark's spark-class (SPARK_SUBMIT_OPTS) and Kafka's kafka-run-class.sh
# (KAFKA_JVM_PERFORMANCE_OPTS, which kgroup.testing.ApacheKafka reads as the script does) — so the
# tests' own subprocesses get them too; neither launcher prints them. A value set outside wins.
# Spark's driver also maps the run's class-data-sharing archive when make test has built it
# (tests/jvm_archive.py: a Spark start in half the CPU).
_LEAN_JVM = LEAN_JVM
os.environ.setdefault("SPARK_SUBMIT_OPTS", f"{_LEAN_JVM} {spark_archive_options()}".strip())
os.environ.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", f"{_LEAN_JVM} -Djava.awt.headless=true")

VECTORS = Path(__file__).parent / "vectors"
TESTS = Path(__file__).parent

#: The suites later issues added, each under its own marker (see the module's documentation): the
#: folders and modules that hold only such tests. A test a later issue added to an older module carries
#: its marker itself (``@pytest.mark.speed``); a few cheap pure ones stay unmarked.
LATER_SUITES: dict[str, tuple[str, ...]] = {
    "consumer_protocol": (
        "group/consumer",
        "group/server_assignors",
        "group/test_consumer_admin.py",
        "member/test_consumer_protocol.py",
        "member/test_consumer_protocol_errors.py",
        "broker/test_consumer_protocol.py",
        "wire/test_consumer_group.py",
        "sim/test_consumer_protocol.py",
    ),
    "hostile": (
        "broker/test_canary.py",
        "broker/test_close_log.py",
        "broker/test_coordinator_work.py",
        # issue 35: no coordinator work freezes the broker (the coordinators' thread, RE2)
        "broker/test_coordinator_canary.py",
        "broker/test_file_handles.py",
        "broker/test_hostile_data.py",
        "broker/test_hostile_groups.py",
        "broker/test_parked_fetch.py",
        "group/test_checkpoint.py",
        "log/test_compressed.py",
        "wire/test_large_requests.py",
    ),
    "recording": (
        "faults",
        "validate",
        "report/test_record_history.py",
        # issue 31: what reports say (the Kafka release, the --compare table, the interactive timeline)
        "test_kafka_release.py",
        "report/test_compare_table.py",
        "report/test_interactive_timeline.py",
        # issue 31: the Spark sink to a topic that does not exist yet
        "spark/test_sink_new_topic.py",
    ),
    "security": ("security", "broker/test_advertised_listeners.py"),
    "speed": (
        "assignors/test_leader_path.py",
        "broker/test_fetch_answer.py",
        "log/test_records_walk.py",
        "spark/test_bulk_read.py",
        "spark/test_bulk_write.py",
        "spark/test_jvm_keyless.py",
        "spark/test_record_batches.py",
        "spark/test_register.py",
        "wire/test_fetch_response.py",
        "wire/test_metadata_response.py",
        "wire/test_produce_request.py",
    ),
    "transactions": (
        "transactions",
        "apache_kafka/test_diff_transactions.py",
        "apache_kafka/test_diff_txn_offsets.py",
        "apache_kafka/test_exactly_once.py",
        "apache_kafka/test_java_transactions.py",
        "log/test_txn_index.py",
    ),
    "share_groups": (
        "share",
        "group/share",
        "wire/test_share_group.py",
        "broker/test_share_durability.py",
        "broker/test_share_host.py",
        "sim/test_share_groups.py",
        "member/test_share_member.py",
        "client/test_share_consumer_docs.py",
    ),
}
#: a test under two of them counts under the first (Apache Kafka's first: it starts the JVMs)
_SUITE_MARKERS = ("apache_kafka", *LATER_SUITES)
_LATER_PATHS = tuple(
    (TESTS / path, getattr(pytest.mark, name)) for name, paths in LATER_SUITES.items() for path in paths
)
for _path, _ in _LATER_PATHS:
    if not _path.exists():  # a moved module would silently fall back to the first run
        raise pytest.UsageError(
            f"tests/conftest.py LATER_SUITES: {_path.relative_to(TESTS)} is gone; update it"
        )

#: the pure core's folders and modules (the ``core`` marker; see the module's documentation)
CORE_PATHS = tuple(
    TESTS / path
    for path in (
        "group",
        "assignors",
        "partitioning",
        "sim",
        "wire",
        "log",
        "member",
        "test_javacompat.py",
        "test_object_ids.py",
        "test_valuetypes.py",
    )
)
for _path in CORE_PATHS:
    if not _path.exists():  # a moved folder would silently fall back to the first run
        raise pytest.UsageError(
            f"tests/conftest.py CORE_PATHS: {_path.relative_to(TESTS)} is gone; update it"
        )


def _in_core(path: Path, known: dict[Path, bool]) -> bool:
    if path not in known:
        known[path] = any(path == where or path.is_relative_to(where) for where in CORE_PATHS)
    return known[path]


#: the modules whose tests take 15 s or more each (the slowest of a fresh-clone run's ``--durations``,
#: 2026-12-03): pytest-xdist hands the single tests out in collection order, so these go first of them
#: (longest first, as a scheduler packs jobs) instead of into a run's tail on one worker. The sim
#: modules among them are ``core`` now: ``make test`` runs them in one process, where the order does not
#: matter, and ``make test-core``'s workers still get them first. Only modules of the first run: with
#: the Apache Kafka run's long modules first (2026-12-03), two of three fresh-clone
#: runs lost a test there (an oracle call past its 120 s bound beside the failover tests' three-node
#: clusters; a share group's timing on Apache Kafka), so that run keeps its collection order
_LONG_FIRST = tuple(
    TESTS / path
    for path in (
        "sim/test_campaign.py",
        "sim/test_golden_outputs.py",
        "sim/test_examples.py",
        "sim/test_share_groups.py",
        "sim/test_consumer_protocol.py",
        "test_cli_progress.py",
        "bench/test_broker_bench.py",
        "client/test_group_consumer.py",
        "security/test_scram_admin.py",
        "faults/test_faults_kgroup.py",
    )
)
for _path in _LONG_FIRST:
    if not _path.exists():  # a moved module would silently go back to its place in the run
        raise pytest.UsageError(
            f"tests/conftest.py _LONG_FIRST: {_path.relative_to(TESTS)} is gone; update it"
        )
_LONG_RANK = {path: rank for rank, path in enumerate(_LONG_FIRST)}

#: fixtures that start (or reach) the run's Apache Kafka node or its Java oracle
_APACHE_FIXTURES = frozenset({"apache_kafka", "kafka_oracle"})
_SPARK_FIXTURES = frozenset({"spark", "kgroup_spark"})
#: fixtures of a Kafka broker for the Spark data source's tests (tests/spark/conftest.py), and the
#: run's Apache Kafka node itself (a Spark test beside a Java producer)
_BROKER_FIXTURES = frozenset({"kgroup_cluster", "kafka_cluster", "apache_kafka"})
#: the demo's tests: its pipeline starts a Kafka broker of its own
_DEMO_MODULES = frozenset({TESTS / "spark" / "test_demo.py"})


#: the Spark groups split in two by suite: the later suites' Spark tests (``-later``) share a session
#: of their own, so no one worker's queue of Spark tests grows to the length of the run
_SPLIT_GROUPS = frozenset({"spark", "spark-kafka"})


def _spark_group(item: pytest.Item, fixtures: set[str]) -> str | None:
    """The xdist group of a Spark test (see the module's documentation), or ``None`` for one that
    needs no shared session."""
    if "own_process_sessions" in fixtures:
        return "spark-own-process"
    if item.get_closest_marker("spark_own_process"):
        return None
    if item.path in _DEMO_MODULES:
        return "spark-demo"
    if fixtures & _BROKER_FIXTURES:
        return "spark-kafka"
    return "spark"


_APACHE_FOLDER = TESTS / "apache_kafka"


def _uses_apache_kafka(item: pytest.Item) -> bool:
    if _APACHE_FOLDER in item.path.parents or item.get_closest_marker("apache_kafka"):
        return True
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & _APACHE_FIXTURES:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    # the suite's convention: a parameter valued "apache" (test id ``[apache]``) runs on Apache Kafka
    return any(isinstance(value, str) and value == "apache" for value in params.values())


def _later_marks(path: Path, known: dict[Path, list[Any]]) -> list[Any]:
    """The LATER_SUITES marks of a test module (looked up once per module: a run has 6,000 tests)."""
    if path not in known:
        known[path] = [mark for where, mark in _LATER_PATHS if path.is_relative_to(where)]
    return known[path]


#: the groups that measure a broker's round trips while it does the heaviest work (the canaries, with
#: bounds on their worst round trip): handed out last, once the Spark groups' JVMs have started and the
#: run's other workers are draining, not beside four Spark starts at the run's beginning
_LAST_GROUPS = frozenset({"canary", "coordinator-canary"})


def _group_of(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name"))


def _run_order(item: pytest.Item, sizes: Counter[str | None]) -> tuple[int, int, str]:
    group = _group_of(item)
    if group in _LAST_GROUPS:
        return (4, 0, group or "")
    if group is not None:
        return (0, -sizes[group], group)
    if item.get_closest_marker("spark_own_process"):
        return (1, 0, "")
    return (2 if item.path in _LONG_RANK else 3, _LONG_RANK.get(item.path, 0), "")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    known: dict[Path, list[Any]] = {}
    core: dict[Path, bool] = {}
    for item in items:
        if _uses_apache_kafka(item) and not item.get_closest_marker("apache_kafka"):
            item.add_marker(pytest.mark.apache_kafka)
        for mark in _later_marks(item.path, known):
            if not item.get_closest_marker(mark.name):
                item.add_marker(mark)
        fixtures = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("spark") or fixtures & _SPARK_FIXTURES:
            group = _spark_group(item, fixtures)
            if group is not None:
                if group in _SPLIT_GROUPS and any(item.get_closest_marker(m) for m in LATER_SUITES):
                    group += "-later"
                item.add_marker(pytest.mark.xdist_group(group))
        elif _in_core(item.path, core) and not item.get_closest_marker("apache_kafka"):
            item.add_marker(pytest.mark.core)
    # make test runs pytest-xdist with --no-loadscope-reorder: it hands out the groups and single tests
    # in this order — the Spark groups first (most tests first: each is one worker's long queue), then
    # a test that starts Spark in a JVM of its own, then the long modules' tests (_LONG_FIRST), then
    # the rest, and the canaries last (_LAST_GROUPS)
    sizes = Counter(_group_of(item) for item in items)
    items.sort(key=lambda item: _run_order(item, sizes))


@pytest.fixture(autouse=True)
def _kernel_warmup_ends() -> Iterator[None]:
    """A broker started by a test warms its numba kernels in a thread of its own, and until they are
    ready the server assignors answer step by step (``kgroup.broker.warmup``): what a test starts ends
    with it, so the next test in this worker finds the fast paths as a process without a broker does."""
    yield
    warmup = sys.modules.get("kgroup.broker.warmup")
    started = getattr(warmup, "_started", None)
    if started is not None and started.is_alive():
        started.join(120)


def load_vectors(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """Every assignor vector file under ``tests/vectors/<kind>/`` as (relative name, data)."""
    files = sorted((VECTORS / kind).rglob("*.json"))
    return [(str(f.relative_to(VECTORS)), json.loads(f.read_text())) for f in files]


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    return VECTORS


@pytest.fixture(scope="session")
def spark() -> Any:
    """The one local Spark session of the test run (``local[2]``, no UI, 4 shuffle partitions).

    Every Spark test shares it; code under test that asks for a session (``get_spark``) gets this
    one back and leaves it running. Stopped when the run ends.
    """
    from kgroup.spark.session import get_spark

    session = get_spark("local[2]", app_name="kgroup-tests", shuffle_partitions=4)
    yield session
    session.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Where the run's time went, per test folder: the sum of every test's setup, call and teardown
    (with ``-n N`` the workers' times add up, so the sum is the work, not the wall time)."""
    totals: dict[str, list[float]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if not isinstance(report, pytest.TestReport):
                continue
            parts = report.nodeid.split("::", 1)[0].split("/")
            folder = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
            entry = totals.setdefault(folder, [0.0, 0.0])
            entry[0] += report.duration
            entry[1] += report.when == "call"
    if not totals:
        return
    terminalreporter.write_sep("=", "time per test folder (setup + call + teardown, summed over workers)")
    for folder, (seconds, count) in sorted(totals.items(), key=lambda kv: -kv[1][0])[:20]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {int(count):5d} tests  {folder}")
    suites: dict[str, list[float]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                suite = next((name for name in _SUITE_MARKERS if name in report.keywords), "(unmarked)")
                entry = suites.setdefault(suite, [0.0, 0.0])
                entry[0] += report.duration
                entry[1] += report.when == "call"
    terminalreporter.write_sep("=", "time per suite marker (summed over workers)")
    for suite, (seconds, count) in sorted(suites.items(), key=lambda kv: -kv[1][0]):
        terminalreporter.write_line(f"{seconds:8.1f} s  {int(count):5d} tests  {suite}")
