"""One source file -> ParsedDocument. The only entry point the ingest pipeline calls.

Formats by content and suffix: PDF (pypdfium2, OCR for image-only pages), plain text with form feeds
(pdftotext -layout output: one form feed per page, side-by-side columns), numbered rules text (the MTG
Comprehensive Rules), Markdown, HTML and DocBook XML. Deterministic: the same file gives the same passages
in the same order.
"""

from __future__ import annotations

from pathlib import Path

from rulesage.ingest.chunk import build_sections
from rulesage.ingest.extract.blocks import Block
from rulesage.ingest.model import ExtractionError, Page, ParsedDocument
from rulesage.ingest.navigation import is_navigation

MARKUP_SUFFIXES = {".md", ".markdown", ".html", ".htm", ".xml"}


def read_text_file(path: Path) -> str:
    data = path.read_bytes()
    if not data.strip():
        raise ExtractionError(f"{path.name}: empty file")
    if b"\x00" in data[:4096]:
        raise ExtractionError(f"{path.name}: binary data in a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError as exc:
            raise ExtractionError(f"{path.name}: not UTF-8 or Windows-1252 text") from exc


def parse_document(path: Path, *, key: str, kind: str) -> ParsedDocument:
    """Extract and chunk one document. ``key`` and ``kind`` come from the shelf (kind: rulebook, errata...).

    Raises ExtractionError for corrupt, truncated, encrypted, empty (no text at all) or unsupported files.
    """
    path = Path(path)
    if not path.is_file():
        raise ExtractionError(f"{path}: no such file")
    suffix = path.suffix.lower()
    pages: list[Page]
    blocks: list[Block]
    if suffix == ".pdf":
        from rulesage.ingest.extract.pdf import extract_pdf

        pages, blocks = extract_pdf(path)
    elif suffix in MARKUP_SUFFIXES:
        from rulesage.ingest.extract.markup import extract_markup

        try:
            pages, blocks = [], extract_markup(path, read_text_file(path))
        except RecursionError as exc:  # hostile nesting (thousands of open tags) exhausts the tree walk
            raise ExtractionError(f"{path.name}: markup nested too deeply to read") from exc
    elif suffix in {".txt", ".text", ""}:
        text = read_text_file(path)
        from rulesage.ingest.numbered import looks_numbered, parse_numbered

        if "\f" in text:
            from rulesage.ingest.extract.layout_text import extract_form_feed

            pages, blocks = extract_form_feed(text)
        elif looks_numbered(text):
            sections = parse_numbered(text)
            if not any(s.passages for s in sections):
                raise ExtractionError(f"{path.name}: no rules found")
            return ParsedDocument(pages=[], sections=sections)
        else:
            from rulesage.ingest.extract.layout_text import extract_plain

            pages, blocks = [], extract_plain(text)
    else:
        raise ExtractionError(f"{path.name}: unsupported file type {suffix or '(none)'}")
    sections = build_sections(blocks)
    if not any(s.passages for s in sections):
        raise ExtractionError(f"{path.name}: no text found")
    for passage in (p for s in sections for p in s.passages):
        if is_navigation(passage.text):
            passage.searchable = False  # contents/index pages: kept for citations, never searched
    return ParsedDocument(pages=pages, sections=sections)
