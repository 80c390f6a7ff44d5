"""``kgroup demo``: partition skewed events as Kafka would and simulate rebalances, on Spark; a report."""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import typer

from kgroup.cli.output import console, emit_json, prepare_report_dir

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("demo")(demo_command)


def demo_command(
    events: Annotated[int, typer.Option("--events", help="Number of events to generate.")] = 1_000_000,
    partitions: Annotated[int, typer.Option("--partitions", help="Partition count of the topic.")] = 12,
    grow_to: Annotated[
        int, typer.Option("--grow-to", help="A second partition count, to show which keys move.")
    ] = 16,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the events and of the null-key strategy.")
    ] = 42,
    master: Annotated[
        str, typer.Option("--master", help="Spark master URL (local[*], spark://host:7077, ...).")
    ] = "local[*]",
    null_key_strategy: Annotated[
        str,
        typer.Option(
            "--null-key-strategy",
            help="How keyless events are spread: adaptive, uniform-sticky, round-robin, "
            "legacy-round-robin.",
        ),
    ] = "adaptive",
    rebalance_seeds: Annotated[
        int,
        typer.Option(
            "--rebalance-seeds",
            help="Seeds per strategy in the rebalance simulations (0 skips that stage).",
        ),
    ] = 2,
    pipeline: Annotated[
        bool,
        typer.Option(
            "--pipeline/--no-pipeline",
            help="Produce the events to the embedded Kafka broker and read them back on Spark.",
        ),
    ] = True,
    report: Annotated[Path, typer.Option("--report", help="Folder for the HTML report (index.html).")] = Path(
        "kgroup-report"
    ),
    json_output: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> int:
    """Run the demo on local Spark: ~1M skewed events partitioned exactly as Kafka would, and a consumer
    group's rebalances simulated under every strategy, with a report.

    Writes REPORT/index.html (charts and tables, self-contained) and REPORT/summary.json.
    """
    from kgroup.cli.partition_input import StageProgress
    from kgroup.demo import DemoConfig, DemoContext, build_report, default_stages, run_demo
    from kgroup.spark.session import spark_session

    config = DemoConfig(
        events=events,
        partitions=partitions,
        grow_to=grow_to,
        seed=seed,
        master=master,
        null_key_strategy=null_key_strategy,
        rebalance_seeds=rebalance_seeds,
        pipeline=pipeline,
    )
    prepare_report_dir(report)
    progress = StageProgress(enabled=not json_output)
    stages = default_stages(config)
    with ExitStack() as stack:
        with progress.stage(f"starting Spark ({master})"):
            spark = stack.enter_context(spark_session(master, app_name="kgroup-demo"))
        run = run_demo(DemoContext(spark, config), stages, progress, time.perf_counter)
    with progress.stage(f"writing the report to {report}"):
        index = build_report(run).write(report)
    if json_output:
        emit_json({"report": str(index), **run.to_json()})
        return 0
    for name, result in run.results:
        console.print(f"[bold]{name}[/bold]")
        for line in result.summary_lines():
            console.print(f"  {line}")
    console.print(f"\nreport: [bold]{index}[/bold]")
    return 0
