"""Hostile files through ``parse_document``: whatever the bytes, it returns a ParsedDocument or raises
ExtractionError — never anything else, never a hang, never a leak of a local file.

PDFs are made in the test (fpdf2), then truncated, overwritten, spliced, encrypted, stripped of text or
given a lying page count; Markdown, HTML and DocBook XML are generated broken, deeply nested or hostile
(external entities, entity expansion)."""

from __future__ import annotations

import functools
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rulesage.ingest.model import ExtractionError, ParsedDocument
from rulesage.ingest.parse import parse_document

fpdf = pytest.importorskip("fpdf")

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RULES = (
    "Setup. Each player takes five cards and the oldest player goes first. "
    "On your turn draw one card, then play one card or pass. The game ends when the deck is empty."
)


@functools.cache
def good_pdf() -> bytes:
    pdf = fpdf.FPDF()
    pdf.set_font("helvetica", size=11)
    for page in range(3):
        pdf.add_page()
        pdf.set_font("helvetica", style="B", size=16)
        pdf.cell(0, 10, f"Chapter {page + 1}")
        pdf.ln(12)
        pdf.set_font("helvetica", size=11)
        pdf.multi_cell(0, 6, RULES * 3)
    return bytes(pdf.output())


def outcome(path: Path, data: bytes) -> ParsedDocument | ExtractionError:
    """Parse ``data`` as ``path``; anything but a document or an ExtractionError fails the test."""
    path.write_bytes(data)
    t0 = time.monotonic()
    try:
        doc = parse_document(path, key="fuzz", kind="rulebook")
    except ExtractionError as exc:
        assert str(exc), "an ExtractionError says why"
        return exc
    finally:
        assert time.monotonic() - t0 < 30, f"{path.name}: parsing took too long"
    assert isinstance(doc, ParsedDocument)
    assert doc.passages, "a document that parses has passages (else it is an ExtractionError)"
    for p in doc.passages:
        assert p.text.strip() and "\x00" not in p.text
    return doc


def test_the_good_pdf_parses(tmp_path: Path) -> None:
    doc = outcome(tmp_path / "good.pdf", good_pdf())
    assert isinstance(doc, ParsedDocument)
    assert "oldest player goes first" in " ".join(p.text for p in doc.passages)


# -- PDFs ----------------------------------------------------------------------------------------------------


@FUZZ
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_truncated_pdf(tmp_path: Path, cut: int) -> None:
    data = good_pdf()
    outcome(tmp_path / "cut.pdf", data[: cut % len(data)])


@FUZZ
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=1_000_000), st.binary(min_size=1, max_size=64)),
        min_size=1,
        max_size=8,
    )
)
def test_corrupted_pdf(tmp_path: Path, edits: list[tuple[int, bytes]]) -> None:
    data = bytearray(good_pdf())
    for at, junk in edits:
        i = at % len(data)
        data[i : i + len(junk)] = junk
    outcome(tmp_path / "corrupt.pdf", bytes(data))


@FUZZ
@given(body=st.binary(max_size=4096))
def test_random_bytes_behind_a_pdf_header(tmp_path: Path, body: bytes) -> None:
    outcome(tmp_path / "junk.pdf", b"%PDF-1.7\n" + body)


@FUZZ
@given(count=st.sampled_from([0, 2, 7, 10_000, 2**31 - 1, 2**31, 2**63, -1]))
def test_lying_page_count(tmp_path: Path, count: int) -> None:
    """The page tree claims far more (or fewer) pages than the file holds."""
    data = re.sub(rb"/Count \d+", f"/Count {count}".encode(), good_pdf())
    outcome(tmp_path / "count.pdf", data)


def test_many_blank_pages_are_an_extraction_error(tmp_path: Path) -> None:
    pdf = fpdf.FPDF()
    for _ in range(400):
        pdf.add_page()
    result = outcome(tmp_path / "blank.pdf", bytes(pdf.output()))
    assert isinstance(result, ExtractionError) and "no text" in str(result)


def test_zero_text_pdf_is_an_extraction_error(tmp_path: Path) -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 80, 40)
    pdf.line(10, 10, 150, 150)
    result = outcome(tmp_path / "shapes.pdf", bytes(pdf.output()))
    assert isinstance(result, ExtractionError) and "no text" in str(result)


def test_encrypted_pdf_is_an_extraction_error(tmp_path: Path) -> None:
    pdf = fpdf.FPDF()
    pdf.set_encryption(owner_password="owner", user_password="player")
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 6, RULES)
    result = outcome(tmp_path / "locked.pdf", bytes(pdf.output()))
    assert isinstance(result, ExtractionError) and "encrypted" in str(result)


def test_owner_password_only_pdf_reads(tmp_path: Path) -> None:
    """Encrypted for permissions only (no user password): readers open it, and so do we."""
    pdf = fpdf.FPDF()
    pdf.set_encryption(owner_password="owner")
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(0, 6, RULES)
    doc = outcome(tmp_path / "perm.pdf", bytes(pdf.output()))
    assert isinstance(doc, ParsedDocument)


@pytest.mark.parametrize(
    ("name", "data", "says"),
    [
        ("empty.pdf", b"", "empty"),
        ("spaces.pdf", b" \n\t ", "empty"),
        ("html.pdf", b"<html><body>not a pdf</body></html>", "not a PDF"),
        ("header-only.pdf", b"%PDF-1.4\n", "corrupt"),
        ("eof-only.pdf", b"%PDF-1.4\n%%EOF\n", "corrupt"),
    ],
)
def test_not_really_a_pdf(tmp_path: Path, name: str, data: bytes, says: str) -> None:
    result = outcome(tmp_path / name, data)
    assert isinstance(result, ExtractionError) and says in str(result)


# -- Markdown, HTML, XML -------------------------------------------------------------------------------------

_HTML = "<p> </p> <div> </div> <h1> </h1> <table> <tr><td> <!-- --> <script> </script> &amp; &#0; &bogus; < >"
_XML = "<article> </article> <section> </section> <title> </title> <para> </para> <![CDATA[ ]]> &amp; &nope;"
MARKUP_ATOMS = {  # pieces glued at random, with random words between them
    ".md": ["# ", "## ", "> ", "- ", "1. ", "```", "|", "---", "*", "_", "[", "](", ")", "<div>", "\n"],
    ".html": [*_HTML.split(" "), "\n"],
    ".xml": [*_XML.split(" "), "<?xml version='1.0'?>", "<", ">"],
}
WORDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFFF), min_size=0, max_size=12
)


@FUZZ
@given(
    suffix=st.sampled_from(sorted(MARKUP_ATOMS)),
    data=st.data(),
)
def test_malformed_markup(tmp_path: Path, suffix: str, data: st.DataObject) -> None:
    parts = data.draw(st.lists(st.one_of(st.sampled_from(MARKUP_ATOMS[suffix]), WORDS), max_size=60))
    text = "".join(parts)
    encoding = data.draw(st.sampled_from(["utf-8", "utf-16", "latin-1"]))
    outcome(tmp_path / f"doc{suffix}", text.encode(encoding, errors="replace"))


@FUZZ
@given(suffix=st.sampled_from([".md", ".html", ".xml", ".txt"]), body=st.binary(max_size=2048))
def test_random_bytes_as_text(tmp_path: Path, suffix: str, body: bytes) -> None:
    outcome(tmp_path / f"junk{suffix}", body)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.html", "<html><body>" + "<div>" * 5000 + "<p>Each player draws a card.</p>" + "</div>" * 5000),
        ("deep-b.html", "<p>" + "<b>" * 5000 + "Each player draws a card." + "</b>" * 5000 + "</p>"),
        (
            "deep.xml",
            "<article>" + "<section>" * 3000 + "<para>x</para>" + "</section>" * 3000 + "</article>",
        ),
        ("deep.md", "> " * 3000 + "Each player draws a card.\n"),
        ("deep-list.md", "- " * 2000 + "Each player draws a card.\n"),
        ("unclosed.xml", "<article><section><title>Setup</title><para>Each player draws"),
        ("long-line.md", "Each player draws a card. " * 40_000),
    ],
)
def test_nested_or_huge_markup(tmp_path: Path, name: str, text: str) -> None:
    outcome(tmp_path / name, text.encode())


def test_xml_external_entity_is_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN-42")
    xml = (
        f'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file://{secret}">]>'
        "<article><title>Rules</title><para>Setup: &x; and each player draws a card.</para></article>"
    )
    result = outcome(tmp_path / "xxe.xml", xml.encode())
    if isinstance(result, ParsedDocument):
        assert "TOP-SECRET" not in " ".join(p.text for p in result.passages)


def test_xml_entity_expansion_stays_small(tmp_path: Path) -> None:
    lol = ['<!ENTITY l0 "lol">'] + [f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)]
    xml = f'<?xml version="1.0"?><!DOCTYPE a [{"".join(lol)}]><article><para>&l9;</para></article>'
    result = outcome(tmp_path / "lol.xml", xml.encode())
    if isinstance(result, ParsedDocument):
        assert sum(len(p.text) for p in result.passages) < 10_000
