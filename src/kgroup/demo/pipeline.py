"""The demo's data pipeline: the events through a real Kafka broker and back, on Spark.

The stage starts kgroup's embedded broker (:class:`kgroup.testing.KafkaBroker`, 127.0.0.1, a
temporary data directory), writes every generated event to a topic through kgroup's Spark sink
(``df.write.format("kgroup")``: keyed events on the partition a Java producer picks, keyless ones by
the demo's null-key strategy), then reads the topic back with Structured Streaming
(``readStream.format("kgroup")``, ``Trigger.AvailableNow``, a Parquet file sink with a checkpoint)
in each consumption mode the source offers, and checks, per mode, that every produced record was
read exactly once: the records read per key equal the generator's counts, no (partition, offset)
twice, and every keyed record on ``toPositive(murmur2(key)) % partitions``.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.demo.stages import DemoContext
from kgroup.report import Facts, Paragraph, Section, Table

__all__ = ["PipelineResult", "PipelineStage", "ReadCheck"]

TOPIC = "demo-events"
#: the consumer group of the per-group read, and the members the Spark query holds in it
GROUP = "demo-spark-group"
GROUP_MEMBERS = 3
#: a micro-batch reads at most this share of the topic, so the streaming read takes several batches
BATCHES_PER_READ = 4


def records_per_batch(events: int, batches: int, partitions: int) -> int:
    """``maxOffsetsPerTrigger`` for reading ``events`` in ``batches`` micro-batches. Spark's Kafka
    source (and kgroup's, exact to it) shares the limit out over the partitions rounding each share
    down, so ``events // batches`` left a few records (26 of 1,000,000 on 12 partitions) for one
    more micro-batch, which cost a whole batch's fixed overhead (about 1 s); ``partitions`` more
    records per batch covers the rounding."""
    return max(1, -(-events // batches) + partitions)


@dataclass(frozen=True, slots=True)
class ReadCheck:
    """One read of the topic back, and what the checks found."""

    mode: str
    records: int
    batches: int
    seconds: float
    key_count_mismatches: int  # keys whose count read differs from the generator's (incl. null key)
    duplicate_offsets: int  # (partition, offset) pairs read more than once
    misplaced_keyed: int  # keyed records not on murmur2's partition
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def exactly_once(self) -> bool:
        return self.key_count_mismatches == 0 and self.duplicate_offsets == 0 and self.misplaced_keyed == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "records": self.records,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "key_count_mismatches": self.key_count_mismatches,
            "duplicate_offsets": self.duplicate_offsets,
            "misplaced_keyed": self.misplaced_keyed,
            "exactly_once": self.exactly_once,
            **dict(self.extra),
        }


@dataclass(frozen=True, slots=True)
class PipelineResult:
    topic: str
    partitions: int
    produced: int
    produce_seconds: float
    records_per_partition: tuple[int, ...]
    reads: tuple[ReadCheck, ...]
    notes: tuple[str, ...] = field(default=())
    #: the per-group read's group as the broker recorded it (``kgroup serve --record``), if it did
    recording: Any = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partitions": self.partitions,
            "produced": self.produced,
            "produce_seconds": round(self.produce_seconds, 3),
            "records_per_partition": list(self.records_per_partition),
            "reads": [r.to_json() for r in self.reads],
            "notes": list(self.notes),
            "group_recording": None if self.recording is None else self.recording.metrics,
        }

    def summary_lines(self) -> list[str]:
        rate = self.produced / self.produce_seconds if self.produce_seconds > 0 else 0.0
        lines = [
            # the time is the whole Spark job: the events are generated in it (they are not cached),
            # encoded as JSON and written by the sink, the session's first write starting its workers
            f"generated {self.produced:,} events and produced them to {self.topic} ({self.partitions} "
            f"partitions) through the Spark sink in one job: {self.produce_seconds:.1f} s "
            f"({rate:,.0f} records/s)"
        ]
        for r in self.reads:
            verdict = "[green]exactly once[/green]" if r.exactly_once else "[red]NOT exactly once[/red]"
            extra = dict(r.extra)
            first = extra.get("first_batch_seconds")
            warm = "" if first is None else f" (the first micro-batch {first:.1f} s)"
            by_spark = extra.get("records_read_by_spark")
            share = "" if by_spark is None else f", {by_spark:,} of them by Spark"
            lines.append(
                f"read back per {r.mode}: {r.records:,} records{share} in {r.batches} micro-batches, "
                f"{r.seconds:.1f} s{warm} — {verdict}"
            )
        if len(self.reads) > 1:
            lines.append(
                "[dim]the two reads' times do not compare: the per-partition read runs first and pays the "
                "session's first streaming query (Spark starts its Python workers, compiles the plan, opens "
                "the Parquet sink: its first micro-batch takes several times the others); the per-group "
                "read's plain consumer reads its partitions beside Spark, which reads the rest[/dim]"
            )
        lines.extend(self.notes)
        return lines

    def report_sections(self) -> list[Section]:
        rows = tuple(
            (
                r.mode,
                f"{r.records:,}",
                r.batches,
                f"{r.seconds:.1f}",
                r.key_count_mismatches,
                r.duplicate_offsets,
                r.misplaced_keyed,
                "yes" if r.exactly_once else "NO",
            )
            for r in self.reads
        )
        return [
            Section(
                "Through Kafka and back",
                (
                    Paragraph(
                        "The events were produced to kgroup's embedded Kafka-protocol broker through "
                        "kgroup's Spark sink (keyed events on the partition a Java producer picks), "
                        "then read back with Structured Streaming (Trigger.AvailableNow into a Parquet "
                        "file sink) in each consumption mode, and checked record by record."
                    ),
                    Facts(
                        (
                            ("topic", f"{self.topic} ({self.partitions} partitions)"),
                            ("records produced", self.produced),
                            (
                                "produce job (generating the events, JSON, the sink)",
                                f"{self.produce_seconds:.1f} s",
                            ),
                            (
                                "records per partition (log end offsets)",
                                ", ".join(f"{n:,}" for n in self.records_per_partition),
                            ),
                        )
                    ),
                    Table(
                        (
                            "consumption",
                            "records read",
                            "micro-batches",
                            "seconds",
                            "keys with a wrong count",
                            "offsets read twice",
                            "keyed records off murmur2's partition",
                            "exactly once",
                        ),
                        rows,
                    ),
                    *(Paragraph(note) for note in self.notes),
                ),
                anchor="pipeline",
            ),
            *self._group_sections(),
        ]

    def _group_sections(self) -> list[Section]:
        """The per-group read's rebalances as the broker recorded them (``kgroup serve --record``)."""
        if self.recording is None:
            return []
        from kgroup.report.recording import recording_sections

        intro = Section(
            "The Spark job's consumer group, as the broker saw it",
            (
                Paragraph(
                    f"The per-group read: the Spark query's {GROUP_MEMBERS} members joined the group "
                    f"{GROUP!r}; a plain confluent-kafka consumer joined mid-stream, the group rebalanced "
                    "between two micro-batches, and the job's later batches read only its own partitions. "
                    "kgroup's broker recorded every join, generation and assignment (kgroup serve --record); "
                    "the timeline below is that recording, drawn as the simulator draws its runs."
                ),
            ),
            anchor="pipeline-group",
        )
        return [intro, *recording_sections(self.recording, title_prefix="Group: ", events=False)]


class PipelineStage:
    name = "pipeline"
    title = "producing the events to the embedded Kafka broker and reading them back"

    def run(self, context: DemoContext) -> PipelineResult:
        from kgroup.demo.partitioning import KEY_COLUMN
        from kgroup.spark.demo.roundtrip import (
            ReadBack,
            log_end_offsets,
            produce_events,
            read_back_and_check,
            read_back_in_group,
        )
        from kgroup.testing import KafkaBroker

        spark = context.spark
        config = context.config
        events = context.result("events").dataframe  # type: ignore[attr-defined]
        with (
            tempfile.TemporaryDirectory(prefix="kgroup-demo-") as tmp,
            KafkaBroker(topics={TOPIC: config.partitions}, record_dir=Path(tmp) / "recording") as broker,
        ):
            bootstrap = broker.bootstrap_servers
            produce_seconds = produce_events(
                spark, events, KEY_COLUMN, bootstrap, TOPIC, config.null_key_strategy, config.seed
            )
            per_partition = log_end_offsets(bootstrap, TOPIC, config.partitions)
            per_batch = records_per_batch(config.events, BATCHES_PER_READ, config.partitions)
            source = ReadBack(spark, events, KEY_COLUMN, bootstrap, TOPIC, config.partitions)
            checks = [
                read_back_and_check(source, Path(tmp) / "partition", per_batch, {}),
                read_back_in_group(
                    source,
                    Path(tmp) / "group",
                    records_per_batch(config.events, 2 * BATCHES_PER_READ, config.partitions),
                    GROUP,
                    GROUP_MEMBERS,
                ),
            ]
            broker.stop()  # the recorder writes the group's recording when the broker stops
            recording = _load_recording(Path(tmp) / "recording", GROUP)
        return PipelineResult(
            topic=TOPIC,
            partitions=config.partitions,
            produced=sum(per_partition),
            produce_seconds=produce_seconds,
            records_per_partition=tuple(per_partition),
            reads=tuple(ReadCheck(**check) for check in checks),
            recording=recording,
        )


def _load_recording(folder: Path, group: str) -> Any:
    from kgroup.report.recording import load_recording

    path = folder / group / "result.json"
    return load_recording(path) if path.exists() else None
