"""``kgroup bench simulate``: how fast the simulator runs a large group through a rolling restart.

The case (issue 5): 100 members, 1,000 partitions, one hour of virtual time, a rolling restart of
every member (one every 20 s, 5 s down each) starting at 10 minutes. Each run is timed with
``time.perf_counter``; the median of the runs is reported, with the simulator's own counts (steps,
rebalances) so that a change in speed can be told apart from a change in work, and the CPU time
(``time.process_time``), which other work on the machine does not inflate.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import typer

from kgroup.cli.output import console, emit_json, step_progress
from kgroup.model import KgroupError

__all__ = ["bench_scenario", "register_bench"]


def bench_scenario(
    members: int = 100,
    partitions: int = 1000,
    duration_ms: int = 3_600_000,
    assignor: str = "cooperative-sticky",
) -> Any:
    from kgroup.sim.scenario import parse_scenario

    return parse_scenario(
        {
            "name": f"bench-{members}x{partitions}",
            "seed": 1,
            "duration_ms": duration_ms,
            "topics": {"events": partitions},
            "group": {"assignors": [assignor]},
            "consumers": [{"count": members, "prefix": "c", "topics": ["events"]}],
            "workload": {"produce_per_partition_per_s": 10, "consume_per_consumer_per_s": 1000},
            "events": [
                {
                    "at_ms": min(600_000, duration_ms // 6),
                    "kind": "rolling_restart",
                    "consumers": "all",
                    "gap_ms": 20_000,
                    "downtime_ms": 5_000,
                }
            ],
        }
    )


def register_bench(bench_app: typer.Typer) -> None:
    @bench_app.command("simulate")
    def bench_simulate_command(
        members: int = typer.Option(100, "--members", help="consumers in the group"),
        partitions: int = typer.Option(1000, "--partitions", help="partitions of the one topic"),
        minutes: int = typer.Option(60, "--minutes", help="virtual time to simulate"),
        assignor: str = typer.Option("cooperative-sticky", "--assignor", help="the group's assignor"),
        runs: int = typer.Option(3, "--runs", help="timed runs; the median is reported"),
        as_json: bool = typer.Option(False, "--json", help="print JSON"),
        step_by_step: bool = typer.Option(
            False, "--step-by-step", help="run every step one by one (no steady heartbeats in closed form)"
        ),
    ) -> None:
        """Time the simulator on a large group's rolling restart (median wall seconds)."""
        if not 1 <= runs <= 50:
            raise KgroupError(f"--runs: {runs} is out of range; give 1..50")
        if not 1 <= members <= 10_000 or not 1 <= partitions <= 1_000_000 or not 1 <= minutes <= 24 * 60:
            raise KgroupError(
                "--members/--partitions/--minutes: give 1..10000 members, 1..1000000 partitions, 1..1440 min"
            )
        from kgroup.sim.runner import Simulation

        scenario = bench_scenario(members, partitions, minutes * 60_000, assignor)
        seconds: list[float] = []
        cpu_seconds: list[float] = []
        metrics: dict[str, Any] = {}
        closed_form = 0
        label = f"timing {scenario.name} ({minutes} min virtual)"
        with step_progress(label, runs, enabled=not as_json) as done:
            for k in range(runs):
                start, cpu_start = time.perf_counter(), time.process_time()
                sim = Simulation(scenario, coasting=not step_by_step)
                metrics = sim.run().metrics
                closed_form = sim.coasting.steps if sim.coasting is not None else 0
                seconds.append(time.perf_counter() - start)
                cpu_seconds.append(time.process_time() - cpu_start)
                done(k + 1)
        median = statistics.median(seconds)
        cpu_median = statistics.median(cpu_seconds)
        out = {
            "case": scenario.name,
            "members": members,
            "partitions": partitions,
            "virtual_minutes": minutes,
            "assignor": assignor,
            "runs": [round(s, 3) for s in seconds],
            "median_wall_s": round(median, 3),
            # CPU time of this process: what the simulator cost even when other work shares the cores
            "median_cpu_s": round(cpu_median, 3),
            "steps": metrics["steps"],
            # of them, steady heartbeats' steps carried out in closed form (kgroup.sim.coasting)
            "closed_form_steps": closed_form,
            "steps_per_s": round(metrics["steps"] / median),
            "rebalances": metrics["rebalances"],
            "virtual_to_wall": round(minutes * 60 / median, 1),
            "invariant_violations": metrics["invariant_violation_count"],
        }
        if as_json:
            emit_json(out)
            return
        console.print(
            f"simulate {scenario.name} ({members:,} members, {partitions:,} partitions), {minutes} min "
            f"virtual, {assignor}: median {median:.2f} s wall ({cpu_median:.2f} s CPU) over {runs} run(s) "
            f"({out['virtual_to_wall']}x real time; {out['steps']:,} steps ({closed_form:,} in closed form), "
            f"{out['steps_per_s']:,} steps/s, "
            f"{out['rebalances']} rebalances, {out['invariant_violations']} invariant violations)",
            soft_wrap=True,  # one line, piped or not
        )
