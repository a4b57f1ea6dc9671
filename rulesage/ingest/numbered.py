"""Numbered rules (the Magic: The Gathering Comprehensive Rules layout) -> sections, rule rows, leaf rows.

- Sections are the three-digit sections ("702. Keyword Abilities"), under their chapter
  ("7. Additional Rules").
- A rule row (kind "rule", searchable) holds the rule's own text, every lettered subrule and every "Example:"
  paragraph: the search unit. One longer than ``RULE_MAX_WORDS`` is cut at subrule boundaries into several
  passages that all keep the rule id.
- A leaf row (kind "leaf", searchable=False, parent_rule set) holds one lettered subrule with its examples:
  the citation unit.
- The glossary gives one "glossary" passage per term. Files have no pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rulesage.ingest.model import PassageDraft, SectionDraft

RULE_MAX_WORDS = 450  # a longer rule row is split...
RULE_PART_WORDS = 300  # ...into parts of about this many words

CHAPTER = re.compile(r"^(\d)\. (\S.*)$")
SECTION = re.compile(r"^(\d{3})\. (\S.*)$")
RULE = re.compile(r"^\s*(\d{3}\.\d+)\. (.*)$")
SUBRULE = re.compile(r"^\s*(\d{3}\.\d+[a-z])\s+(.*)$")
EXAMPLE = re.compile(r"^\s*Example:")


def looks_numbered(text: str) -> bool:
    """Many lines like '100.1. ...' and '100.1a ...': a numbered rules document."""
    rules = len(re.findall(r"(?m)^\s*\d{3}\.\d+\. ", text))
    subrules = len(re.findall(r"(?m)^\s*\d{3}\.\d+[a-z] ", text))
    return rules >= 5 and subrules >= 5


@dataclass
class Unit:
    """One numbered paragraph (the rule's own line, or a subrule) with its Example: lines."""

    rule_id: str
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Rule:
    rule_id: str
    head: Unit
    subrules: list[Unit] = field(default_factory=list)

    def units(self) -> list[Unit]:
        return [self.head, *self.subrules]

    @property
    def text(self) -> str:
        return "\n\n".join(u.text for u in self.units())


def _words(text: str) -> int:
    return len(text.split())


def rule_passages(rule: Rule, path: tuple[str, ...]) -> list[PassageDraft]:
    """The rule row (split when long) followed by one leaf row per subrule."""
    out: list[PassageDraft] = []
    if _words(rule.text) <= RULE_MAX_WORDS:
        parts = [rule.units()]
    else:
        parts = [[]]
        count = 0
        for unit in rule.units():
            n = _words(unit.text)
            if parts[-1] and count + n > RULE_PART_WORDS:
                parts.append([])
                count = 0
            parts[-1].append(unit)
            count += n
        # Later parts repeat a short title line ("702.19. Trample") so each part says which rule it is.
        if _words(rule.head.text) <= 12:
            for part in parts[1:]:
                part.insert(0, rule.head)
    for part in parts:
        out.append(
            PassageDraft(
                text="\n\n".join(u.text for u in part),
                heading_path=path,
                page_start=None,
                page_end=None,
                kind="rule",
                rule_id=rule.rule_id,
            )
        )
    for sub in rule.subrules:
        out.append(
            PassageDraft(
                text=sub.text,
                heading_path=path,
                page_start=None,
                page_end=None,
                kind="leaf",
                rule_id=sub.rule_id,
                parent_rule=rule.rule_id,
                searchable=False,
            )
        )
    return out


def _body_range(lines: list[str]) -> tuple[int, int, int]:
    """(first line of the rules, the glossary heading, the end of the glossary)."""
    first_section = next((i for i, ln in enumerate(lines) if SECTION.match(ln)), None)
    if first_section is None:
        first_rule = next(i for i, ln in enumerate(lines) if RULE.match(ln))
        start = first_rule
    else:
        start = first_section
        for i in range(first_section, -1, -1):
            if CHAPTER.match(lines[i]):
                start = i
                break
    glossary = next((i for i in range(start, len(lines)) if lines[i].strip() == "Glossary"), len(lines))
    end = next((i for i in range(glossary + 1, len(lines)) if lines[i].strip() == "Credits"), len(lines))
    return start, glossary, end


def parse_numbered(text: str) -> list[SectionDraft]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start, glossary, end = _body_range(lines)
    sections: list[SectionDraft] = []
    intro = _intro(lines[:start])
    if intro:
        sections.append(intro)
    chapter: str | None = None
    section: SectionDraft | None = None
    rule: Rule | None = None
    unit: Unit | None = None

    def close_rule() -> None:
        nonlocal rule, unit
        if rule is not None and section is not None:
            section.passages.extend(rule_passages(rule, section.heading_path))
        rule, unit = None, None

    def close_section() -> None:
        close_rule()
        if section is not None and section.passages:
            rows = [p.text for p in section.passages if p.kind == "rule"]
            section.text = "\n\n".join([section.heading_path[-1], *_dedupe(rows)])
            sections.append(section)

    for raw in lines[start:glossary]:
        line = raw.rstrip()
        if not line.strip():
            continue
        if m := CHAPTER.match(line):
            close_section()
            section = None
            chapter = f"{m.group(1)}. {m.group(2).strip()}"
            continue
        if m := SECTION.match(line):
            close_section()
            path = (chapter, line.strip()) if chapter else (line.strip(),)
            section = SectionDraft(heading_path=path, text="", page_start=None, page_end=None)
            continue
        if section is None:
            section = SectionDraft(
                heading_path=(chapter or "Rules",), text="", page_start=None, page_end=None
            )
        if m := RULE.match(line):
            close_rule()
            unit = Unit(m.group(1), [line.strip()])
            rule = Rule(m.group(1), unit)
            continue
        if (m := SUBRULE.match(line)) and rule is not None and m.group(1).startswith(rule.rule_id):
            unit = Unit(m.group(1), [line.strip()])
            rule.subrules.append(unit)
            continue
        if unit is not None:
            unit.lines.append(line.strip())  # Example: lines and wrapped continuations
    close_section()
    sections.extend(_glossary(lines[glossary + 1 : end]))
    return sections


def _dedupe(rows: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for row in rows:
        for para in row.split("\n\n"):
            if para not in seen:
                seen.add(para)
                out.append(para)
    return out


def _intro(lines: list[str]) -> SectionDraft | None:
    """The text before the rules, without the table of contents, as plain prose passages."""
    keep: list[str] = []
    for ln in lines:
        if ln.strip() == "Contents":
            break
        keep.append(ln.strip())
    paras = [p for p in "\n".join(keep).split("\n\n") if p.strip()]
    if not paras:
        return None
    text = "\n\n".join(p.strip() for p in paras)
    section = SectionDraft(heading_path=("Introduction",), text=text, page_start=None, page_end=None)
    section.passages.append(PassageDraft(text, ("Introduction",), None, None))
    return section


def _glossary(lines: list[str]) -> list[SectionDraft]:
    entries: list[list[str]] = []
    for ln in lines:
        if not ln.strip():
            if entries and entries[-1]:
                entries.append([])
            continue
        if not entries:
            entries.append([])
        entries[-1].append(ln.strip())
    entries = [e for e in entries if len(e) >= 2]
    if not entries:
        return []
    section = SectionDraft(heading_path=("Glossary",), text="", page_start=None, page_end=None)
    for entry in entries:
        section.passages.append(
            PassageDraft("\n".join(entry), ("Glossary", entry[0]), None, None, kind="glossary")
        )
    section.text = "\n\n".join(p.text for p in section.passages)
    return [section]
