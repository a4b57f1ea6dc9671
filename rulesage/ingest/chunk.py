"""Blocks -> sections -> passages.

A section is one heading and its body (the coarse "read big" unit). Inside it, prose is packed into
passages of roughly ``TARGET_MIN``..``TARGET_MAX`` words, cut at paragraph boundaries and, inside a long
paragraph, at sentence boundaries. Tables are passages of their own (kind "table"), kept whole unless very
large, then split by rows with the header row repeated. Every passage keeps the exact page span of the
text it holds. Nothing is added to passage text that is not in the book: the heading path is separate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from rulesage.ingest.extract.blocks import Block
from rulesage.ingest.model import PassageDraft, SectionDraft

TARGET_MIN = 200
TARGET_MAX = 300
TABLE_MAX = 450  # words: a larger table is split by rows, each part repeating the header row

_SENTENCE = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


@dataclass
class Piece:
    """A run of text from one block with its page span."""

    text: str
    page_start: int | None
    page_end: int | None
    glue: str = "\n\n"  # how it joins the piece before it

    def words(self) -> int:
        return len(self.text.split())


def _span(pieces: Iterable[Piece]) -> tuple[int | None, int | None]:
    starts = [p.page_start for p in pieces if p.page_start is not None]
    ends = [p.page_end for p in pieces if p.page_end is not None]
    return (min(starts) if starts else None, max(ends) if ends else None)


def split_sentences(block: Block) -> list[Piece]:
    """A paragraph as sentence pieces, each with the pages it stands on."""
    pieces: list[Piece] = []
    start = 0
    bounds = [m.end() for m in _SENTENCE.finditer(block.text)] + [len(block.text)]
    for end in bounds:
        text = block.text[start:end].strip()
        if text:
            pieces.append(Piece(text, block.page_at(start), block.page_at(max(start, end - 1)), " "))
        start = end
    return pieces


def _prose_passages(pieces: list[Piece], path: tuple[str, ...]) -> list[PassageDraft]:
    """Pack paragraph pieces into passages; long paragraphs are first cut into sentences."""
    units: list[Piece] = []
    for piece in pieces:
        units.append(piece)
    out: list[PassageDraft] = []
    cur: list[Piece] = []
    count = 0

    def emit() -> None:
        nonlocal cur, count
        if cur:
            text = cur[0].text + "".join(p.glue + p.text for p in cur[1:])
            start, end = _span(cur)
            out.append(PassageDraft(text=text, heading_path=path, page_start=start, page_end=end))
        cur, count = [], 0

    for unit in units:
        n = unit.words()
        if cur and count + n > TARGET_MAX and count >= TARGET_MIN * 0.5:
            emit()
        if n > TARGET_MAX and not cur:
            cur, count = [unit], n  # one sentence longer than a passage: it stays whole
            emit()
            continue
        if not cur:
            unit = Piece(unit.text, unit.page_start, unit.page_end, "")
        cur.append(unit)
        count += n
    emit()
    return out


def _table_passages(block: Block, path: tuple[str, ...], lead: str | None) -> list[PassageDraft]:
    rows = block.text.split("\n")
    head = [lead] if lead else []
    if block.words() + len(lead.split() if lead else []) <= TABLE_MAX or len(rows) < 3:
        text = "\n".join([*head, *rows])
        if block.columns and len(rows) > 1:
            text += "\n\n" + block.columns
        return [PassageDraft(text, path, block.page_start, block.page_end, kind="table")]
    header, body = rows[0], rows[1:]
    parts: list[list[str]] = [[]]
    count = len(header.split())
    for row in body:
        n = len(row.split())
        if parts[-1] and count + n > TABLE_MAX:
            parts.append([])
            count = len(header.split())
        parts[-1].append(row)
        count += n
    out = []
    for i, part in enumerate(parts):
        text = "\n".join([*(head if i == 0 else []), header, *part])
        out.append(PassageDraft(text, path, block.page_start, block.page_end, kind="table"))
    _table_page_spans(block, out)
    return out


def _table_page_spans(block: Block, parts: list[PassageDraft]) -> None:
    """Split tables that cross a page break: each part spans only the pages of its own rows."""
    if not block.page_marks:
        return
    offset = 0
    for part in parts:
        rows = part.text.split("\n")
        last = rows[-1]
        at = block.text.find(last, offset)
        if at >= 0:
            first_at = block.text.find(rows[1] if len(rows) > 1 else rows[0], offset)
            part.page_start = block.page_at(max(first_at, 0))
            part.page_end = block.page_at(at + len(last) - 1)
            offset = at


def _pieces(block: Block) -> list[Piece]:
    if block.words() <= TARGET_MAX:
        return [Piece(block.text, block.page_start, block.page_end)]
    pieces = split_sentences(block)
    if pieces:
        pieces[0].glue = "\n\n"
    return pieces


def build_sections(blocks: list[Block]) -> list[SectionDraft]:
    """Cut the block stream at headings into sections and pack each section's passages."""
    sections: list[SectionDraft] = []
    stack: list[tuple[int, str]] = []
    body: list[Block] = []
    heading: Block | None = None

    def close() -> None:
        nonlocal body, heading
        if body:
            sections.append(_section(tuple(t for _, t in stack), heading, body))
        body, heading = [], None

    for block in blocks:
        if block.kind == "heading":
            close()
            level = max(block.level, 1)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, block.text))
            heading = block
            continue
        body.append(block)
    close()
    return sections


def _section(path: tuple[str, ...], heading: Block | None, body: list[Block]) -> SectionDraft:
    parts = ([heading] if heading else []) + body
    text = "\n\n".join(b.text for b in parts)
    start, end = _span(Piece(b.text, b.page_start, b.page_end) for b in parts)
    section = SectionDraft(heading_path=path, text=text, page_start=start, page_end=end)
    prose: list[Piece] = []
    only_heading = False
    if heading is not None:
        prose.append(Piece(heading.text, heading.page_start, heading.page_end))
        only_heading = True
    for block in body:
        if block.kind == "table":
            lead_in = None
            if only_heading:
                lead_in, prose = prose[0].text, []  # the heading titles the table
            section.passages.extend(_prose_passages(prose, path))
            prose = []
            section.passages.extend(_table_passages(block, path, lead_in))
        else:
            prose.extend(_pieces(block))
        only_heading = False
    section.passages.extend(_prose_passages(prose, path))
    return section
