"""Plain text, and pdftotext -layout text with one form feed per page and two columns printed side by side.

Per page, the gutter is the column where the right-hand column's lines start (text after a run of spaces, at
the same position on many lines). Lines are then read left part first, right part second, band by band: a
band ends at a line that runs across the gutter (a full-width heading) or at a stretch of lines whose right
part does not start at the gutter (a full-width table whose cells happen to leave the gutter blank).
"""

from __future__ import annotations

import re
from collections import Counter

from rulesage.ingest.extract.blocks import CELL_SEP, Block
from rulesage.ingest.extract.cleanup import Dehyphenator, clean_chars
from rulesage.ingest.model import Page

_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"}
SOFT_BREAK = "\x0b"  # a column or page change: a paragraph break only after a finished sentence
_GAP = re.compile(r" {2,}")
_SENTENCE_END = re.compile(r"[.!?:;][\"'\u201d\u2019)]*$")


def find_gutter(lines: list[str]) -> tuple[int, int] | None:
    """The blank strip between side-by-side columns as (first blank column, first column of the right-hand
    column), or None for a one-column page. The strip is the widest run of columns near the middle that
    (almost) no line touches, with text on both sides of it."""
    text_lines = [ln for ln in lines if ln.strip()]
    if len(text_lines) < 6:
        return None
    width = max(len(ln) for ln in text_lines)
    occupied = [0] * (width + 1)
    for ln in text_lines:
        for i, ch in enumerate(ln):
            if ch != " ":
                occupied[i] += 1
    limit = max(1, len(text_lines) // 25)
    lo, hi = int(width * 0.3), int(width * 0.7)
    best: tuple[int, float, int, int] | None = None
    c = lo
    while c <= hi:
        if occupied[c] > limit:
            c += 1
            continue
        start = c
        while c < width and occupied[c] <= limit:
            c += 1
        run = c - start
        key = (run, -abs((start + c) / 2 - width / 2), start, c)
        if run >= 2 and (best is None or key[:2] > best[:2]):
            best = key
    if best is None:
        return None
    _, _, start, end = best
    while start < end - 2 and occupied[start]:  # the few lines that touch the strip's left edge run long
        start += 1
    left = sum(1 for ln in text_lines if ln[:start].strip())
    right = sum(1 for ln in text_lines if ln[end:].strip())
    if left < 4 or right < 4:
        return None
    return start, end


def _split(line: str, gutter: tuple[int, int]) -> tuple[str, str] | None:
    """(left, right) parts of a line, or None when text runs across the gutter."""
    start, end = gutter
    if line[start:end].strip():
        return None
    return line[:start].rstrip(), line[end:]


def column_order(lines: list[str]) -> list[str]:
    """The page's lines in reading order, with SOFT_BREAK where the reading jumps to another column."""
    g = find_gutter(lines)
    if g is None:
        return lines
    parts = [_split(ln, g) for ln in lines]
    # A stretch between blank lines is full width when its right parts mostly start off the gutter, or
    # when its lines are table rows on both sides (one grid across the page).
    full = [p is None for p in parts]
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        rights = [p[1] for p in parts[i:j] if p is not None and p[1].strip()]
        aligned = sum(1 for r in rights if len(r) - len(r.lstrip(" ")) <= 4)
        both = [p for p in parts[i:j] if p is not None and p[0].strip() and p[1].strip()]
        grid = sum(1 for p in both if _is_row(p[0]) and _is_row(p[1]))
        if (rights and aligned * 2 < len(rights)) or (len(both) >= 2 and grid * 5 >= len(both) * 3):
            for k in range(i, j):
                full[k] = True
        i = j
    out: list[str] = []
    left: list[str] = []
    right: list[str] = []

    def flush() -> None:
        # Inside a column, a blank beside the other column's text is alignment, not a paragraph break.
        if left or right:
            out.extend(ln if ln.strip() else SOFT_BREAK for ln in left)
            out.append(SOFT_BREAK)
            out.extend(ln if ln.strip() else SOFT_BREAK for ln in right)
            out.append(SOFT_BREAK)
        left.clear()
        right.clear()

    for line, part, is_full in zip(lines, parts, full, strict=True):
        if is_full or part is None:
            flush()
            out.append(line)
            continue
        left.append(part[0])
        right.append(part[1])
    flush()
    return out


def _cells(line: str) -> list[str]:
    return [c for c in _GAP.split(line.strip()) if c]


def _is_row(line: str) -> bool:
    cells = _cells(line)
    return len(cells) >= 3 or (len(cells) == 2 and re.search(r"\S {3,}\S", line.strip()) is not None)


def _heading_level(line: str, set_off: bool) -> int:
    """0, or the level of a heading line: short, unpunctuated, capitalised, set off above and below."""
    text = line.strip()
    words = text.split()
    if not set_off or not words or len(words) > 8 or _SENTENCE_END.search(text):
        return 0
    if re.search(r"[,;:]", text):
        return 0
    if not text[0].isupper() or _is_row(line):
        return 0
    if text.isupper() and len(text) > 3:
        return 1
    caps = sum(1 for w in words if w[0].isupper() or not w[0].isalpha())
    if caps * 2 < len(words):
        return 0
    return 2


def blocks_from_lines(lines: list[tuple[str, int | None]]) -> list[Block]:
    """Blank lines end paragraphs; SOFT_BREAK ends one only after a finished sentence; runs of table rows
    become table blocks; short capitalised lines set off by a blank line become headings."""
    dehyph = Dehyphenator(t for t, _ in lines if t != SOFT_BREAK)
    blocks: list[Block] = []
    para: list[tuple[str, int | None]] = []
    table: list[tuple[str, int | None]] = []

    def flush_para() -> None:
        if para:
            text, marks = dehyph.join_paged([(t, p or 0) for t, p in para])
            if text:
                blocks.append(
                    Block("para", text, para[0][1], para[-1][1], page_marks=marks if para[0][1] else [])
                )
            para.clear()

    def flush_table() -> None:
        if len(table) >= 2:
            flush_para()
            rows = [CELL_SEP.join(_cells(t)) for t, _ in table]
            blocks.append(Block("table", "\n".join(rows), table[0][1], table[-1][1]))
        else:
            para.extend(table)
        table.clear()

    blank_before = True
    for i, (line, page) in enumerate(lines):
        if line == SOFT_BREAK:
            flush_table()
            if para and _SENTENCE_END.search(para[-1][0].strip()):
                flush_para()
            blank_before = True
            continue
        if not line.strip():
            flush_table()
            flush_para()
            blank_before = True
            continue
        after = lines[i + 1][0] if i + 1 < len(lines) else None
        settled = not para or _SENTENCE_END.search(para[-1][0].strip()) is not None
        alone = after is not None and (after == SOFT_BREAK or not after.strip() or _is_row(after))
        if not alone and after and len(line.split()) <= 4 and after.strip()[:1].isupper():
            alone = all(w[0].isupper() or w in _SMALL_WORDS for w in line.split())
        level = _heading_level(line, blank_before and settled and alone)
        blank_before = False
        if level and not table:
            flush_para()
            blocks.append(Block("heading", line.strip(), page, page, level))
            continue
        if _is_row(line):
            table.append((line, page))
            continue
        if table and len(table) >= 2 and len(line) - len(line.lstrip()) >= 4:
            table.append((line, page))  # an indented continuation of a wrapped cell
            continue
        flush_table()
        para.append((line, page))
    flush_table()
    flush_para()
    return blocks


def _drop_furniture(pages: list[list[str]]) -> list[list[str]]:
    """Running heads (a first line whose cells recur on many pages) and page numbers (a last line that is
    only a number)."""
    firsts: Counter[str] = Counter()
    for lines in pages:
        head = next((ln for ln in lines if ln.strip()), "")
        firsts.update(set(_cells(head)))
    common = {c for c, n in firsts.items() if n >= max(3, len(pages) // 5)}
    out = []
    for lines in pages:
        lines = list(lines)
        idx = [i for i, ln in enumerate(lines) if ln.strip()]
        if idx and common & set(_cells(lines[idx[0]])):
            lines[idx[0]] = ""
        if idx and re.fullmatch(r"\s*\d{1,4}\s*", lines[idx[-1]]):
            lines[idx[-1]] = ""
        out.append(lines)
    return out


def extract_form_feed(text: str) -> tuple[list[Page], list[Block]]:
    """One form feed per page (pdftotext -layout): page N is the Nth chunk."""
    chunks = text.split("\f")
    if chunks and not chunks[-1].strip():
        chunks = chunks[:-1]
    # Columns are found on the raw layout; characters are cleaned after (cleaning changes line lengths).
    raw_pages = [c.expandtabs(8).replace("\r", "").split("\n") for c in chunks]
    pages = [
        Page(i + 1, clean_chars("\n".join(ln.rstrip() for ln in lines).strip("\n")), "form-feed")
        for i, lines in enumerate(raw_pages)
    ]
    ordered: list[tuple[str, int | None]] = []
    for number, lines in enumerate(_drop_furniture(raw_pages), 1):
        for ln in column_order([ln.rstrip() for ln in lines]):
            ordered.append((ln if ln == SOFT_BREAK else clean_chars(ln), number))
        ordered.append((SOFT_BREAK, number))
    return pages, blocks_from_lines(ordered)


def extract_plain(text: str) -> list[Block]:
    lines = clean_chars(text.expandtabs(8)).split("\n")
    return blocks_from_lines([(ln.rstrip(), None) for ln in lines])
