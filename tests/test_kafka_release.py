"""The Kafka release kgroup is exact to is named in one place (kgroup.kafka_release), and every text
that names it says that release: report footers, ``kgroup assign --help``, the demo's report,
``kgroup version`` and the Apache Kafka the tests run."""

from __future__ import annotations

import re

import pytest

from kgroup.kafka_release import KAFKA_VERSION, exact_to

#: "Kafka 4.0", "Kafka 3.9.1": a Kafka release named in a text people read
_KAFKA_RELEASE = re.compile(r"Kafka (\d+\.\d+(?:\.\d+)?)")


def _releases(text: str) -> set[str]:
    return set(_KAFKA_RELEASE.findall(text))


def test_the_release_is_4_4_0_and_the_reference_fetches_it() -> None:
    from kgroup.testing.apache_kafka import KAFKA_VERSION as fetched

    assert KAFKA_VERSION == "4.4.0" and fetched is KAFKA_VERSION
    assert exact_to() == "Apache Kafka 4.4.0"


def test_a_reports_footer_names_the_release() -> None:
    from kgroup.report import Report

    page = Report(title="t").to_html()
    footer = page[page.index("<footer>") :]
    assert _releases(footer) == {KAFKA_VERSION}


def test_the_demo_reports_subtitle_names_the_release() -> None:
    from kgroup.demo.stages import DemoConfig, DemoRun, build_report

    report = build_report(DemoRun(DemoConfig(), (), ()))
    assert _releases(report.subtitle) == {KAFKA_VERSION}, report.subtitle


@pytest.mark.parametrize("args", [["assign", "--help"], ["version"]])
def test_the_commands_name_the_release(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from kgroup.cli import main

    try:
        main(args)
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    assert _releases(" ".join(out.split())) == {KAFKA_VERSION}, out
