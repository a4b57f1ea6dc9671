"""The intermediate form every extractor produces: a flat, ordered list of blocks.

A block is one heading, one paragraph or one table, with the pages it stands on. The chunker
(rulesage.ingest.chunk) turns blocks into sections and passages; extractors never decide passage sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

BlockKind = Literal["heading", "para", "table"]

CELL_SEP = "\t"  # between the cells of a table row (whitespace: normalised matching ignores it)


@dataclass
class Block:
    kind: BlockKind
    text: str
    page_start: int | None = None
    page_end: int | None = None
    level: int = 0  # headings only: 1 is the top level
    # Tables only: the same cells read column by column (top to bottom, left column first), the order a
    # reader (or pdftotext) follows down a column; empty when the columns are not clear.
    columns: str = ""
    # Where a later page begins inside ``text``: (character offset, page number), ascending.
    page_marks: list[tuple[int, int]] = field(default_factory=list)

    def page_at(self, offset: int) -> int | None:
        page = self.page_start
        for at, number in self.page_marks:
            if at <= offset:
                page = number
        return page

    def words(self) -> int:
        return len(self.text.split())
