"""``kgroup assign``: run an assignor on a group file, check Kafka's vectors, compare strategies.

* ``kgroup assign FILE`` – the assignment as a table (member, count, compressed partitions);
  ``--json`` prints ``{"assignment": {member: ["t-p", ...]}}``; ``--assignor NAME`` overrides the
  file's assignor; ``--threads`` shows the consumer threads of the ZooKeeper-era assignors.
* ``kgroup assign --check PATH`` – run every vector under PATH (a file, or a folder searched
  recursively) and compare with its ``expected``; prints the first mismatches and, as the last line,
  ``N/M exact``; exit 0 only when all match (1 otherwise).
* ``kgroup assign --compare FILE`` – range, roundrobin, sticky and cooperative-sticky side by side.
* ``kgroup assign --list`` – the available assignors (built-in and plug-ins) and their protocols.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kgroup.kafka_release import exact_to
from kgroup.model import KgroupError

__all__ = ["COMPARED_STRATEGIES", "register"]

#: the strategies ``--compare`` runs, in Kafka's documentation order
COMPARED_STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
#: how many mismatching vectors ``--check`` lists in full
SHOWN_MISMATCHES = 10
#: from this size on, reading and assigning a file shows its progress on a terminal
LARGE_FILE_BYTES = 5_000_000
#: the command's help, naming the Kafka release from :mod:`kgroup.kafka_release`
ASSIGN_HELP = (
    f"Assign partitions to a group's members with Kafka's assignors (exact to {exact_to()}).\n\n"
    "Examples: 'kgroup assign group.json', 'kgroup assign --check tests/vectors', "
    "'kgroup assign --compare group.json', 'kgroup assign --list'. The file format is "
    "described in docs/assignors.md."
)


def register(app: typer.Typer) -> None:
    app.command("assign", help=ASSIGN_HELP)(assign_command)


def assign_command(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="PATH",
            help="an assignment file (JSON); with --check also a folder of vectors",
            show_default=False,
        ),
    ] = None,
    assignor: Annotated[
        str | None, typer.Option("--assignor", "-a", help="run this assignor instead of the file's")
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="compare with each file's 'expected'; PATH may be a folder")
    ] = False,
    compare: Annotated[
        bool, typer.Option("--compare", help="run range, roundrobin, sticky, cooperative-sticky side by side")
    ] = False,
    list_assignors: Annotated[bool, typer.Option("--list", help="list the available assignors")] = False,
    threads: Annotated[
        bool, typer.Option("--threads", help="legacy-* assignors: show partitions per consumer thread")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    full: Annotated[
        bool, typer.Option("--full", help="print every member (tables stop at 50 rows otherwise)")
    ] = False,
) -> int:
    """``kgroup assign`` (its help: :data:`ASSIGN_HELP`)."""
    modes = [
        name for name, on in (("--check", check), ("--compare", compare), ("--list", list_assignors)) if on
    ]
    if len(modes) > 1:
        raise KgroupError(f"{' and '.join(modes)}: choose one of them")
    if list_assignors:
        _list(as_json)
        return 0
    if path is None:
        raise KgroupError("FILE: missing; give an assignment file, e.g. 'kgroup assign group.json'")
    if assignor is not None:
        _require_known(assignor)
    if check:
        if assignor is not None:
            raise KgroupError("--assignor: not allowed with --check; each vector names its own assignor")
        return _check(path, as_json)
    if compare:
        _compare(path, as_json)
        return 0
    _assign(path, assignor, threads, as_json, full)
    return 0


def _require_known(name: str, field: str = "--assignor") -> None:
    from kgroup.assignors import available_assignors

    known = available_assignors()
    if name not in known:
        raise KgroupError(f"{field}: unknown assignor {name!r}; use one of: {', '.join(known)}")


# --- kgroup assign FILE -------------------------------------------------------------------------


def _assign(path: Path, assignor: str | None, threads: bool, as_json: bool, full: bool) -> None:
    from kgroup.assignors.fileformat import dump_assignment, load_assignment_file, make_assignor
    from kgroup.cli.output import emit_json
    from kgroup.cli.partition_input import StageProgress

    # a large file takes seconds to read and assign: say so on a terminal (never with --json)
    large = path.is_file() and path.stat().st_size > LARGE_FILE_BYTES
    progress = StageProgress(enabled=large and not as_json)
    with progress.stage(f"reading {path}"):
        af = load_assignment_file(path, assignor=assignor)
    request = af.request  # raises if the file names no assignor and none was given
    name = af.assignor or ""
    _require_known(name, f"{af.source}: assignor")
    instance = make_assignor(name, af.prior_max_generation)
    if threads:
        from kgroup.assignors.legacy import LegacyAssignor

        if not isinstance(instance, LegacyAssignor):
            raise KgroupError(f"--threads: only for legacy-range / legacy-roundrobin, not {name!r}")
        by_thread = instance.assign_threads(request).threads
        if as_json:
            emit_json({"threads": dump_assignment(by_thread)["assignment"]})
        else:
            _print_assignment(name, by_thread, "thread", full)
        return
    with progress.stage(f"assigning with {name}"):
        result = instance.assign(request)
    if as_json:
        emit_json(dump_assignment(result))
    else:
        _print_assignment(name, result, "member", full, _subscribed_partitions(request))


def _subscribed_partitions(request: Any) -> int:
    """How many partitions the members subscribe to (of topics that exist): what could be assigned."""
    subscribed = {t for m in request.members for t in m.topics if t in request.topics}
    return sum(request.topics[t].partitions for t in subscribed)


def _print_assignment(
    assignor: str, assignment: dict[str, Any], who: str, full: bool, subscribed: int | None = None
) -> None:
    from kgroup.cli.output import Column, print_table
    from kgroup.model import compress_partitions

    total = sum(len(ps) for ps in assignment.values())
    title = f"{assignor}: {total:,} partitions over {len(assignment):,} {who}s"
    if subscribed is not None and subscribed != total:
        withheld = subscribed - total
        why = (
            "they change owner, so the follow-up rebalance assigns them"
            if assignor == "cooperative-sticky"
            else "not assigned"
        )
        title = (
            f"{assignor}: {total:,} of {subscribed:,} subscribed partitions over {len(assignment):,} {who}s; "
            f"{withheld:,} withheld ({why})"
        )
    rows = [
        [member, f"{len(partitions):,}", compress_partitions(partitions) or "—"]
        for member, partitions in assignment.items()
    ]
    columns = (Column(who), Column("count", right=True), Column("partitions"))
    print_table(title, columns, rows, full=full, what=f"{who}s")


# --- kgroup assign --check PATH -----------------------------------------------------------------


def _check(path: Path, as_json: bool) -> int:
    from kgroup.assignors.fileformat import check_path
    from kgroup.cli.output import emit_json

    report = check_path(path)
    if not path.is_dir() and report.total == 1 and report.results[0].invalid:
        # one file that cannot be checked at all is bad input: one line, exit 2
        raise KgroupError(report.results[0].error or f"{path}: cannot be checked")
    if report.total == 0:
        skipped = f" ({len(report.skipped)} JSON files there are other vectors)" if report.skipped else ""
        raise KgroupError(
            f"--check: no consumer-assignor vectors under {path}{skipped}; give a vector file or a "
            "folder of them, e.g. tests/vectors"
        )
    failed = [r for r in report.results if not r.exact]
    if as_json:
        emit_json(
            {
                "exact": report.exact,
                "total": report.total,
                "skipped": len(report.skipped),
                "failures": [_failure_json(r) for r in failed],
            }
        )
    else:
        for result in failed[:SHOWN_MISMATCHES]:
            _print_failure(result)
        if len(failed) > SHOWN_MISMATCHES:
            typer.echo(f"... and {len(failed) - SHOWN_MISMATCHES} more files differ")
        if report.skipped:
            typer.echo(f"skipped {len(report.skipped)} JSON files that are not consumer-assignor vectors")
        typer.echo(f"{report.exact}/{report.total} exact")
    return 0 if report.all_exact and report.total > 0 else 1


def _partition_names(partitions: Any) -> list[str] | None:
    return None if partitions is None else [str(tp) for tp in partitions]


def _failure_json(result: Any) -> dict[str, Any]:
    return {
        "file": result.name,
        "assignor": result.assignor,
        "error": result.error,
        "mismatches": [
            {"member": m.member, "expected": _partition_names(m.expected), "got": _partition_names(m.got)}
            for m in result.mismatches
        ],
    }


def _print_failure(result: Any) -> None:
    from kgroup.model import compress_partitions

    if result.error is not None:
        message = result.error.removeprefix(f"{result.name}: ")
        typer.echo(f"ERROR {result.name} ({result.assignor}): {message}")
        return
    typer.echo(f"MISMATCH {result.name} ({result.assignor})")
    for m in result.mismatches[:5]:
        expected = "absent" if m.expected is None else compress_partitions(m.expected) or "[]"
        got = "absent" if m.got is None else compress_partitions(m.got) or "[]"
        typer.echo(f"  {m.member}: expected {expected}  got {got}")
    if len(result.mismatches) > 5:
        typer.echo(f"  ... and {len(result.mismatches) - 5} more members differ")


# --- kgroup assign --compare FILE ---------------------------------------------------------------


def _compare(path: Path, as_json: bool) -> None:
    from kgroup.assignors.fileformat import load_assignment_file

    af = load_assignment_file(path)
    af.request_for("range")  # validate the group once, before running every strategy
    rows = {name: _run_strategy(af, name) for name in COMPARED_STRATEGIES}
    if as_json:
        from kgroup.cli.output import emit_json

        emit_json({"strategies": rows})
    else:
        _print_comparison(af, rows)


def _run_strategy(af: Any, name: str) -> dict[str, Any]:
    from kgroup.assignors.fileformat import dump_assignment, run_assignment_file
    from kgroup.assignors.invariants import stickiness
    from kgroup.model import TopicPartition

    try:
        result = run_assignment_file(af, name)
    except KgroupError as exc:
        return {"error": exc.message}
    request = af.request_for(name)
    counts = {m: len(ps) for m, ps in result.items()}
    sticky = stickiness(request.members, result)
    subscribed = {t for m in request.members for t in m.topics if t in request.topics}
    everything = {TopicPartition(t, p) for t in subscribed for p in range(request.topics[t].partitions)}
    assigned = {tp for ps in result.values() for tp in ps}
    return {
        "assignment": dump_assignment(result)["assignment"],
        "counts": counts,
        "spread": (max(counts.values()) - min(counts.values())) if counts else 0,
        "kept": sticky.kept,
        "moved": sticky.moved,
        "withheld": len(everything - assigned),
    }


def _print_comparison(af: Any, rows: dict[str, dict[str, Any]]) -> None:
    from rich.table import Table

    from kgroup.cli.output import console

    table = Table(title=f"{Path(af.source).name}: partitions per member under each strategy")
    table.add_column("member")
    for name in rows:
        table.add_column(name, justify="right")
    for spec in af.members:
        member = spec.member.member_id
        table.add_row(member, *(_cell(row, "counts", member) for row in rows.values()))
    table.add_section()
    for label, key in (("max − min", "spread"), ("kept from owned", "kept"), ("moved from owned", "moved")):
        table.add_row(label, *(_cell(row, key) for row in rows.values()))
    table.add_row("withheld (follow-up)", *(_cell(row, "withheld") for row in rows.values()))
    console.print(table)
    for name, row in rows.items():
        if "error" in row:
            console.print(f"{name}: not run: {row['error']}")


def _cell(row: dict[str, Any], key: str, member: str | None = None) -> str:
    if "error" in row:
        return "—"
    value = row[key] if member is None else row[key].get(member, 0)
    return str(value)


# --- kgroup assign --list -----------------------------------------------------------------------


def _list(as_json: bool) -> None:
    from kgroup.assignors import available_assignors, create_assignor

    entries: list[dict[str, Any]] = []
    for name in available_assignors():
        try:
            instance = create_assignor(name)
        except (KgroupError, ImportError) as exc:
            entries.append({"name": name, "protocols": [], "error": str(exc)})
            continue
        entries.append({"name": name, "protocols": [p.name for p in instance.protocols]})
    if as_json:
        from kgroup.cli.output import emit_json

        emit_json({"assignors": entries})
        return
    for entry in entries:
        protocols = ", ".join(entry["protocols"]) or f"not available ({entry.get('error')})"
        typer.echo(f"{entry['name']:<22} {protocols}")
