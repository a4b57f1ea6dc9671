"""Character-level clean-up of extracted text: ligatures, soft hyphens, split words, line-end hyphenation.

Nothing here adds words that are not in the book: it only undoes typesetting (ligature glyphs, soft
hyphens, tab-split words, words broken at a line end).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_LIGATURES = {chr(c): unicodedata.normalize("NFKC", chr(c)) for c in range(0xFB00, 0xFB07)}
# Hyphen runs some PDF producers emit for one visible hyphen: '-', soft hyphen, U+2010, U+2011 in a row.
_HYPHEN_RUN = re.compile(r"[-\u2010\u2011][\u00ad\u2010\u2011-]+")
# Word separators written as tab/CR/nbsp runs (the SRD's '\t\r \xa0' between every word).
_SPLIT_SPACE = re.compile(r"[ \t\r\u00a0]*[\t\r][ \t\r\u00a0]*|\u00a0+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_WORD_HYPHEN = re.compile(r"\b([A-Za-z]+)-([a-z]+)\b")
_WORD = re.compile(r"[A-Za-z]+")


def clean_chars(text: str) -> str:
    """Ligatures to letters (NFKC for U+FB00..FB06 only), soft hyphens and control characters dropped,
    runs of hyphen-like characters to one '-', tab/CR/no-break separators to one space."""
    for lig, plain in _LIGATURES.items():
        if lig in text:
            text = text.replace(lig, plain)
    text = _HYPHEN_RUN.sub("-", text)
    text = text.replace("\u00ad", "")
    text = _SPLIT_SPACE.sub(" ", text)
    return _CONTROL.sub("", text)


class Dehyphenator:
    """Joins words broken at a line end. The document's own vocabulary decides: 'two-\\nhanded' keeps its
    hyphen when 'two-handed' stands elsewhere in the book; otherwise the hyphen is the typesetter's."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.hyphenated: set[str] = set()
        self.words: set[str] = set()
        for text in texts:
            for line in text.splitlines():
                body = line.rstrip()
                if body.endswith("-"):
                    body = body[:-1]
                for a, b in _WORD_HYPHEN.findall(body):
                    self.hyphenated.add(f"{a}-{b}".lower())
                self.words.update(w.lower() for w in _WORD.findall(body))

    def keep_hyphen(self, head: str, tail: str) -> bool:
        """``head`` ends the line (without its '-'), ``tail`` starts the next one."""
        a = re.search(r"[A-Za-z]+$", head)
        b = re.match(r"[A-Za-z]+", tail)
        if not a or not b:
            return True
        left, right = a.group(0).lower(), b.group(0).lower()
        if f"{left}-{right}" in self.hyphenated:
            return True
        if left + right in self.words:
            return False
        # Unknown either way: two known words make a compound ("good-natured"), else a split word.
        return tail[:1].isupper() or (
            len(left) > 1 and len(right) > 1 and left in self.words and right in self.words
        )

    def join(self, lines: list[str]) -> str:
        """Join the lines of one paragraph with spaces, undoing line-end hyphenation."""
        return self.join_paged([(line, 0) for line in lines])[0]

    def join_paged(self, lines: list[tuple[str, int]]) -> tuple[str, list[tuple[int, int]]]:
        """Like ``join`` for (line, page) pairs; also returns where each later page begins in the text."""
        out = ""
        marks: list[tuple[int, int]] = []
        page = lines[0][1] if lines else 0
        for raw, line_page in lines:
            line = raw.strip()
            if not line:
                continue
            if not out:
                out = line
                page = line_page
                continue
            if re.search(r"[A-Za-z]-$", out) and line[:1].isalpha():
                if not self.keep_hyphen(out[:-1], line):
                    out = out[:-1]
            else:
                out += " "
            if line_page != page:
                marks.append((len(out), line_page))
                page = line_page
            out += line
        return out, marks


def collapse_spaces(text: str) -> str:
    return re.sub(r"[ \u00a0]{2,}", " ", text).strip()
