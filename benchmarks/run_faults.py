"""The full fault matrix: real clients through toxiproxy on ``kgroup serve`` and Apache Kafka, each run
beside the simulator's run of the same scenario (docs/faults.md).

Not a benchmark of speed: it prints, per broker, fault and assignor, whether the invariants held and
the headline metrics measured from the clients and simulated. Progress goes to stderr, the table to
stdout (Markdown). Examples::

    python benchmarks/run_faults.py                                   # everything (~15 min on 2 cores)
    python benchmarks/run_faults.py --broker kgroup --fault cut --fault resets
    python benchmarks/run_faults.py --assignor range --json > runs.json

Needs toxiproxy (``make faults-tools``) and, for ``--broker apache``, Apache Kafka's jars (``make
kafka``). Exits 1 if an invariant broke in any run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kgroup.model import KgroupError
from kgroup.testing.faults import FAULT_KINDS, Fault, FaultBed, FaultRun, Toxiproxy, check, run_fault
from kgroup.testing.faults.simulated import headline_real, headline_simulated

#: each fault as the matrix runs it (seconds; the session timeout is 6 s)
FAULTS = {
    "none": Fault("none", at_s=1.0, duration_s=8.0),
    "latency": Fault("latency", at_s=1.0, duration_s=10.0, latency_ms=50, jitter_ms=20),
    "cut": Fault("cut", at_s=1.0, duration_s=9.0, consumer=1),
    "resets": Fault("resets", at_s=1.0, duration_s=8.0, consumer=1, every_s=2.0),
    "slow_link": Fault("slow_link", at_s=1.0, duration_s=10.0, consumer=1, rate_kbps=4),
}
ASSIGNORS = ("range", "cooperative-sticky")


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", action="append", choices=("kgroup", "apache"), help="default: both")
    parser.add_argument("--fault", action="append", choices=FAULT_KINDS, help="default: all")
    parser.add_argument("--assignor", action="append", choices=ASSIGNORS, help="default: both")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of Markdown")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = _arguments(argv)
    brokers = args.broker or ["kgroup", "apache"]
    faults = args.fault or list(FAULTS)
    assignors = args.assignor or list(ASSIGNORS)
    total = len(brokers) * len(faults) * len(assignors)
    rows: list[dict[str, Any]] = []
    done = 0
    started = time.monotonic()

    def say(text: str) -> None:
        print(f"[{done}/{total} {time.monotonic() - started:5.0f} s] {text}", file=sys.stderr, flush=True)

    try:
        with Toxiproxy() as toxiproxy:
            for broker in brokers:
                say(f"starting {broker} behind {3} proxies")
                with FaultBed(broker, toxiproxy) as bed:
                    for kind in faults:
                        for assignor in assignors:
                            run = FaultRun(FAULTS[kind], assignor=assignor)
                            outcome = run_fault(bed, run, progress=say)
                            report = check(outcome.observations)
                            real = headline_real(outcome)
                            simulated = headline_simulated(outcome)
                            done += 1
                            row = {
                                "broker": broker,
                                "fault": run.fault.describe(),
                                "assignor": assignor,
                                "violations": report.violations(),
                                "acked": len(outcome.observations.acked),
                                "polled": outcome.observations.polled,
                                "real": real.cells(),
                                "simulated": simulated.cells(),
                                "notes": outcome.notes[:5],
                            }
                            rows.append(row)
                            verdict = "ok" if not row["violations"] else "VIOLATED"
                            say(
                                f"{broker} {kind} {assignor}: {verdict}, "
                                f"real {real.cells()} sim {simulated.cells()}"
                            )
                    bed.check_alive()
    except KgroupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(_markdown(rows))
    return 1 if any(row["violations"] for row in rows) else 0


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| broker | fault | assignor | invariants | records acked / polled | rebalances real / sim "
        "| time to stable s real / sim | unowned partition-s real / sim "
        "| zombie overlap partition-s real / sim |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        real, sim = row["real"], row["simulated"]
        verdict = "held" if not row["violations"] else "; ".join(row["violations"])
        lines.append(
            f"| {row['broker']} | {row['fault']} | {row['assignor']} | {verdict} "
            f"| {row['acked']} / {row['polled']} "
            f"| {real[0]} / {sim[0]} | {real[1]} / {sim[1]} | {real[2]} / {sim[2]} | {real[3]} / {sim[3]} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
