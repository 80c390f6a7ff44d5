"""The report builder and its charts, without Spark."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest

from kgroup.model import KgroupError
from kgroup.report import Facts, Image, Paragraph, Report, Section, Table, format_cell, table_from_records
from kgroup.report.charts import BAR_COLOUR, HOT_COLOUR, partition_counts_chart


def test_cells_format_numbers_for_people() -> None:
    assert format_cell(1_000_000) == "1,000,000"
    assert format_cell(2.03456) == "2.035"
    assert format_cell(None) == ""
    assert format_cell(True) == "yes"
    assert format_cell("x") == "x"


def test_text_is_escaped_everywhere() -> None:
    report = Report(title="<t&>", subtitle='"quoted"')
    report.add(
        Section(
            "A <b>section</b>",
            (
                Paragraph("1 < 2 & 3 > 2"),
                Facts((("<label>", "<value>"),)),
                Table(("<col>",), (("<cell>",),), caption="<cap>"),
            ),
        )
    )
    page = report.to_html()
    for raw in ("<t&>", "<b>section</b>", "1 < 2", "<label>", "<value>", "<col>", "<cell>", "<cap>"):
        assert raw not in page
    escaped_forms = (
        "&lt;t&amp;&gt;",
        "&lt;b&gt;section&lt;/b&gt;",
        "1 &lt; 2 &amp; 3 &gt; 2",
        "&lt;cell&gt;",
    )
    for escaped in escaped_forms:
        assert escaped in page


def test_tables_right_align_numbers_and_highlight_rows() -> None:
    table = table_from_records(("p", "records"), [(0, 10), (1, 2500)], caption="c", highlight=[1])
    report = Report("r")
    report.add(Section("s", (table,)))
    page = report.to_html()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", page.split("<tbody>")[1])
    assert rows[0] == '<tr><td class="num">0</td><td class="num">10</td></tr>'
    assert rows[1] == '<tr class="hot"><td class="num">1</td><td class="num">2,500</td></tr>'


def test_table_rows_must_match_columns() -> None:
    with pytest.raises(KgroupError, match=r"table row 1: 1 cells for 2 columns"):
        Table(("a", "b"), ((1, 2), (3,)))


def test_image_needs_exactly_one_payload() -> None:
    with pytest.raises(KgroupError, match="exactly one"):
        Image(alt="x")
    with pytest.raises(KgroupError, match="exactly one"):
        Image(alt="x", svg="<svg></svg>", png=b"\x89PNG")


def test_png_images_are_embedded_as_base64() -> None:
    payload = b"\x89PNG\r\n\x1a\nfake"
    report = Report("r")
    report.add(Section("s", (Image(alt="a chart", png=payload, caption="cap", element_id="c1"),)))
    page = report.to_html()
    match = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert match is not None
    assert base64.b64decode(match.group(1)) == payload
    assert '<figure id="c1"' in page


def test_sections_get_anchors_and_a_table_of_contents() -> None:
    report = Report("r")
    report.add(Section("First part!", (Paragraph("a"),)))
    report.add(Section("Second", (Paragraph("b"),), anchor="two"))
    page = report.to_html()
    assert '<section id="first-part">' in page
    assert '<section id="two">' in page
    assert '<a href="#first-part">First part!</a>' in page and '<a href="#two">Second</a>' in page
    with pytest.raises(KgroupError, match="anchor 'two' is used twice"):
        report.add(Section("Other", (), anchor="two"))


def test_write_makes_a_self_contained_folder(tmp_path: Path) -> None:
    report = Report("r")
    report.add(Section("s", (Paragraph("hello"),)))
    report.attach("summary.json", '{"a": 1}\n')
    index = report.write(tmp_path / "out" / "nested")
    assert index == tmp_path / "out" / "nested" / "index.html"
    assert sorted(p.name for p in index.parent.iterdir()) == ["index.html", "summary.json"]
    assert (index.parent / "summary.json").read_text() == '{"a": 1}\n'
    page = index.read_text()
    assert '<a href="summary.json">summary.json</a>' in page
    assert "hello" in page
    # nothing is loaded from elsewhere
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_write_refuses_a_file_path_and_bad_attachment_names(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_text("x")
    with pytest.raises(KgroupError, match="not a directory"):
        Report("r").write(target)
    for bad in ("", "../x", "a/b", ".hidden", "index.html"):
        with pytest.raises(KgroupError, match="attachment name"):
            Report("r").attach(bad, "x")


def test_partition_chart_is_inline_svg_with_text_labels() -> None:
    counts = [100, 300, 50, 150]
    title = "records per partition — 4 partitions"
    image = partition_counts_chart(counts, hot=[1], title=title, element_id="c")
    assert image.svg is not None and image.png is None
    assert image.svg.startswith("<svg")
    assert "<?xml" not in image.svg and "<metadata>" not in image.svg
    assert "records per partition — 4 partitions" in image.svg
    assert "mean 150" in image.svg  # (100 + 300 + 50 + 150) / 4
    # each bar and each legend swatch is filled with its colour: 1 hot bar + its swatch,
    # 3 other bars + theirs
    assert image.svg.count(f"fill: {HOT_COLOUR}") == 2
    assert image.svg.count(f"fill: {BAR_COLOUR}") == 4
    plain = partition_counts_chart(counts)
    assert plain.svg is not None
    assert plain.svg.count(f"fill: {HOT_COLOUR}") == 0
    assert plain.svg.count(f"fill: {BAR_COLOUR}") == 5


def test_partition_chart_is_reproducible_and_png_works() -> None:
    first = partition_counts_chart([5, 7, 9], hot=[2])
    second = partition_counts_chart([5, 7, 9], hot=[2])
    assert first.svg == second.svg
    png = partition_counts_chart([5, 7, 9], fmt="png")
    assert png.png is not None and png.png.startswith(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(ValueError, match="fmt"):
        partition_counts_chart([1], fmt="gif")


def test_numbers_never_print_in_exponent_form() -> None:
    from kgroup.report import format_number

    assert format_cell(1_513_000.0) == "1,513,000"
    assert format_number(1_234_567.8) == "1,234,568"
    assert format_number(12.5) == "12.5"
    assert format_number(3.0) == "3"
    assert format_number(-1.0) == "-1"
    assert format_number(0.1234) == "0.1234"
    assert "e" not in format_number(98_765_432_101.5)
