"""The shapes a document takes on its way into the database.

``parse_document`` (rulesage.ingest.parse) turns one source file into a ``ParsedDocument``: its pages (as
extracted, with the method that produced each) and its sections, each holding its passages. The pipeline
(rulesage.ingest.pipeline) stores them, embeds the passages, and links releases, errata and aliases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

PassageKind = Literal["prose", "table", "rule", "leaf", "glossary"]
PageMethod = Literal["pdf-text", "pdf-ocr", "form-feed", "markup", "plain"]


class ExtractionError(ValueError):
    """The file cannot be read as the format it claims (corrupt, encrypted, empty, unsupported)."""


@dataclass(frozen=True)
class Page:
    number: int  # 1-based page of the source file
    text: str
    method: PageMethod


@dataclass
class PassageDraft:
    text: str
    heading_path: tuple[str, ...]
    page_start: int | None  # None for files without pages
    page_end: int | None
    kind: PassageKind = "prose"
    rule_id: str | None = None  # numbered rulebooks: '702.19' (rule row) or '702.19b' (leaf row)
    parent_rule: str | None = None  # leaf rows: '702.19'
    searchable: bool = True  # leaf rows are the citation unit only (their rule row is searched)


@dataclass
class SectionDraft:
    heading_path: tuple[str, ...]
    text: str
    page_start: int | None
    page_end: int | None
    passages: list[PassageDraft] = field(default_factory=list)


@dataclass
class ParsedDocument:
    pages: list[Page]  # empty for files without pages
    sections: list[SectionDraft]

    @property
    def passages(self) -> list[PassageDraft]:
        return [p for s in self.sections for p in s.passages]
