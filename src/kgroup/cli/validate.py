"""``kgroup validate``: each scenario simulated and run with real clients on kgroup and Apache Kafka."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from kgroup.cli.output import Column, console, emit_json, err_console, print_table
from kgroup.model import KgroupError

__all__ = ["register"]


def _scenario_files(names: list[str]) -> list[Path]:
    from kgroup.validate import builtin_scenarios

    builtin = builtin_scenarios()
    if not names:
        return list(builtin.values())
    out: list[Path] = []
    for name in names:
        path = Path(name)
        if name in builtin and not path.exists():
            out.append(builtin[name])
        elif path.is_file():
            out.append(path)
        else:
            raise KgroupError(
                f"SCENARIO: {name!r} is neither a file nor a built-in scenario; "
                f"give a scenario file or one of {', '.join(builtin)}"
            )
    return out


def _brokers(text: str) -> list[str]:
    from kgroup.validate.runs import BROKERS

    out = [b.strip() for b in text.split(",") if b.strip()]
    bad = [b for b in out if b not in BROKERS]
    if bad or not out:
        raise KgroupError(
            f"--brokers: {text!r} is not a list of {' / '.join(BROKERS)}; e.g. --brokers kgroup,apache"
        )
    return list(dict.fromkeys(out))


def _cell(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "–"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{digits}f}"


def _span(span: tuple[float, float] | None) -> str:
    return "–" if span is None else f"{_cell(span[0])}–{_cell(span[1])}"


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def validate_command(
        scenarios: list[str] = typer.Argument(  # noqa: B008
            None,
            metavar="[SCENARIO]...",
            help="Scenario files (the simulator's format) or built-in names; default: the built-in set.",
        ),
        brokers: str = typer.Option(
            "kgroup,apache",
            "--brokers",
            help="Where the real clients run: kgroup, apache or both (comma-separated).",
        ),
        client: str = typer.Option(
            "librdkafka",
            "--client",
            help="The real consumer: librdkafka (confluent-kafka) or java (Apache Kafka's KafkaConsumer).",
        ),
        seeds: int = typer.Option(
            1,
            "--seeds",
            help="Simulate each scenario with this many seeds; the simulated value is their median.",
        ),
        sim_jitter_ms: int | None = typer.Option(
            None,
            "--sim-jitter-ms",
            help="The simulated network's jitter per message (ms); default: the scenario's.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON (every run's metrics and details)."),
    ) -> None:
        """Run each scenario simulated and with real clients on kgroup serve and Apache Kafka; compare."""
        from kgroup.sim.scenario import load_scenario
        from kgroup.validate.runs import CLIENTS, apache_pool, check_scenario, validate

        if client not in CLIENTS:
            raise KgroupError(
                f"--client: {client!r} is not supported yet; use {' / '.join(CLIENTS)} "
                "(the kafka-python driver is not written)"
            )
        if not 1 <= seeds <= 100:
            raise KgroupError(f"--seeds: {seeds} is not between 1 and 100; e.g. --seeds 12")
        if sim_jitter_ms is not None and not 0 <= sim_jitter_ms <= 10_000:
            raise KgroupError(
                f"--sim-jitter-ms: {sim_jitter_ms} is not between 0 and 10000; e.g. --sim-jitter-ms 20"
            )
        chosen = _brokers(brokers)
        loaded = [load_scenario(path) for path in _scenario_files(scenarios or [])]
        if not scenarios and client != "librdkafka":
            # the built-in set: the scenarios this client's driver plays (the others need librdkafka)
            loaded = [scenario for scenario in loaded if _playable(scenario, client)]
        for scenario in loaded:
            check_scenario(scenario, client)
        show = not as_json and err_console.is_terminal
        results = []
        with apache_pool() as pool, err_console.status("validating …") if show else _null() as status:

            def progress(text: str) -> None:
                if status is not None:
                    status.update(text)

            for scenario in loaded:
                results.append(
                    validate(
                        scenario, chosen, pool, progress, seeds=seeds, jitter_ms=sim_jitter_ms, client=client
                    )
                )
                if show:
                    err_console.print(f"{scenario.name}: done")
        if as_json:
            emit_json(
                {
                    "client": client,
                    "brokers": chosen,
                    "seeds": seeds,
                    "sim_jitter_ms": sim_jitter_ms,
                    "scenarios": [r.to_data() for r in results],
                }
            )
            return
        columns = [
            Column("metric"),
            Column("simulated" if seeds == 1 else f"simulated (median of {seeds})", True),
        ]
        if seeds > 1:
            columns.append(Column("sim min–max", True))
        for b in chosen:
            columns.append(Column(f"{b} ({client})", True))
        for b in chosen:
            columns.append(Column(f"sim ÷ {b}", True))
        for r in results:
            rows = [
                [row.metric, _cell(row.simulated)]
                + ([_span(row.simulated_range)] if seeds > 1 else [])
                + [_cell(row.measured.get(b)) for b in chosen]
                + [_ratio(row.ratio(b)) for b in chosen]
                for row in r.rows
            ]
            print_table(r.scenario, columns, rows, full=True, out=console)


def _playable(scenario: Any, client: str) -> bool:
    from kgroup.validate.runs import check_scenario

    try:
        check_scenario(scenario, client)
    except KgroupError:
        return False
    return True


class _null:
    def __enter__(self) -> Any:
        return None

    def __exit__(self, *args: object) -> None:
        return None
