"""PDF extraction on small PDFs generated in the test (fpdf2), plus the clean failures."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rulesage.ingest.model import ExtractionError
from rulesage.ingest.parse import parse_document

fpdf = pytest.importorskip("fpdf")

LEFT = [
    "Alpha one begins the left column and keeps",
    "going with more words about the left side.",
    "Alpha two ends the left column here.",
] * 4
RIGHT = [
    "Bravo one begins the right column and it",
    "carries on with words for the right side.",
    "Bravo two ends the right column here.",
] * 4


def two_column_pdf(path: Path, *, right_first: bool) -> Path:
    """A full-width title, then two columns. With right_first the content stream holds the right column
    before the left, so only geometric ordering reads it correctly."""
    pdf = fpdf.FPDF(unit="pt", format="letter")
    pdf.add_page()
    pdf.set_font("helvetica", size=18)
    pdf.text(72, 72, "Chapter Title Across The Whole Page Width")
    pdf.set_font("helvetica", size=10)

    def column(x: float, lines: list[str]) -> None:
        for i, line in enumerate(lines):
            pdf.text(x, 110 + 14 * i, line)

    if right_first:
        column(320, RIGHT)
        column(72, LEFT)
    else:
        column(72, LEFT)
        column(320, RIGHT)
    pdf.output(str(path))
    return path


def test_two_columns_read_left_then_right(tmp_path: Path) -> None:
    doc = parse_document(two_column_pdf(tmp_path / "cols.pdf", right_first=True), key="t", kind="rulebook")
    text = "\n".join(p.text for p in doc.passages)
    assert text.index("Chapter Title") < text.index("Alpha one") < text.index("Alpha two")
    assert text.rindex("Alpha two") < text.index("Bravo one")
    assert "Alpha one begins the left column and keeps going with more words" in text
    assert doc.pages[0].method == "pdf-text" and doc.passages[0].page_start == 1


def test_heading_becomes_section_path(tmp_path: Path) -> None:
    doc = parse_document(two_column_pdf(tmp_path / "cols.pdf", right_first=False), key="t", kind="rulebook")
    assert doc.sections[0].heading_path == ("Chapter Title Across The Whole Page Width",)


def test_deterministic(tmp_path: Path) -> None:
    path = two_column_pdf(tmp_path / "cols.pdf", right_first=True)
    a = parse_document(path, key="t", kind="rulebook").passages
    b = parse_document(path, key="t", kind="rulebook").passages
    assert [(p.text, p.page_start) for p in a] == [(p.text, p.page_start) for p in b]


def test_pages_tracked_across_a_page_break(tmp_path: Path) -> None:
    pdf = fpdf.FPDF(unit="pt", format="letter")
    pdf.set_font("helvetica", size=10)
    for page in range(3):
        pdf.add_page()
        pdf.text(72, 72, f"Page {page + 1} says the rule number {page + 1} applies to every turn")
    out = tmp_path / "pages.pdf"
    pdf.output(str(out))
    doc = parse_document(out, key="t", kind="rulebook")
    assert [p.number for p in doc.pages] == [1, 2, 3]
    hit = [p for p in doc.passages if "rule number 2" in p.text]
    assert hit and hit[0].page_start <= 2 <= hit[0].page_end


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract binary not installed")
def test_image_only_page_is_ocrd(tmp_path: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1700, 600), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=64)
    draw.text((80, 120), "Roll two dice to move", fill="black", font=font)
    draw.text((80, 260), "Doubles move again", fill="black", font=font)
    out = tmp_path / "scan.pdf"
    image.save(out, "PDF", resolution=150)
    doc = parse_document(out, key="t", kind="rulebook")
    assert doc.pages[0].method == "pdf-ocr"
    text = " ".join(p.text for p in doc.passages).lower()
    assert "roll two dice" in text and "doubles" in text


def test_truncated_pdf(tmp_path: Path) -> None:
    good = two_column_pdf(tmp_path / "good.pdf", right_first=False).read_bytes()
    bad = tmp_path / "cut.pdf"
    bad.write_bytes(good[: len(good) // 3])
    with pytest.raises(ExtractionError, match=r"corrupt or truncated|no text"):
        parse_document(bad, key="t", kind="rulebook")


def test_encrypted_pdf(tmp_path: Path) -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.text(20, 20, "secret rules")
    pdf.set_encryption(owner_password="owner", user_password="user")
    out = tmp_path / "locked.pdf"
    pdf.output(str(out))
    with pytest.raises(ExtractionError, match="encrypted"):
        parse_document(out, key="t", kind="rulebook")


def test_zero_text_pdf(tmp_path: Path) -> None:
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 50, 50)
    out = tmp_path / "blank.pdf"
    pdf.output(str(out))
    with pytest.raises(ExtractionError, match="no text"):
        parse_document(out, key="t", kind="rulebook")


def test_random_bytes_named_pdf(tmp_path: Path) -> None:
    out = tmp_path / "noise.pdf"
    out.write_bytes(os.urandom(4096))
    with pytest.raises(ExtractionError, match="not a PDF"):
        parse_document(out, key="t", kind="rulebook")


def test_pdf_header_with_garbage(tmp_path: Path) -> None:
    out = tmp_path / "liar.pdf"
    out.write_bytes(b"%PDF-1.7\n" + os.urandom(2048))
    with pytest.raises(ExtractionError, match="corrupt or truncated"):
        parse_document(out, key="t", kind="rulebook")


@pytest.mark.parametrize("name", ["empty.pdf", "empty.md", "empty.txt", "empty.xml", "empty.html"])
def test_empty_file(tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    out.write_bytes(b"")
    with pytest.raises(ExtractionError, match="empty"):
        parse_document(out, key="t", kind="rulebook")


def test_unsupported_suffix(tmp_path: Path) -> None:
    out = tmp_path / "rules.docx"
    out.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ExtractionError, match="unsupported"):
        parse_document(out, key="t", kind="rulebook")
