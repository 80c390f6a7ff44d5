"""The demo as a sequence of stages, each returning a result that the report renders as sections.

A stage is anything with a ``name``, a ``title`` and ``run(context) -> StageResult``. Stages run in
order; each sees the results of the stages before it in ``context.results`` (the partitioning stage
reads the events stage's DataFrame). A result knows three things about itself: its JSON form, a few
summary lines for the terminal, and its report sections. Adding a stage (the rebalance simulations
of a later issue) is one class plus one entry in :func:`default_stages` — nothing else changes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from kgroup.kafka_release import exact_to
from kgroup.model import KgroupError
from kgroup.report import Facts, Paragraph, Report, Section, Table

__all__ = [
    "DemoConfig",
    "DemoContext",
    "DemoRun",
    "Stage",
    "StageResult",
    "build_report",
    "run_demo",
]


#: Java's Long.MAX_VALUE: Spark counts events and seeds in longs
JAVA_LONG_MAX = 2**63 - 1
#: the most partitions the demo counts records for (the same limit as ``partition --input``)
MAX_DEMO_PARTITIONS = 1_000_000


@dataclass(frozen=True, slots=True)
class DemoConfig:
    """Everything the demo's stages read. The defaults are the embedded demo."""

    events: int = 1_000_000
    partitions: int = 12
    grow_to: int = 16
    seed: int = 42
    master: str = "local[*]"
    null_key_strategy: str = "adaptive"
    customers: int = 100_000
    zipf_exponent: float = 1.1
    keyless_share: float = 0.1
    rebalance_seeds: int = 2
    pipeline: bool = True

    def __post_init__(self) -> None:
        # Every option is checked here, before Spark starts: a bad value never costs a JVM start.
        if self.events < 1:
            raise KgroupError(f"events: {self.events}; generate at least 1 event")
        if self.events > JAVA_LONG_MAX:
            raise KgroupError(
                f"events: {self.events} does not fit Spark's long; give at most {JAVA_LONG_MAX:,}"
            )
        for name, count in (("partitions", self.partitions), ("grow-to", self.grow_to)):
            if not 1 <= count <= MAX_DEMO_PARTITIONS:
                raise KgroupError(
                    f"{name}: {count}; give a partition count from 1 to {MAX_DEMO_PARTITIONS:,} "
                    "(the demo counts every partition's records)"
                )
        if self.grow_to == self.partitions:
            raise KgroupError(
                f"grow-to: {self.grow_to}; give a partition count of 1 or more that differs from "
                f"--partitions ({self.partitions})"
            )
        if not 0 <= self.seed <= JAVA_LONG_MAX:
            raise KgroupError(f"seed: {self.seed}; give a whole number from 0 to {JAVA_LONG_MAX:,}")
        if not 0 <= self.rebalance_seeds <= 1000:
            raise KgroupError(
                f"rebalance-seeds: {self.rebalance_seeds}; give 0 (skip the rebalance stage) to 1000"
            )
        from kgroup.partitioning.partitioners.api import check_null_key_strategy
        from kgroup.spark.session import check_master

        check_null_key_strategy(self.null_key_strategy)
        check_master(self.master)

    def partition_counts(self) -> tuple[int, int]:
        return (self.partitions, self.grow_to)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class StageResult(Protocol):
    """What a stage hands back."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON data (the ``stages.<name>`` entry of ``kgroup demo --json``)."""
        ...

    def summary_lines(self) -> list[str]:
        """A few lines for the terminal (rich markup allowed)."""
        ...

    def report_sections(self) -> list[Section]:
        """The sections this result adds to the report."""
        ...


@dataclass
class DemoContext:
    """What stages share: the Spark session, the configuration, the earlier stages' results."""

    spark: Any
    config: DemoConfig
    results: dict[str, StageResult] = field(default_factory=dict)

    def result(self, name: str) -> StageResult:
        try:
            return self.results[name]
        except KeyError:
            raise KgroupError(
                f"demo stage {name!r} has not run; put it before the stages that read its result"
            ) from None


class Stage(Protocol):
    name: str
    title: str

    def run(self, context: DemoContext) -> StageResult: ...


@dataclass(frozen=True, slots=True)
class DemoRun:
    """A finished demo: its configuration, each stage's result (in order) and wall time."""

    config: DemoConfig
    results: tuple[tuple[str, StageResult], ...]
    seconds: tuple[tuple[str, float], ...]

    def result(self, name: str) -> StageResult:
        for stage_name, result in self.results:
            if stage_name == name:
                return result
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_json(),
            "stages": {name: result.to_json() for name, result in self.results},
            "seconds": {name: round(s, 3) for name, s in self.seconds},
        }


class _StageTimer(Protocol):
    def stage(self, description: str) -> Any: ...


def run_demo(
    context: DemoContext,
    stages: Sequence[Stage],
    progress: _StageTimer,
    clock: Callable[[], float],
) -> DemoRun:
    """Run ``stages`` in order; ``clock`` (seconds, monotonic) is injected to time them."""
    names = [s.name for s in stages]
    if len(set(names)) != len(names):
        raise KgroupError(f"demo stages {names}: a name is used twice; give every stage its own name")
    seconds: list[tuple[str, float]] = []
    for stage in stages:
        started = clock()
        with progress.stage(stage.title):
            context.results[stage.name] = stage.run(context)
        seconds.append((stage.name, clock() - started))
    return DemoRun(
        config=context.config,
        results=tuple((s.name, context.results[s.name]) for s in stages),
        seconds=tuple(seconds),
    )


def build_report(run: DemoRun, title: str = "kgroup demo") -> Report:
    """The demo's report: every stage's sections in order, then how the demo was run."""
    config = run.config
    report = Report(
        title=title,
        subtitle=(
            f"{config.events:,} synthetic events partitioned exactly as a Kafka producer "
            f"would ({exact_to()}), "
            f"for {config.partitions} and {config.grow_to} partitions"
            + (
                ", and a consumer group's rebalances simulated under every strategy"
                if config.rebalance_seeds
                else ""
            )
            + f", on Spark ({config.master})."
        ),
    )
    for _name, result in run.results:
        report.extend(result.report_sections())
        # a stage's own files beside the page (the rebalance stage's interactive timelines)
        for name, content in getattr(result, "report_attachments", dict)().items():
            report.attach(name, content)
    report.add(
        Section(
            "How this report was made",
            (
                Paragraph(
                    "Run with kgroup demo; the same seed and options give the same data and the same "
                    "keyed partitions. Keyless records depend on the seed and on how Spark split the data "
                    "into tasks (one modelled producer per task)."
                ),
                Facts(
                    tuple(
                        (k.replace("_", " "), v if not isinstance(v, bool) else str(v))
                        for k, v in config.to_json().items()
                    )
                ),
                Table(
                    ("stage", "seconds"),
                    tuple((name, round(s, 2)) for name, s in run.seconds),
                    caption="wall time per stage",
                ),
            ),
            anchor="how",
        )
    )
    report.attach("summary.json", json.dumps(run.to_json(), indent=2) + "\n")
    return report
