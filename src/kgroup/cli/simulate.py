"""``kgroup simulate``: run a scenario file through the deterministic simulator, or compare strategies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kgroup.cli.output import console, emit_json, err_console, prepare_report_dir, step_progress
from kgroup.model import KgroupError

__all__ = ["register"]


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise KgroupError(
            "--assignors: give one or more assignor names, comma-separated (e.g. range,cooperative-sticky)"
        )
    return names


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate_command(
        scenario: Path = typer.Argument(..., help="scenario YAML file (see docs/simulator.md)"),  # noqa: B008
        assignors: str | None = typer.Option(
            None, "--assignors", help="override group.assignors: comma-separated, in preference order"
        ),
        protocol: str | None = typer.Option(
            None, "--protocol", help="eager or cooperative (see docs/simulator.md)"
        ),
        static: bool = typer.Option(False, "--static", help="make every consumer static (group.instance.id)"),
        dynamic: bool = typer.Option(False, "--dynamic", help="make every consumer dynamic"),
        seed: int | None = typer.Option(None, "--seed", help="override the scenario's seed"),
        as_json: bool = typer.Option(False, "--json", help="print JSON (byte-identical for the same seed)"),
        report: Path | None = typer.Option(  # noqa: B008
            None, "--report", help="write an HTML report into this directory"
        ),
        compare: bool = typer.Option(
            False, "--compare", help="run every strategy × protocol × static/dynamic and compare"
        ),
        seeds: int | None = typer.Option(
            None, "--seeds", help="--compare: seeds per variant (seed, seed+1, …; default 1)"
        ),
        engine: str | None = typer.Option(
            None, "--engine", help="--compare: spark (default) or local (in-process)"
        ),
        master: str | None = typer.Option(
            None, "--master", help="--compare on Spark: the Spark master URL (default local[*])"
        ),
    ) -> None:
        """Simulate a consumer group's rebalances over virtual time (deterministic for a seed)."""
        from kgroup.sim.scenario import load_scenario
        from kgroup.sim.variants import with_overrides

        _check_options(static, dynamic, compare, seeds, engine, master)
        base = load_scenario(scenario)
        if report is not None:
            prepare_report_dir(report)
        membership = "static" if static else "dynamic" if dynamic else None
        if compare:
            seeds = 1 if seeds is None else seeds
            engine = engine or "spark"
            master = master or "local[*]"
            if assignors is not None or protocol is not None:
                raise KgroupError("--compare runs every strategy and protocol; drop --assignors/--protocol")
            if seeds < 1 or seeds > 1000:
                raise KgroupError(f"--seeds: {seeds} is out of range; give 1..1000")
            if engine not in ("spark", "local"):
                raise KgroupError(f"--engine: {engine!r} is unknown; use spark or local")
            start = base.seed if seed is None else seed
            if start < 0:
                raise KgroupError(f"--seed: {start} is negative; give a whole number >= 0")
            _compare(base, membership, [start + k for k in range(seeds)], engine, master, as_json, report)
            return
        sc = with_overrides(
            base, assignors=_split(assignors), protocol=protocol, membership=membership, seed=seed
        )
        from kgroup.sim.runner import simulate

        result = simulate(sc)
        if report is not None:
            from kgroup.report.timeline import write_simulation_report

            page = write_simulation_report(result, report)
            err_console.print(f"report: {page}")
        if as_json:
            typer.echo(result.to_json(), nl=False)
            return
        _print_summary(result)


def _check_options(
    static: bool, dynamic: bool, compare: bool, seeds: int | None, engine: str | None, master: str | None
) -> None:
    """Options that contradict each other, or that only --compare reads, fail before any work."""
    if static and dynamic:
        raise KgroupError("--static and --dynamic: choose one (or neither, to keep the file's own)")
    if not compare:
        given = [name for name, value in (("--seeds", seeds), ("--engine", engine), ("--master", master))
                 if value is not None]
        if given:
            raise KgroupError(f"{given[0]}: only applies with --compare; add --compare or drop it")
    elif engine == "local" and master is not None:
        raise KgroupError("--master: only applies with --engine spark; drop it")
    if master is not None:
        from kgroup.spark.session import check_master

        check_master(master)


def _print_summary(result: Any) -> None:
    from rich.table import Table

    m = result.metrics
    sc = result.scenario
    table = Table(
        title=f"{sc.name} (seed {sc.seed}, {sc.duration_ms} ms, assignors {', '.join(sc.group.assignors)})"
    )
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in m.items():
        if key in ("invariant_violations", "final_assignment", "time_to_stable_ms"):
            continue
        table.add_row(key, str(value))
    times = ", ".join("never" if t is None else str(t) for t in m["time_to_stable_ms"]) or "-"
    table.add_row("time_to_stable_ms", times)
    table.add_row("invariant_violations", str(len(m["invariant_violations"])))
    console.print(table)
    for line in m["invariant_violations"][:10]:
        console.print(f"[red]violation[/red] {line}")


# short headers for the terminal table (the JSON and the report keep the metric names)
_SHORT = {
    "unowned_partition_ms": "unowned_ms",
    "double_owned_ms": "double_ms",
    "zombie_owned_ms": "zombie_ms",
    "moved_partitions": "moved",
    "max_time_to_stable_ms": "to_stable_ms",
    "max_lag_records": "max_lag",
    "records_reprocessed": "reprocessed",
    "invariant_violations": "violations",
}


def _compare(
    base: Any,
    membership: str | None,
    seeds: list[int],
    engine: str,
    master: str,
    as_json: bool,
    report: Path | None,
) -> None:
    from kgroup.sim.compare import SUMMARY_COLUMNS, run_local, summarize
    from kgroup.sim.variants import MEMBERSHIPS, compare_variants

    memberships: tuple[str | None, ...] = MEMBERSHIPS if membership is None else (membership,)
    variants, skipped = compare_variants(memberships=memberships)
    runs = len(variants) * len(seeds)
    what = f"simulating {runs} runs ({len(variants)} variants × {len(seeds)} seed(s))"
    if engine == "spark":
        from contextlib import ExitStack

        from kgroup.cli.partition_input import StageProgress
        from kgroup.spark.progress import watch_tasks
        from kgroup.spark.session import spark_session
        from kgroup.spark.sweep import run_sweep

        with ExitStack() as stack:
            with StageProgress(enabled=not as_json).stage(f"starting Spark ({master})"):
                spark = stack.enter_context(spark_session(master, app_name="kgroup-simulate-sweep"))
            with step_progress(f"{what} on Spark", runs, enabled=not as_json) as done:
                with watch_tasks(spark, lambda completed, total: done(completed) if total == runs else None):
                    rows, summary = run_sweep([base], variants, seeds, spark=spark)
                done(runs)
    else:
        with step_progress(what, runs, enabled=not as_json) as done:
            rows = run_local(base, variants, seeds, on_run=done)
        summary = summarize(rows)
    skipped_out = [(v.label, why) for v, why in skipped]
    if report is not None:
        from kgroup.report.timeline import write_comparison_report

        page = write_comparison_report(
            f"kgroup simulate --compare: {base.name}",
            summary,
            SUMMARY_COLUMNS,
            skipped_out,
            report,
            rows,
            scenario=base,
            seeds=seeds,
            how=f"Every strategy × protocol × membership Kafka can run, {len(seeds)} seed(s) each, "
            + ("one Spark task per simulation." if engine == "spark" else "in one process."),
        )
        err_console.print(f"report: {page}")
    if as_json:
        emit_json(
            {
                "scenario": base.name,
                "seeds": seeds,
                "summary": summary,
                "skipped": [{"variant": v, "reason": why} for v, why in skipped_out],
                "runs": rows,
            }
        )
        return
    from rich.console import Console
    from rich.table import Table

    # the comparison is wide: never squeeze it into a narrow (or absent) terminal
    wide = Console(highlight=False, width=max(console.width, 170))
    table = Table(title=f"{base.name}: strategies compared (means over {len(seeds)} seed(s))")
    for column in SUMMARY_COLUMNS:
        if column == "variant":
            table.add_column(column, no_wrap=True)
        else:
            table.add_column(_SHORT.get(column, column), justify="right")
    from kgroup.report.html import format_cell

    for row in summary:
        table.add_row(*(format_cell(row[c]) for c in SUMMARY_COLUMNS))
    wide.print(table)
    for label, why in skipped_out:
        wide.print(f"not run: {label} — {why}")
