"""``kgroup bench``: benchmarks. ``kgroup bench assign`` times the assignors on Kafka's large test cases.

Other modules add sub-commands to ``kgroup bench``: ``register_bench(bench_app)`` of
``kgroup.cli.bench_simulate`` and ``kgroup.cli.bench_broker`` is called at registration when the module
exists.
"""

from __future__ import annotations

from importlib import import_module
from typing import Annotated, Any

import typer

from kgroup.model import KgroupError

__all__ = ["register"]

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks: kgroup's speed, measured side by side with Kafka's Java figures.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

_DEFAULT_IMPLS = ["kgroup", "kafka-python"]


def _check_choices(field: str, values: list[str], allowed: tuple[str, ...] | list[str]) -> None:
    for v in values:
        if v not in allowed:
            raise KgroupError(f"{field}: unknown value {v!r}; use one of: {', '.join(allowed)}")


def _row_json(row: Any, impls: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"case": row.case, "assignor": row.assignor, "phase": row.phase,
                           "java_ms": row.java_ms}
    for impl in impls:
        r = row.results[impl]
        out[impl] = {"status": r.status.value, "median_ms": r.median_ms, "runs_ms": list(r.runs_ms),
                     "peak_rss_mb": r.peak_rss_mb, "ratio_to_java": row.ratio(impl), "message": r.message,
                     "timeout_s": r.timeout_s or None}
    return out


def _print_table(rows: list[Any], impls: list[str], runs: int, scale: float) -> None:
    from rich.console import Console
    from rich.table import Table

    from kgroup.cli.output import console

    # the table is wide: never squeeze it into a narrow (or absent) terminal
    wide = Console(highlight=False, width=max(console.width, 150))

    title = f"kgroup bench assign — median of {runs} run(s) after 1 warm-up, ms"
    if scale != 1:
        title += f" (cases scaled by {scale:g}: Java's figures do not apply)"
    table = Table(title=title)
    for name in ("case", "assignor", "phase"):
        table.add_column(name)
    first = impls[0]
    table.add_column(f"{first} ms", justify="right")
    table.add_column("Java ms", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("peak RSS MB", justify="right")
    for impl in impls[1:]:
        table.add_column(f"{impl} ms", justify="right")
    for row in rows:
        result = row.results[first]
        java = row.java_ms
        ratio = row.ratio(first) if scale == 1 else None
        cells = [
            row.case, row.assignor, row.phase, result.label(),
            f"{java:g}" if java is not None else "—",
            f"{ratio:.2f}" if ratio is not None else "—",
            f"{result.peak_rss_mb:.0f}" if result.peak_rss_mb is not None else "—",
        ]
        cells += [row.results[impl].label() for impl in impls[1:]]
        table.add_row(*cells)
    wide.print(table)


@bench_app.command("assign")
def assign_command(
    case: Annotated[list[str] | None, typer.Option("--case", help="uniform, uniform-rack, nonequal, "
                    "nonequal-rack, notimeout, notimeout-rack (repeat with --all)")] = None,
    assignor: Annotated[list[str] | None, typer.Option("--assignor", help="range, roundrobin, sticky, "
                        "cooperative-sticky (repeat with --all)")] = None,
    phase: Annotated[list[str] | None, typer.Option("--phase", help="initial or reassign "
                     "(default initial; repeat with --all)")] = None,
    runs: Annotated[int, typer.Option("--runs", help="timed runs after one warm-up; "
                                      "the median is reported")] = 5,
    all_cells: Annotated[bool, typer.Option("--all", help="the whole table (filtered by --case, "
                         "--assignor, --phase), with Java's figures and kafka-python side by side")] = False,
    impl: Annotated[list[str] | None, typer.Option("--impl", help="kgroup (the registered assignor), "
                    "fast (kgroup.assignors.fast) or kafka-python; repeat for columns "
                    "(default: kgroup, and with --all also kafka-python)")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds per cell before it is killed")] = 120.0,
    memory_limit_mb: Annotated[int, typer.Option("--memory-limit-mb", help="address-space limit of "
                               "each measuring process (0: none)")] = 8192,
    scale: Annotated[float, typer.Option("--scale", hidden=True, help="shrink the cases (tests)")] = 1.0,
    json_out: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    leader_path: Annotated[bool, typer.Option("--leader-path", help="for one case: kgroup's bare "
                           "assign(), assign() + reading the answer, and the group leader's whole path "
                           "(subscription bytes in, assignment bytes out), beside Java's assign() and "
                           "leader path measured now on the same bytes (needs Java and the pinned "
                           "Kafka jars)")] = False,
) -> None:
    """Time an assignor on one of Kafka's large test cases (median ms, peak RSS), or the whole table."""
    from kgroup.bench.cases import ASSIGNORS, CASES
    from kgroup.bench.runner import CellStatus, cells, run_cell, run_table
    from kgroup.bench.worker import IMPLEMENTATIONS, CellSpec

    cases, assignors, phases = case or [], assignor or [], phase or []
    _check_choices("case", cases, tuple(CASES))
    _check_choices("phase", phases, ("initial", "reassign"))
    impls = impl or (_DEFAULT_IMPLS if all_cells else ["kgroup"])
    _check_choices("impl", impls, IMPLEMENTATIONS)
    if runs < 1:
        raise KgroupError(f"runs: {runs}; give 1 or more runs")
    if timeout <= 0:
        raise KgroupError(f"timeout: {timeout:g}; give a positive number of seconds")
    if not 0 < scale <= 1:
        raise KgroupError(f"scale: {scale:g} is out of range; give a number in (0, 1]")

    if all_cells:
        _check_choices("assignor", assignors, ASSIGNORS)
        selected = list(cells(cases, assignors, phases))
        if not selected:
            raise KgroupError("--all: the filters select no cell (range and roundrobin have only 'initial')")

        def progress(result: Any) -> None:
            from kgroup.cli.output import err_console

            s = result.spec
            err_console.print(f"{s.case} {s.assignor} {s.phase} [{s.impl}]: {result.label()}",
                              markup=False)

        rows = run_table(selected, tuple(impls), runs=runs, scale=scale, timeout_s=timeout,
                         memory_limit_mb=memory_limit_mb, on_result=None if json_out else progress)
        if json_out:
            from kgroup.cli.output import emit_json

            emit_json([_row_json(row, list(impls)) for row in rows])
        else:
            _print_table(rows, list(impls), runs, scale)
        return

    if len(cases) != 1 or len(assignors) != 1 or len(phases) > 1 or len(impls) != 1:
        raise KgroupError("--case and --assignor: give exactly one of each (and at most one --phase and "
                          "--impl), or use --all for a table")
    if leader_path:
        if impls[0] == "kafka-python":
            raise KgroupError("--leader-path: measured for --impl kgroup or fast; drop --impl kafka-python")
        _leader_paths(cases[0], assignors[0], phases[0] if phases else "initial", impls[0], runs=runs,
                      timeout=timeout, memory_limit_mb=memory_limit_mb, scale=scale, json_out=json_out)
        return
    spec = CellSpec(case=cases[0], assignor=assignors[0], phase=phases[0] if phases else "initial",
                    impl=impls[0], runs=runs, scale=scale, memory_limit_mb=memory_limit_mb)
    result = run_cell(spec, timeout)
    if result.status is CellStatus.TIMEOUT:
        raise KgroupError(f"timeout: the measurement did not finish within {timeout:g} s; raise --timeout")
    if result.status is not CellStatus.OK:
        raise KgroupError(f"{result.message or result.status.value}")
    if json_out:
        from kgroup.cli.output import emit_json

        emit_json({"median_ms": result.median_ms, "runs_ms": list(result.runs_ms),
                   "peak_rss_mb": result.peak_rss_mb})
        return
    from kgroup.bench.java import java_median_ms
    from kgroup.cli.output import console

    java = java_median_ms(spec.case, spec.assignor, spec.phase) if scale == 1 else None
    line = (f"{spec.case} {spec.assignor} {spec.phase} [{spec.impl}]: median {result.median_ms:.1f} ms "
            f"over {runs} run(s) ({', '.join(f'{x:.1f}' for x in result.runs_ms)}), "
            f"peak RSS {result.peak_rss_mb:.0f} MB")
    if java is not None and result.median_ms is not None:
        line += f"; Java {java:g} ms, ratio {result.median_ms / java:.2f}"
    console.print(line, markup=False)


def _leader_paths(case: str, assignor: str, phase: str, impl: str, *, runs: int, timeout: float,
                  memory_limit_mb: int, scale: float, json_out: bool) -> None:
    from kgroup.bench.leader_paths import measure_leader_paths

    report = measure_leader_paths(case, assignor, phase, impl=impl, runs=runs, timeout_s=timeout,
                                  memory_limit_mb=memory_limit_mb, scale=scale)
    if json_out:
        from kgroup.cli.output import emit_json

        emit_json({
            "case": case, "assignor": assignor, "phase": phase, "impl": impl, "scale": scale,
            "kgroup": {path: {"median_ms": r.median_ms, "runs_ms": list(r.runs_ms),
                              "peak_rss_mb": r.peak_rss_mb} for path, r in report.kgroup.items()},
            "java": {"kafka": report.kafka_version,
                     "assign": {"median_ms": report.java_bare_median_ms,
                                "runs_ms": list(report.java_bare_ms)},
                     "leader": {"median_ms": report.java_leader_median_ms,
                                "runs_ms": list(report.java_leader_ms)}},
            "answers_agree": report.answers_agree, "comparison": report.comparison,
        })
        return
    from rich.console import Console

    from kgroup.cli.output import console as narrow

    console = Console(highlight=False, width=max(narrow.width, 120))  # one line per figure
    java_bare, java_leader = report.java_bare_median_ms, report.java_leader_median_ms
    rows = (
        ("assign() (answer may be lazy)", report.kgroup["assign"].median_ms, java_bare),
        ("assign() + read the answer", report.kgroup["read"].median_ms, java_bare),
        ("leader path, bytes -> bytes", report.kgroup["leader"].median_ms, java_leader),
    )
    console.print(f"kgroup bench assign --leader-path: {case} {assignor} {phase} [{impl}], median of {runs} "
                  f"run(s) after 1 warm-up, ms; Java: Apache Kafka {report.kafka_version}, same run, same "
                  "subscription bytes", markup=False)
    for label, mine, java in rows:
        ratio = f"{mine / java:.2f}" if mine is not None and java else "—"
        console.print(f"  {label:<32} kgroup {mine:9.1f}   Java {java:9.1f}   ratio {ratio}", markup=False)
    console.print(f"  answers: {report.comparison}", markup=False)
    if not report.answers_agree:
        raise KgroupError(f"answers: kgroup's and Java's leader paths disagree: {report.comparison}")


def register(app: typer.Typer) -> None:
    """Add ``kgroup bench`` (and ``bench simulate`` / ``bench broker`` when their modules exist)."""
    app.add_typer(bench_app, name="bench")
    for name in ("kgroup.cli.bench_simulate", "kgroup.cli.bench_broker"):
        try:
            module = import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register_bench(bench_app)
