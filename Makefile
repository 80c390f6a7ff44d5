# The two set-up commands of the README: `make demo` and `make test`.
# Both create ./.venv on first use (idempotent: reinstalls only when pyproject.toml changes).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test test-core lint bench kafka faults-tools faults clean-venv

# pytest-xdist workers: most tests wait on sockets, brokers and sleeps, so more workers than cores pay
TEST_WORKERS ?= 4
# the Apache Kafka tests: three workers — each worker starts its own Apache Kafka node (a JVM, lean in
# tests: C1 only, serial GC) and its Java clients; the tests mostly wait on those JVMs and on Kafka's
# real timeouts, so a third worker shortens the run more than it loads the two cores
KAFKA_TEST_WORKERS ?= 3
# the suites issues after the suite's 4-minute budget (issue 19) added carry markers of their own
# (tests/conftest.py LATER_SUITES): make test runs them with the rest in its first run (one collection,
# one tail; the run ends with its time per marker), the Apache Kafka tests in its second
PYTEST := $(VENV)/bin/python -m pytest
# xdist groups (a worker's one SparkSession, one broker per canary module), handed out in the order
# tests/conftest.py sorts them (--no-loadscope-reorder: not by size; long queues first, canaries last)
DIST := --dist loadgroup --no-loadscope-reorder
# every process of a test run (pytest's workers, Spark's Python workers, the kgroup commands the
# tests start) reads kgroup's and the tests' bytecode from __pycache__ instead of compiling the
# sources again: a machine that turns bytecode off (PYTHONDONTWRITEBYTECODE) is overruled here
unexport PYTHONDONTWRITEBYTECODE
# each run ends with its slowest tests (where the suite's time goes; docs/testing.md)
DURATIONS ?= --durations=25 --durations-min=5

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/kgroup demo

# Apache Kafka's jars (the pinned release, kgroup's reference) into ~/.cache/kgroup with mvn; CI must
# have them, elsewhere the tests that need them skip with the reason
kafka: $(STAMP)
	$(VENV)/bin/python -m kgroup.testing.apache_kafka fetch

# toxiproxy (the pinned release, built with `go install` into ~/.cache/kgroup/toxiproxy) for the fault
# tests (tests/faults, docs/faults.md); CI must have it, elsewhere those tests skip with the reason
faults-tools: $(STAMP)
	$(VENV)/bin/python -m kgroup.testing.faults fetch

# the full fault matrix on kgroup serve and Apache Kafka beside the simulator (docs/faults.md; ~15 min)
faults: $(STAMP)
	$(VENV)/bin/python benchmarks/run_faults.py

# two timed runs, the second run even if the first fails: every test but Apache Kafka's and the pure
# core's (the suites later issues added each report their time under their own marker), on all cores;
# then the tests that start Apache Kafka (issue 16's marker), which wait on JVMs and Kafka's timeouts
# more than they compute, and beside them, on the CPU they leave, the pure core's tests in one process
# (the `core` marker: tests/conftest.py CORE_PATHS) at a low priority (nice): they take only what the
# Apache Kafka run leaves idle, and its brokers and clients keep their timing
test: $(STAMP)
	@$(VENV)/bin/python -m kgroup.testing.apache_kafka fetch || test -z "$$CI"
	@$(VENV)/bin/python -m kgroup.testing.faults fetch || test -z "$$CI"
	@# Debian's chromium opens the reports' interactive timeline in tests/report (headless)
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) || test -z "$$CI"
	$(VENV)/bin/ruff check src tests benchmarks
	@# beside mypy, on the other core, what every test worker would otherwise do at once: compile
	@# numba's kernels (numba's cache), read the test modules (bytecode, assertion rewriting) and
	@# build Spark's class-data-sharing archive (tests/jvm_archive.py: each Spark start in half the CPU)
	@($(VENV)/bin/python -m kgroup.kernels --jobs 2 && $(VENV)/bin/python tests/jvm_archive.py) & warmed=$$!; \
	$(PYTEST) --collect-only -q -p no:cacheprovider > /dev/null & collected=$$!; \
	$(VENV)/bin/mypy && $(VENV)/bin/lint-imports; status=$$?; \
	wait $$warmed || status=1; wait $$collected || status=1; exit $$status
	@status=0; \
	echo "== 1. every test but Apache Kafka's and the pure core's: the suite and the suites later issues added, each under its marker (-m 'not apache_kafka and not core', $(TEST_WORKERS) workers)"; \
	$(PYTEST) -m "not apache_kafka and not core" -n $(TEST_WORKERS) $(DIST) $(DURATIONS) || status=1; \
	echo "== 2. the tests that start Apache Kafka, its Java client or its oracle (-m apache_kafka, $(KAFKA_TEST_WORKERS) workers), and beside them the pure core's (-m core, one process: its report follows)"; \
	core_log=$$(mktemp); \
	nice -n 15 $(PYTEST) -m core -p no:cacheprovider $(DURATIONS) > $$core_log 2>&1 & core=$$!; \
	$(PYTEST) -m apache_kafka -n $(KAFKA_TEST_WORKERS) $(DIST) $(DURATIONS) || status=1; \
	wait $$core || status=1; \
	echo "== 3. the pure core's tests, run beside Apache Kafka's (-m core)"; \
	cat $$core_log; rm -f $$core_log; \
	exit $$status

# the pure core alone, in seconds: no servers, no Spark, no Apache Kafka
test-core: $(STAMP)
	$(PYTEST) -m core -n $(TEST_WORKERS) -p no:cacheprovider

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/bench_murmur2.py

clean-venv:
	rm -rf $(VENV)
