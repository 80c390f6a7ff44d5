"""``kgroup simulate``: run a scenario file through the deterministic simulator, or compare strategies."""

from __future__ import annotations

import sys
from dataclasses import dataclass
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
        scenario: Path | None = typer.Argument(  # noqa: B008
            None, help="scenario YAML file (see docs/simulator.md); not with --campaign"
        ),
        assignors: str | None = typer.Option(
            None,
            "--assignors",
            help="override group.assignors: comma-separated, in preference order "
            "(with the consumer protocol: the server assignor, uniform or range)",
        ),
        protocol: str | None = typer.Option(
            None,
            "--protocol",
            help="eager or cooperative (the classic protocol), consumer (KIP-848) or share (a share group, "
            "KIP-932); see docs/simulator.md",
        ),
        processing: str | None = typer.Option(
            None,
            "--processing",
            help="override workload.processing: at_least_once or exactly_once (consume-transform-produce "
            "in transactions; with --compare each consumer group runs both)",
        ),
        static: bool = typer.Option(False, "--static", help="make every consumer static (group.instance.id)"),
        dynamic: bool = typer.Option(False, "--dynamic", help="make every consumer dynamic"),
        seed: int | None = typer.Option(None, "--seed", help="override the scenario's seed"),
        as_json: bool = typer.Option(False, "--json", help="print JSON (byte-identical for the same seed)"),
        report: Path | None = typer.Option(  # noqa: B008
            None, "--report", help="write an HTML report into this directory"
        ),
        compare: bool = typer.Option(
            False,
            "--compare",
            help="run every strategy × protocol (eager, cooperative, consumer, share) × static/dynamic "
            "and compare",
        ),
        seeds: int | None = typer.Option(
            None, "--seeds", help="--compare: seeds per variant (seed, seed+1, …; default 1)"
        ),
        engine: str | None = typer.Option(
            None,
            "--engine",
            help="--compare: auto (default: Spark only where it pays, see docs/simulator.md), spark or local "
            "(in-process); --campaign: spark (default) or local",
        ),
        master: str | None = typer.Option(
            None, "--master", help="--compare / --campaign on Spark: the Spark master URL (default local[*])"
        ),
        campaign: int | None = typer.Option(
            None,
            "--campaign",
            help="run N random fault scenarios (seeds --seed .. --seed+N-1) and check them",
        ),
        failures_dir: Path = typer.Option(  # noqa: B008
            Path("campaign-failures"), "--failures-dir", help="--campaign: where shrunk failing scenarios go"
        ),
        step_by_step: bool = typer.Option(
            False,
            "--step-by-step",
            help="run every step one by one (no steady heartbeats in closed form: the same results, slower; "
            "to check that they are the same)",
        ),
    ) -> None:
        """Simulate a consumer group's rebalances over virtual time (deterministic for a seed)."""
        from kgroup.sim.scenario import load_scenario
        from kgroup.sim.variants import with_overrides

        if step_by_step and (campaign is not None or compare):
            raise KgroupError(
                "--step-by-step: applies to one scenario's run; drop it or --campaign/--compare"
            )
        if campaign is not None:
            if scenario is not None or compare:
                raise KgroupError("--campaign draws its own scenarios; drop the scenario file and --compare")
            given = [
                name
                for name, value in (
                    ("--assignors", assignors),
                    ("--protocol", protocol),
                    ("--processing", processing),
                    ("--static", static or None),
                    ("--dynamic", dynamic or None),
                    ("--seeds", seeds),
                    ("--report", report),
                )
                if value is not None
            ]
            if given:
                raise KgroupError(
                    f"{given[0]}: does not apply to --campaign (each seed draws its own); drop it"
                )
            if engine == "local" and master is not None:
                raise KgroupError("--master: only applies with --engine spark; drop it")
            if not 1 <= campaign <= 1_000_000:
                raise KgroupError(f"--campaign: {campaign} is out of range; give 1..1000000 scenarios")
            engine = engine or "spark"
            if engine not in ("spark", "local"):
                raise KgroupError(f"--engine: {engine!r} is unknown for --campaign; use spark or local")
            start = 0 if seed is None else seed
            if start < 0:
                raise KgroupError(f"--seed: {start} is negative; give a whole number >= 0")
            _campaign(campaign, start, engine, master or "local[*]", as_json, failures_dir)
            return
        if scenario is None:
            raise KgroupError("scenario: missing; give a scenario YAML file (or --campaign N)")
        _check_options(static, dynamic, compare, seeds, engine, master)
        base = load_scenario(scenario)
        from kgroup.sim.scenario import no_op_events

        for note in no_op_events(base):  # valid, but in a hand-written file most likely a mistake
            sys.stderr.write(f"kgroup: warning: {note}\n")
        if report is not None:
            prepare_report_dir(report)
        membership = "static" if static else "dynamic" if dynamic else None
        if processing is not None:
            base = with_overrides(base, processing=processing)
        if compare:
            seeds = 1 if seeds is None else seeds
            # a --master is a Spark the user asks for; otherwise auto decides (choose_engine)
            engine = "spark" if master is not None and engine in (None, "auto") else engine or "auto"
            master = master or "local[*]"
            if assignors is not None or protocol is not None:
                raise KgroupError("--compare runs every strategy and protocol; drop --assignors/--protocol")
            if seeds < 1 or seeds > 1000:
                raise KgroupError(f"--seeds: {seeds} is out of range; give 1..1000")
            if engine not in ("auto", "spark", "local"):
                raise KgroupError(f"--engine: {engine!r} is unknown; use auto, spark or local")
            start = base.seed if seed is None else seed
            if start < 0:
                raise KgroupError(f"--seed: {start} is negative; give a whole number >= 0")
            _compare(base, membership, [start + k for k in range(seeds)], engine, master, as_json, report)
            return
        sc = with_overrides(
            base, assignors=_split(assignors), protocol=protocol, membership=membership, seed=seed
        )
        result = _run_with_progress(
            sc, show=not as_json and err_console.is_terminal, coasting=not step_by_step
        )
        if report is not None:
            from kgroup.report.timeline import write_simulation_report

            page = write_simulation_report(result, report)
            err_console.print(f"report: {page}")
        if as_json:
            typer.echo(result.to_json(), nl=False)
            return
        _print_summary(result)


def _run_with_progress(scenario: Any, *, show: bool, coasting: bool = True) -> Any:
    """Run one simulation; on a terminal, a progress line (virtual time, wall time, an estimate)."""
    from kgroup.sim.runner import simulate

    if not show:
        return simulate(scenario, coasting=coasting)
    import time

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(
        TextColumn("simulating"),
        BarColumn(),
        TextColumn("{task.fields[virtual]} of {task.fields[length]} virtual"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        total_s = scenario.duration_ms // 1000
        task = bar.add_task("run", total=scenario.duration_ms, virtual="0 s", length=f"{total_s} s")
        last = [0.0]

        def progress(now_ms: int, duration_ms: int) -> None:
            wall = time.perf_counter()
            if wall - last[0] >= 0.2:  # redraw at most five times a second
                last[0] = wall
                bar.update(task, completed=now_ms, virtual=f"{now_ms // 1000} s")

        return simulate(scenario, progress, coasting=coasting)


#: what Spark costs ``kgroup simulate --compare`` beside running the cells in this process, fitted to
#: benchmarks/bench_compare_engines.py's runs on the project's 2-core machine (docs/simulator.md,
#: "Which engine"): a fixed cost (the session's JVM, the Python workers' imports), a cost per task, and
#: the share of ideal parallel speed its workers reach (below 1/2 there: two cores never pay)
SPARK_FIXED_S = 20.0
SPARK_TASK_S = 1.0
SPARK_PARALLEL_EFFICIENCY = 0.45


@dataclass(frozen=True, slots=True)
class EngineChoice:
    engine: str
    #: seconds the sweep would take in this process, and from which Spark would be faster (None: never)
    local_s: float
    spark_pays_from_s: float | None
    note: str


def choose_engine(first_run_s: float, runs: int, cores: int) -> EngineChoice:
    """``--engine auto``: local unless the sweep, estimated from its first run, is long enough for
    Spark on ``cores`` cores to win back what it costs. Spark's time is ``SPARK_FIXED_S + runs ×
    SPARK_TASK_S + local / (cores × SPARK_PARALLEL_EFFICIENCY)``; it pays once that is below the local
    time, which needs ``cores × efficiency > 1`` (more than two cores)."""
    local_s = first_run_s * runs
    speedup = cores * SPARK_PARALLEL_EFFICIENCY
    overhead = SPARK_FIXED_S + runs * SPARK_TASK_S
    pays_from = overhead / (1 - 1 / speedup) if speedup > 1 else None
    engine = "spark" if pays_from is not None and local_s > pays_from else "local"
    where = (
        f"Spark on {cores} cores pays from about {pays_from:.0f} s"
        if pays_from is not None
        else f"Spark on {cores} core(s) does not pay (measured 3.3-5.0x slower on 2 cores)"
    )
    note = (
        f"engine: {engine} (auto) — about {local_s:.0f} s of simulation in this process "
        f"({runs} runs, the first took {first_run_s:.1f} s); {where}; --engine spark or local to choose"
    )
    return EngineChoice(engine, local_s, pays_from, note)


def _local_cores(master: str) -> int:
    """The cores a ``local[N]`` / ``local[*]`` / ``local`` master gives Spark."""
    import os

    inner = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
    if inner in ("*", ""):
        return os.cpu_count() or 1
    return int(inner.split(",")[0]) if inner.split(",")[0].isdigit() else os.cpu_count() or 1


def _check_options(
    static: bool, dynamic: bool, compare: bool, seeds: int | None, engine: str | None, master: str | None
) -> None:
    """Options that contradict each other, or that only --compare reads, fail before any work."""
    if static and dynamic:
        raise KgroupError("--static and --dynamic: choose one (or neither, to keep the file's own)")
    if not compare:
        given = [
            name
            for name, value in (("--seeds", seeds), ("--engine", engine), ("--master", master))
            if value is not None
        ]
        if given:
            raise KgroupError(f"{given[0]}: only applies with --compare; add --compare or drop it")
    elif engine == "local" and master is not None:
        raise KgroupError("--master: only applies with --engine spark; drop it")
    if master is not None:
        from kgroup.spark.session import check_master

        check_master(master)


#: the headers of the exactly-once columns of ``--compare`` (kgroup.sim.compare.EOS_COLUMNS)
EOS_LABELS = {
    "eos_records_reread": "records re-read (exactly once)",
    "eos_output_duplicates": "output duplicated (exactly once)",
    "eos_transactions_aborted": "transactions aborted (exactly once)",
    "eos_records_thrown_away": "records thrown away (exactly once)",
    "eos_latency_added_p99_ms": "p99 latency added (exactly once, ms)",
}
EOS_HOW = (
    " Each consumer group ran twice on the same events: at least once (the row's other columns; every "
    "record re-read is output again, so its records reprocessed are its duplicates) and exactly once "
    "(the exactly-once columns); a share group has no exactly-once processing (—)."
)


def _print_summary(result: Any) -> None:
    from rich.table import Table

    m = result.metrics
    sc = result.scenario
    if sc.group.consumer_protocol:
        how = f"consumer protocol, server assignor {sc.group.server_assignor or 'uniform'}"
    elif sc.group.share_protocol:
        how = "share group, assignor simple"
    else:
        how = f"assignors {', '.join(sc.group.assignors)}"
    table = Table(title=f"{sc.name} (seed {sc.seed}, {sc.duration_ms} ms, {how})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in m.items():
        if key in (
            "invariant_violations",
            "final_assignment",
            "time_to_stable_ms",
            "member_epochs",
            "member_records_accepted",
        ):
            continue
        table.add_row(key, str(value))
    times = ", ".join("never" if t is None else str(t) for t in m["time_to_stable_ms"]) or "-"
    table.add_row("time_to_stable_ms", times)
    table.add_row("invariant_violations", str(len(m["invariant_violations"])))
    console.print(table)
    for line in m["invariant_violations"][:10]:
        console.print(f"[red]violation[/red] {line}")


def _campaign(n: int, start: int, engine: str, master: str, as_json: bool, failures_dir: Path) -> None:
    import time

    import yaml

    from kgroup.sim.campaign import (
        CampaignRun,
        campaign_scenario,
        check_scenario,
        check_seed,
        run_on_spark,
        shrink,
    )

    seeds = list(range(start, start + n))
    began = time.perf_counter()
    runs: list[CampaignRun]
    if engine == "spark":
        from kgroup.spark.session import get_spark

        if not as_json:
            err_console.print(f"campaign: {n} scenarios on Spark ({master}) …")
        runs = run_on_spark(get_spark(master, app_name="kgroup-simulate-campaign"), seeds)
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        runs = []
        with Progress(
            TextColumn("campaign"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[bad]} failing"),
            TimeRemainingColumn(),
            console=err_console,
            disable=as_json or not err_console.is_terminal,
            transient=True,
        ) as progress:
            task = progress.add_task("runs", total=n, bad=0)
            for s in seeds:
                runs.append(check_seed(s))
                progress.update(task, advance=1, bad=sum(r.failed for r in runs))
    wall_s = time.perf_counter() - began
    failures: list[dict[str, Any]] = []
    for run in (r for r in runs if r.failed):
        crashed = run.crashed is not None

        def still_fails(data: dict[str, Any], crashed: bool = crashed) -> bool:
            again = check_scenario(data)
            return (again.crashed is not None) if crashed else again.failed

        shrunk = shrink(campaign_scenario(run.seed), still_fails)
        failures_dir.mkdir(parents=True, exist_ok=True)
        path = failures_dir / f"campaign-seed-{run.seed}.yaml"
        path.write_text(yaml.safe_dump(shrunk, sort_keys=False), encoding="utf-8")
        failures.append(
            {
                "seed": run.seed,
                "crashed": run.crashed,
                "violations": list(run.violations),
                "scenario_file": str(path),
                "replay": f"kgroup simulate {path}",
            }
        )
    summary = {
        "scenarios": n,
        "seeds": [start, start + n - 1],
        "engine": engine,
        "failed": len(failures),
        "crashed": sum(1 for r in runs if r.crashed is not None),
        "with_violations": sum(1 for r in runs if r.violation_count > 0 or r.double_owned_ms > 0),
        "unsettled_disturbances": sum(r.unsettled for r in runs),
        "consumer_protocol_runs": sum(1 for r in runs if r.protocol == "consumer"),
        "unreconciled": sum(1 for r in runs if r.unreconciled),
        "share_group_runs": sum(1 for r in runs if r.protocol == "share"),
        "exactly_once_runs": sum(1 for r in runs if r.exactly_once),
        "output_duplicates": sum(r.output_duplicates for r in runs),
        "zombie_owned_ms": sum(r.zombie_owned_ms for r in runs),
        "with_outside_subscription": sum(1 for r in runs if r.outside_subscription_ms > 0),
        "wall_s": round(wall_s, 1),
        "failures": failures,
    }
    if as_json:
        emit_json(summary)
    else:
        console.print(
            f"campaign: {n} scenarios (seeds {start}..{start + n - 1}, {engine}) in {wall_s:.1f} s: "
            f"{len(failures)} failing ({summary['crashed']} crashed, {summary['with_violations']} with "
            f"invariant violations); {summary['unsettled_disturbances']} disturbances never settled; "
            f"{summary['with_outside_subscription']} with eager sticky's stale claims outside a "
            f"subscription; {summary['consumer_protocol_runs']} on the consumer protocol, "
            f"{summary['unreconciled']} of them not reconciled at the end; "
            f"{summary['share_group_runs']} as share groups; {summary['exactly_once_runs']} with "
            f"exactly-once processing ({summary['output_duplicates']} output records duplicated)"
        )
        for failure in failures:
            what = failure["crashed"] or "; ".join(failure["violations"][:2]) or "not reconciled at the end"
            console.print(f"[red]seed {failure['seed']}[/red]: {what}")
            console.print(f"  shrunk scenario: {failure['scenario_file']}")
            console.print(f"  replay: {failure['replay']}")
    if failures:
        raise typer.Exit(1)


def _compare(
    base: Any,
    membership: str | None,
    seeds: list[int],
    engine: str,
    master: str,
    as_json: bool,
    report: Path | None,
) -> None:
    from kgroup.sim.compare import EOS_COLUMNS, add_event_recoveries, run_one, summarize, table_columns
    from kgroup.sim.variants import MEMBERSHIPS, compare_variants

    memberships: tuple[str | None, ...] = MEMBERSHIPS if membership is None else (membership,)
    variants, skipped = compare_variants(memberships=memberships)
    runs = len(variants) * len(seeds)
    what = f"simulating {runs} runs ({len(variants)} variants × {len(seeds)} seed(s))"
    cells = [(v, s) for v in variants for s in seeds]
    rows: list[dict[str, Any]] = []
    data = base.to_data()
    if engine == "auto":
        # the first run, timed, tells how long the sweep is (it is kept if the sweep stays here)
        import time

        with step_progress(f"{what}: the first, to choose the engine", runs, enabled=not as_json) as done:
            began = time.perf_counter()
            rows.append(run_one(data, *cells[0]))
            done(1)
        choice = choose_engine(time.perf_counter() - began, runs, _local_cores(master))
        engine = choice.engine
        if not as_json:
            err_console.print(choice.note, highlight=False, soft_wrap=True)
    if engine == "spark":
        from contextlib import ExitStack

        from kgroup.cli.partition_input import StageProgress
        from kgroup.spark.demo.sweep import run_sweep
        from kgroup.spark.progress import watch_tasks
        from kgroup.spark.session import spark_session

        with ExitStack() as stack:
            with StageProgress(enabled=not as_json).stage(f"starting Spark ({master})"):
                spark = stack.enter_context(spark_session(master, app_name="kgroup-simulate-sweep"))
            with step_progress(f"{what} on Spark", runs, enabled=not as_json) as done:
                with watch_tasks(spark, lambda completed, total: done(completed) if total == runs else None):
                    rows, summary = run_sweep([base], variants, seeds, spark=spark)
                done(runs)
        summary = add_event_recoveries(summary, rows)
    else:
        with step_progress(what, runs, enabled=not as_json) as done:
            done(len(rows))
            for variant, seed in cells[len(rows) :]:
                rows.append(run_one(data, variant, seed))
                done(len(rows))
        summary = summarize(rows)
    skipped_out = [(v.label, why) for v, why in skipped]
    exactly_once = base.workload.exactly_once
    columns = table_columns(len(base.events), exactly_once=exactly_once)
    # the exactly-once columns of a share group's row (no exactly-once processing there): "—"
    shown = [
        {k: "—" if k in EOS_COLUMNS and isinstance(v, (int, float)) and v < 0 else v for k, v in row.items()}
        for row in summary
    ]
    if report is not None:
        from kgroup.report.timeline import write_comparison_report

        page = write_comparison_report(
            f"kgroup simulate --compare: {base.name}",
            shown,
            columns,
            skipped_out,
            report,
            rows,
            scenario=base,
            seeds=seeds,
            how=f"Every strategy × protocol × membership Kafka can run, {len(seeds)} seed(s) each, "
            + ("one Spark task per simulation." if engine == "spark" else "in one process.")
            + (EOS_HOW if exactly_once else ""),
        )
        err_console.print(f"report: {page}")
    if as_json:
        emit_json(
            {
                "scenario": base.name,
                "seeds": seeds,
                "engine": engine,
                "summary": summary,
                "skipped": [{"variant": v, "reason": why} for v, why in skipped_out],
                "runs": rows,
            }
        )
        return
    from rich.console import Console
    from rich.table import Table

    # the comparison is wide: never squeeze it into a narrow terminal, and never cut it when piped
    # (a file has no width: rich would drop the columns past its default 80, or the 200 given before)
    width = console.width if console.is_terminal else 100_000
    wide = Console(highlight=False, width=max(width, 200), soft_wrap=False)
    table = Table(
        title=f"{base.name}: strategies compared (means over {len(seeds)} seed(s); "
        "partition-s = partition-seconds; recovery: from an event's last action to stable)"
    )
    # the report's column names and units (the JSON keeps the metric names)
    from kgroup.report.html import format_cell
    from kgroup.report.timeline import metric_label, metric_value

    for column in columns:
        if column == "variant":
            table.add_column(metric_label(column), no_wrap=True)
        else:
            # headers wrap at spaces, at least as wide as a header's longest word, never cut
            label = EOS_LABELS.get(column) or metric_label(column, base.events)
            table.add_column(label, justify="right", min_width=14, max_width=18)
    for row in shown:
        table.add_row(*(format_cell(metric_value(c, row.get(c))) for c in columns))
    wide.print(table)
    if exactly_once:
        wide.print(EOS_HOW.strip())
    for label, why in skipped_out:
        wide.print(f"not run: {label} — {why}")
