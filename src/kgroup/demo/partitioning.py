"""The demo's first two stages: generate skewed events in Spark, then partition them as Kafka would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgroup.demo.stages import DemoContext
from kgroup.report import Facts, Paragraph, Section, Table
from kgroup.report.charts import partition_counts_chart
from kgroup.spark.demo.events import EventSpec
from kgroup.spark.partitioning.results import CountSummary, PartitionSummary

__all__ = ["EventsResult", "EventsStage", "PartitioningResult", "PartitioningStage"]

KEY_COLUMN = "customer_id"


@dataclass(frozen=True, slots=True)
class EventsResult:
    """The generated events (a lazy Spark DataFrame) and how they were made."""

    spec: EventSpec
    dataframe: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.spec.events,
            "seed": self.spec.seed,
            "customers": self.spec.customers,
            "zipf_exponent": self.spec.zipf_exponent,
            "keyless_share": self.spec.keyless_share,
            "top_customer_expected_share": self.spec.customer_share(1),
            "key_column": KEY_COLUMN,
        }

    def summary_lines(self) -> list[str]:
        s = self.spec
        return [
            f"{s.events:,} events from {s.customers:,} customers (Zipf s={s.zipf_exponent}), "
            f"~{s.keyless_share:.0%} without a key; the top customer sends ~{s.customer_share(1):.1%} "
            "of keyed events"
        ]

    def report_sections(self) -> list[Section]:
        s = self.spec
        return [
            Section(
                "The events",
                (
                    Paragraph(
                        "Synthetic order events generated inside Spark. The key is the customer id; "
                        "customers follow a Zipf law, so a few customers send a large share of the "
                        "events — the hot keys that make hot partitions. Some events carry no key and "
                        "are spread by the producer's null-key strategy."
                    ),
                    Facts(
                        (
                            ("events", s.events),
                            ("customers", s.customers),
                            ("Zipf exponent", s.zipf_exponent),
                            ("keyless share (expected)", f"{s.keyless_share:.1%}"),
                            ("top customer's expected share of keyed events", f"{s.customer_share(1):.2%}"),
                            ("seed", s.seed),
                        )
                    ),
                ),
                anchor="events",
            )
        ]


class EventsStage:
    name = "events"
    title = "setting up the event generator (it runs inside the next stage's Spark job)"

    def run(self, context: DemoContext) -> EventsResult:
        from kgroup.spark.demo.events import generate_events

        c = context.config
        spec = EventSpec(
            events=c.events,
            seed=c.seed,
            customers=c.customers,
            zipf_exponent=c.zipf_exponent,
            keyless_share=c.keyless_share,
        )
        return EventsResult(spec, generate_events(context.spark, spec))


@dataclass(frozen=True, slots=True)
class PartitioningResult:
    """The partitioning summary of the events for the demo's two partition counts."""

    summary: PartitionSummary

    def to_json(self) -> dict[str, Any]:
        return self.summary.to_json()

    def summary_lines(self) -> list[str]:
        s = self.summary
        lines = [
            f"{s.records:,} records: {s.keyed_records:,} keyed ({s.distinct_keys:,} distinct keys), "
            f"{s.keyless_records:,} keyless ({s.null_key_strategy})"
        ]
        for count in s.counts:
            hot = count.hottest[0] if count.hottest else None
            top = (
                f", top key {hot.top_keys[0].key} ({hot.top_keys[0].records:,})"
                if hot and hot.top_keys
                else ""
            )
            where = f"; hottest partition {hot.partition}: {hot.records:,} records{top}" if hot else ""
            lines.append(
                f"{count.num_partitions} partitions: max/mean [bold]{count.max_over_mean:.2f}[/bold]{where}"
            )
        for m in s.moved:
            lines.append(
                f"{m.from_count} → {m.to_count} partitions: {m.keys_moved_share:.1%} of keys and "
                f"{m.records_moved_share:.1%} of keyed records change partition"
            )
        return lines

    def report_sections(self) -> list[Section]:
        s = self.summary
        sections = [
            Section(
                "Partitioning",
                (
                    Paragraph(
                        "Every event's partition is computed inside Spark, over Arrow batches, with "
                        "Kafka's murmur2: toPositive(murmur2(key bytes)) % partitions — exact to Kafka. "
                        f"Keyless events are placed by the {s.null_key_strategy!r} null-key strategy, one "
                        "modelled producer per Spark task."
                    ),
                    Facts(
                        (
                            ("records", s.records),
                            ("keyed records", s.keyed_records),
                            ("distinct keys", s.distinct_keys),
                            ("keyless records", s.keyless_records),
                            ("null-key strategy", s.null_key_strategy),
                            *(
                                (f"max/mean, {c.num_partitions} partitions", c.max_over_mean)
                                for c in s.counts
                            ),
                        )
                    ),
                ),
                anchor="partitioning",
            )
        ]
        sections.extend(_count_section(c) for c in s.counts)
        if s.moved:
            sections.append(_moved_section(s))
        sections.append(_per_partition_section(s))
        return sections


def _count_section(count: CountSummary) -> Section:
    hot_rows = tuple(
        (
            h.partition,
            h.records,
            round(h.records / count.mean, 2),
            ", ".join(f"{k.key} ({k.records:,})" for k in h.top_keys) or "(keyless only)",
        )
        for h in count.hottest
    )
    chart = partition_counts_chart(
        count.per_partition,
        hot=[h.partition for h in count.hottest],
        title=f"records per partition — {count.num_partitions} partitions",
        caption=(
            f"Orange: the hottest partitions; dashed line: the mean ({count.mean:,.0f}). "
            f"max/mean = {count.max_over_mean:.2f}."
        ),
        element_id=f"chart-{count.num_partitions}",
    )
    return Section(
        f"{count.num_partitions} partitions",
        (
            chart,
            Table(
                ("partition", "records", "× mean", "top keys (records)"),
                hot_rows,
                caption="the hottest partitions and their top keys",
            ),
        ),
        anchor=f"partitions-{count.num_partitions}",
    )


def _moved_section(summary: PartitionSummary) -> Section:
    rows = tuple(
        (
            f"{m.from_count} → {m.to_count}",
            m.keys_moved,
            f"{m.keys_moved_share:.1%}",
            f"{m.uniform_keys_moved_share:.1%}",
            m.records_moved,
            f"{m.records_moved_share:.1%}",
        )
        for m in summary.moved
    )
    return Section(
        "Changing the partition count",
        (
            Paragraph(
                "A key's partition is its hash modulo the partition count, so adding partitions moves "
                "most keys: per-key ordering and any state kept per partition break across the change. "
                "Only keyed records are counted; keyless records have no partition to keep. A key keeps "
                "its partition only if hash % a == hash % b, which for uniformly spread hashes holds for "
                "min(a, b) / lcm(a, b) of them — the expected share is 1 minus that."
            ),
            Table(
                (
                    "from → to",
                    "keys moved",
                    "share of keys",
                    "expected share (uniform hash)",
                    "records moved",
                    "share of keyed records",
                ),
                rows,
            ),
        ),
        anchor="moved",
    )


#: the per-partition table lists at most this many partitions (the full counts are in summary.json)
PER_PARTITION_ROWS = 256


def _per_partition_section(summary: PartitionSummary) -> Section:
    width = max(c.num_partitions for c in summary.counts)
    rows = tuple(
        (p, *(c.per_partition[p] if p < c.num_partitions else None for c in summary.counts))
        for p in range(min(width, PER_PARTITION_ROWS))
    )
    blocks: list[Any] = [
        Table(("partition", *(f"{c.num_partitions} partitions" for c in summary.counts)), rows)
    ]
    if width > PER_PARTITION_ROWS:
        blocks.append(
            Paragraph(
                f"The first {PER_PARTITION_ROWS} of {width:,} partitions; summary.json has every count."
            )
        )
    return Section("Records per partition", tuple(blocks), anchor="per-partition")


class PartitioningStage:
    name = "partitioning"
    title = "partitioning events with murmur2 (Spark, Arrow batches)"

    def run(self, context: DemoContext) -> PartitioningResult:
        from kgroup.spark.partitioning.job import summarize_partitions
        from kgroup.spark.partitioning.partition_column import with_kafka_partitions

        events = context.result("events")
        assert isinstance(events, EventsResult)
        counts = list(context.config.partition_counts())
        columns = [f"partition_{n}" for n in counts]
        partitioned = with_kafka_partitions(
            events.dataframe,
            KEY_COLUMN,
            counts,
            null_key_strategy=context.config.null_key_strategy,
            seed=context.config.seed,
            output_columns=columns,
        )
        summary = summarize_partitions(
            partitioned,
            KEY_COLUMN,
            counts,
            columns,
            key_type="string",
            null_key_strategy=context.config.null_key_strategy,
            seed=context.config.seed,
        )
        return PartitioningResult(summary)
