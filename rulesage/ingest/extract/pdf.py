"""PDF extraction with pypdfium2: characters with their boxes -> runs -> lines -> columns -> blocks.

Reading order is geometric, not the content stream's: each page is cut into bands at lines that cross the
column gutter (full-width headings, tables, titles); inside a band the left column is read before the right.
Pages with (almost) no text layer but with images are OCR'd (tesseract) and marked "pdf-ocr".
"""

from __future__ import annotations

import ctypes
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from rulesage.ingest.extract.blocks import CELL_SEP, Block
from rulesage.ingest.extract.cleanup import Dehyphenator, clean_chars, collapse_spaces
from rulesage.ingest.model import ExtractionError, Page

OCR_MIN_CHARS = 20  # a page with fewer text-layer characters than this (and an image) is OCR'd
OCR_DPI = 300
CELL_GAP_EM = 0.9  # a horizontal gap wider than this (in font sizes) separates runs: cells, columns
HEADING_DELTA = 0.8  # points above the body size that make a line a heading


@dataclass
class Run:
    """Characters on one baseline with no wide gap between them."""

    text: str
    x0: float
    x1: float
    y: float  # baseline, PDF points from the bottom
    size: float
    bold: bool


@dataclass
class Line:
    runs: list[Run]
    y: float
    size: float
    bold: bool
    page: int

    @property
    def x0(self) -> float:
        return self.runs[0].x0

    @property
    def x1(self) -> float:
        return self.runs[-1].x1

    def text(self) -> str:
        return collapse_spaces(" ".join(r.text for r in self.runs))


@dataclass
class PdfPage:
    number: int
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)  # in reading order
    method: str = "pdf-text"


def _open(path: Path) -> pdfium.PdfDocument:
    data = path.read_bytes()
    if not data.strip():
        raise ExtractionError(f"{path.name}: empty file")
    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise ExtractionError(f"{path.name}: not a PDF (no %PDF header)")
    try:
        doc = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        msg = str(exc)
        if "password" in msg.lower():
            raise ExtractionError(f"{path.name}: encrypted PDF (needs a password)") from exc
        raise ExtractionError(f"{path.name}: corrupt or truncated PDF ({msg})") from exc
    if len(doc) == 0:
        raise ExtractionError(f"{path.name}: PDF without pages")
    return doc


def _runs(textpage: pdfium.PdfTextPage) -> list[Run]:
    tp = textpage.raw
    n = pdfium_c.FPDFText_CountChars(tp)
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    ox, oy = ctypes.c_double(), ctypes.c_double()
    matrix = pdfium_c.FS_MATRIX()
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    runs: list[Run] = []
    cur: list[str] = []
    cx0 = cx1 = cy = csize = 0.0
    cbold = 0
    ccount = 0
    pending_space = False

    def close() -> None:
        nonlocal cur, ccount, cbold
        text = "".join(cur).strip()
        if text:
            runs.append(Run(text, cx0, cx1, cy, csize, cbold * 2 > ccount))
        cur, ccount, cbold = [], 0, 0

    for k in range(n):
        ch = chr(pdfium_c.FPDFText_GetUnicode(tp, k))
        if ch.isspace() or ch in "\x00\x02\ufffe":
            pending_space = True
            continue
        pdfium_c.FPDFText_GetCharBox(tp, k, left, right, bottom, top)
        pdfium_c.FPDFText_GetCharOrigin(tp, k, ox, oy)
        pdfium_c.FPDFText_GetMatrix(tp, k, matrix)
        size = pdfium_c.FPDFText_GetFontSize(tp, k) * math.sqrt(
            abs(matrix.a * matrix.d - matrix.b * matrix.c)
        )
        if size < 2:  # some producers report 1.0: fall back to the glyph box
            size = max(top.value - bottom.value, 2.0)
        x0, x1, y = left.value, right.value, oy.value
        if ccount:
            em = max(csize, size)
            gap = x0 - cx1
            if abs(y - cy) > 0.45 * em or gap < -0.6 * em or gap > CELL_GAP_EM * em:
                close()
                pending_space = False
            elif pending_space or gap > 0.22 * em:
                cur.append(" ")
        if not ccount:
            cx0, cy, csize = x0, y, size
        pdfium_c.FPDFText_GetFontInfo(tp, k, name, 128, flags)
        cbold += b"Bold" in name.value or b"Semibold" in name.value or b"SemiBold" in name.value
        cur.append(ch)
        ccount += 1
        cx1 = max(cx1, x1) if ccount > 1 else x1
        csize = max(csize, size)
        pending_space = False
    close()
    return runs


def _lines(runs: list[Run], page: int) -> list[Line]:
    """Group runs into lines (same baseline), top to bottom, runs left to right."""
    lines: list[Line] = []
    for run in sorted(runs, key=lambda r: (-r.y, r.x0)):
        if lines and abs(lines[-1].y - run.y) <= 0.35 * max(run.size, lines[-1].size):
            lines[-1].runs.append(run)
            continue
        lines.append(Line([run], run.y, run.size, run.bold, page))
    for line in lines:
        line.runs.sort(key=lambda r: r.x0)
        chars = sum(len(r.text) for r in line.runs)
        line.size = max(r.size for r in line.runs)
        line.bold = sum(len(r.text) for r in line.runs if r.bold) * 2 > chars
    return lines


def find_gutter(lines: list[Line], width: float) -> float | None:
    """The x of the column gutter: the point near the middle that the fewest runs cross, when there is
    real text on both sides of it. None for a one-column page."""
    runs = [r for line in lines for r in line.runs]
    if len(runs) < 8:
        return None
    cover = np.zeros(int(width) + 2, dtype=np.int32)
    for r in runs:
        a, b = max(math.floor(r.x0) + 1, 0), min(math.ceil(r.x1), len(cover))
        if b > a:
            cover[a:b] += 1
    lo, hi = int(width * 0.3), int(width * 0.7)
    middle = cover[lo : hi + 1]
    least = int(middle.min())
    candidates = np.flatnonzero(middle == least) + lo
    g = float(candidates[np.argmin(np.abs(candidates - width / 2))])
    crossing = least
    left = sum(1 for line in lines if any(r.x1 <= g for r in line.runs))
    right = sum(1 for line in lines if any(r.x0 >= g for r in line.runs))
    if crossing > max(2, len(lines) // 20) or left < 4 or right < 4:
        return None
    # Widen to the middle of the empty strip around g.
    left_edge = max((r.x1 for r in runs if r.x1 <= g), default=g)
    right_edge = min((r.x0 for r in runs if r.x0 >= g), default=g)
    return (left_edge + right_edge) / 2 if right_edge - left_edge < width * 0.2 else g


def reading_order(lines: list[Line], width: float) -> list[Line]:
    g = find_gutter(lines, width)
    if g is None:
        return lines
    out: list[Line] = []
    left: list[Line] = []
    right: list[Line] = []

    def flush() -> None:
        out.extend(left)
        out.extend(right)
        left.clear()
        right.clear()

    for line in lines:
        if any(r.x0 < g < r.x1 for r in line.runs):
            flush()
            out.append(line)
            continue
        lr = [r for r in line.runs if r.x1 <= g]
        rr = [r for r in line.runs if r.x0 >= g]
        if lr:
            left.append(Line(lr, line.y, max(r.size for r in lr), line.bold, line.page))
        if rr:
            right.append(Line(rr, line.y, max(r.size for r in rr), line.bold, line.page))
    flush()
    return out


def _has_images(page: pdfium.PdfPage) -> bool:
    return any(obj.type == pdfium_c.FPDF_PAGEOBJ_IMAGE for obj in page.get_objects())


def ocr_page(page: pdfium.PdfPage) -> str:
    """OCR one rendered page with tesseract (pytesseract)."""
    try:
        import pytesseract
    except ImportError as exc:  # pragma: no cover - environment
        raise ExtractionError("page needs OCR but pytesseract is not installed") from exc
    image = page.render(scale=OCR_DPI / 72).to_pil()
    try:
        return str(pytesseract.image_to_string(image))
    except pytesseract.TesseractNotFoundError as exc:  # pragma: no cover - environment
        raise ExtractionError("page needs OCR but the tesseract binary is missing") from exc


def _ocr_lines(text: str, page: int, size: float) -> list[Line]:
    lines = []
    for i, raw in enumerate(text.splitlines()):
        raw = raw.strip()
        if raw:
            y = -float(i)
            lines.append(Line([Run(raw, 0.0, 1.0, y, size, False)], y, size, False, page))
        else:
            lines.append(Line([Run("", 0.0, 0.0, -float(i), size, False)], -float(i), size, False, page))
    return lines


def read_pages(path: Path) -> list[PdfPage]:
    doc = _open(path)
    pages: list[PdfPage] = []
    try:
        for index in range(len(doc)):
            try:
                page = doc[index]
                width, height = page.get_size()
                textpage = page.get_textpage()
            except pdfium.PdfiumError as exc:  # a corrupt page object: the file is damaged
                raise ExtractionError(f"{path.name}: corrupt PDF, page {index + 1}: {exc}") from exc
            runs = _runs(textpage)
            out = PdfPage(index + 1, width, height)
            if sum(len(r.text) for r in runs) < OCR_MIN_CHARS and _has_images(page):
                out.method = "pdf-ocr"
                out.lines = _ocr_lines(clean_chars(ocr_page(page)), index + 1, 10.0)
            else:
                for r in runs:
                    r.text = clean_chars(r.text)
                out.lines = reading_order(_lines(runs, index + 1), width)
            pages.append(out)
    finally:
        doc.close()
    return pages


def _drop_furniture(pages: list[PdfPage]) -> None:
    """Running heads and page numbers: lines at the top or bottom edge whose text (digits removed) recurs
    on many pages."""
    if len(pages) < 4:
        return

    def key(line: Line) -> str:
        return re.sub(r"\d+", "#", line.text().lower()).strip()

    def edges(p: PdfPage) -> list[Line]:
        ys = sorted(p.lines, key=lambda ln: -ln.y)
        return ys[:2] + ys[-2:]

    counts: Counter[str] = Counter()
    for p in pages:
        counts.update({key(ln) for ln in edges(p) if p.method == "pdf-text"})
    common = {k for k, c in counts.items() if c >= max(3, len(pages) // 5)}
    for p in pages:
        if p.method != "pdf-text":
            continue
        drop = {id(ln) for ln in edges(p) if key(ln) in common}
        p.lines = [ln for ln in p.lines if id(ln) not in drop]


def _body_size(pages: list[PdfPage]) -> float:
    sizes: Counter[float] = Counter()
    for p in pages:
        for line in p.lines:
            for r in line.runs:
                sizes[round(r.size, 1)] += len(r.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _heading_levels(pages: list[PdfPage], body: float) -> dict[float, int]:
    sizes = sorted(
        {round(ln.size, 1) for p in pages for ln in p.lines if ln.size >= body + HEADING_DELTA}, reverse=True
    )
    return {s: min(i + 1, 4) for i, s in enumerate(sizes)}


def column_view(rows: list[Line]) -> str:
    """The table's cells column by column. Columns are the x-ranges of the row with the most cells; every
    cell goes to the leftmost column it overlaps. Empty when there is no row with two cells or more."""
    widest = max(rows, key=lambda ln: len(ln.runs))
    if len(widest.runs) < 2:
        return ""
    bounds = [(r.x0, r.x1) for r in widest.runs]
    columns: list[list[str]] = [[] for _ in bounds]
    for line in rows:
        for run in line.runs:
            at = next((i for i, (a, b) in enumerate(bounds) if run.x0 < b and run.x1 > a), None)
            if at is None:  # in a gap: the nearest column by left edge
                at = min(range(len(bounds)), key=lambda i: abs(bounds[i][0] - run.x0))
            columns[at].append(collapse_spaces(run.text))
    return "\n\n".join("\n".join(col) for col in columns if col)


def _is_table_line(line: Line) -> bool:
    return len(line.runs) >= 2


def blocks_from_pages(pages: list[PdfPage]) -> list[Block]:
    _drop_furniture(pages)
    body = _body_size(pages)
    levels = _heading_levels(pages, body)
    dehyph = Dehyphenator(ln.text() for p in pages for ln in p.lines)
    blocks: list[Block] = []
    para: list[Line] = []
    table: list[Line] = []

    def flush_para() -> None:
        if para:
            text, marks = dehyph.join_paged([(ln.text(), ln.page) for ln in para])
            if text:
                blocks.append(Block("para", text, para[0].page, para[-1].page, page_marks=marks))
            para.clear()

    def flush_table() -> None:
        if len(table) >= 2:
            rows = [CELL_SEP.join(collapse_spaces(r.text) for r in ln.runs) for ln in table]
            block = Block("table", "\n".join(rows), table[0].page, table[-1].page)
            block.columns = column_view(table)
            blocks.append(block)
        elif table:
            para.extend(table)
        table.clear()

    for p in pages:
        prev: Line | None = None
        for line in p.lines:
            text = line.text()
            if not text:
                flush_table()
                flush_para()
                prev = None
                continue
            level = levels.get(round(line.size, 1))
            if level and len(text.split()) <= 14 and not _is_table_line(line):
                flush_table()
                flush_para()
                if blocks and blocks[-1].kind == "heading" and blocks[-1].level == level and prev is not None:
                    blocks[-1].text += " " + text
                else:
                    blocks.append(Block("heading", text, p.number, p.number, level))
                prev = line
                continue
            if _is_table_line(line):
                flush_para() if not table else None
                table.append(line)
                prev = line
                continue
            if table:
                # A one-cell line inside a table (a wrapped cell) stays with it when the next line is a row.
                flush_table()
            if para:
                last = para[-1]
                jumped = last.page != line.page or line.y > last.y  # new column or new page
                pitch = last.y - line.y
                if jumped:
                    if _SENTENCE_END.search(last.text()) or not text[:1].islower():
                        flush_para()
                elif pitch > 1.75 * line.size or _ends_paragraph(last, line):
                    flush_para()
            para.append(line)
            prev = line
        flush_table()
    flush_para()
    return blocks


_SENTENCE_END = re.compile(r"[.!?:;][\"'\u201d\u2019)]*$")


def _ends_paragraph(prev: Line, line: Line) -> bool:
    """A bold lead-in ('Cover.') or a clearly short sentence-final line ends the paragraph before."""
    return line.bold and not prev.bold


def extract_pdf(path: Path) -> tuple[list[Page], list[Block]]:
    pdf_pages = read_pages(path)
    if not any(ln.text() for p in pdf_pages for ln in p.lines):
        raise ExtractionError(f"{path.name}: no text in any page (and nothing OCR could read)")
    pages = [
        Page(
            p.number,
            "\n".join(ln.text() for ln in p.lines),
            "pdf-ocr" if p.method == "pdf-ocr" else "pdf-text",
        )
        for p in pdf_pages
    ]
    return pages, blocks_from_pages(pdf_pages)
