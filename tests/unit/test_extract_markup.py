"""Markdown, HTML and DocBook XML: headings become the section path; markup stripped, entities decoded."""

from __future__ import annotations

from pathlib import Path

import pytest

from rulesage.ingest.model import ExtractionError
from rulesage.ingest.parse import parse_document

MD = """# Playing the Game

Intro line with *emphasis* and a [link](http://example.org).

## Actions

### Action Roll

When you act, roll **dice** &amp; read the highest.

| Result | Effect |
|---|---|
| 6 | Full success |
| 4-5 | Partial |

## Stress
Setext-free body.
"""


def test_markdown_heading_paths(tmp_path: Path) -> None:
    path = tmp_path / "book.md"
    path.write_text(MD)
    doc = parse_document(path, key="t", kind="rulebook")
    by_path = {s.heading_path: s for s in doc.sections}
    assert ("Playing the Game", "Actions", "Action Roll") in by_path
    assert ("Playing the Game", "Stress") in by_path
    roll = by_path[("Playing the Game", "Actions", "Action Roll")]
    prose = [p for p in roll.passages if p.kind == "prose"]
    assert "When you act, roll dice & read the highest." in prose[0].text
    assert "*" not in prose[0].text and "**" not in prose[0].text
    table = [p for p in roll.passages if p.kind == "table"]
    assert table and "6\tFull success" in table[0].text
    assert all(p.page_start is None and p.page_end is None for p in doc.passages)
    intro = by_path[("Playing the Game",)].passages[0].text
    assert "Intro line with emphasis and a link." in intro


def test_html_heading_paths(tmp_path: Path) -> None:
    path = tmp_path / "book.html"
    path.write_text(
        "<html><head><style>p{}</style></head><body><h1>Fate Core</h1><p>Welcome.</p>"
        "<h2>Aspects</h2><p>An aspect is a phrase &ldquo;that describes&rdquo; something.</p>"
        "<div><p>Invoke for <em>+2</em>.</p></div><h2>Stunts</h2><ul><li>One</li><li>Two</li></ul>"
        "</body></html>"
    )
    doc = parse_document(path, key="t", kind="rulebook")
    paths = [s.heading_path for s in doc.sections]
    assert paths == [("Fate Core",), ("Fate Core", "Aspects"), ("Fate Core", "Stunts")]
    aspects = doc.sections[1].passages[0].text
    assert "An aspect is a phrase \u201cthat describes\u201d something." in aspects
    assert "Invoke for +2." in aspects and "<" not in aspects and "p{}" not in aspects


XML = """<?xml version="1.0" encoding="utf-8" ?>
<!DOCTYPE refentry PUBLIC "-//OASIS//DTD DocBook XML V4.3//EN"
  "http://www.oasis-open.org/docbook/xml/4.3/docbookx.dtd" [
]>
<sect1 id="Klondike"><!-- <sect1info>hidden</sect1info> -->
  <title>Klondike</title>
  <para>Written by Someone</para>
  <sect2><title>Setup</title>
    <informaltable><tgroup cols="2"><tbody>
      <row><entry>Type of Deck</entry><entry>Standard Deck</entry></row>
      <row><entry>Stock</entry><entry>24 cards</entry></row>
    </tbody></tgroup></informaltable>
  </sect2>
  <sect2><title>Goal</title>
    <para>Move all cards
      to the Foundation &amp; win.</para>
  </sect2>
  <variablelist><varlistentry><term>Base card</term>
    <listitem><para>The first card dealt into a foundation.</para></listitem></varlistentry>
  </variablelist>
</sect1>
"""


def test_docbook_heading_paths(tmp_path: Path) -> None:
    path = tmp_path / "klondike.xml"
    path.write_text(XML)
    doc = parse_document(path, key="t", kind="rulebook")
    by_path = {s.heading_path: s for s in doc.sections}
    assert ("Klondike", "Setup") in by_path and ("Klondike", "Goal") in by_path
    assert by_path[("Klondike", "Setup")].passages[0].kind == "table"
    assert "Type of Deck\tStandard Deck" in by_path[("Klondike", "Setup")].passages[0].text
    goal = by_path[("Klondike", "Goal")].passages[0].text
    assert "Move all cards to the Foundation & win." in goal
    assert ("Klondike", "Base card") in by_path
    assert "hidden" not in " ".join(p.text for p in doc.passages)


def test_invalid_xml(tmp_path: Path) -> None:
    path = tmp_path / "broken.xml"
    path.write_text("<sect1><title>Open</title><para>never closed</sect1>")
    with pytest.raises(ExtractionError, match="invalid XML"):
        parse_document(path, key="t", kind="rulebook")


def test_markup_without_text(tmp_path: Path) -> None:
    path = tmp_path / "bare.html"
    path.write_text("<html><body><img src='x.png'></body></html>")
    with pytest.raises(ExtractionError, match="no text"):
        parse_document(path, key="t", kind="rulebook")
