# The two set-up commands of the README: `make demo` and `make test`.
# Both create ./.venv on first use (idempotent: reinstalls only when pyproject.toml changes).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench kafka clean-venv

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

test: $(STAMP)
	@$(VENV)/bin/python -m kgroup.testing.apache_kafka fetch || test -z "$$CI"
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/python -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/bench_murmur2.py

clean-venv:
	rm -rf $(VENV)
