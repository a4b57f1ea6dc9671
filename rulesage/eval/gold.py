"""Gold questions and the one rule that matches a passage to their evidence.

A gold file is JSON lines: ``id``, ``game``, ``question``, ``answerable`` and ``evidence`` (each item a
``doc`` key, an optional ``page`` and a ``quote``); ``all`` asks for every evidence item instead of any one.
Every figure of the project (``rulesage eval``, the gate, the report, the reader's training measure) loads
gold through ``load_gold`` and matches with ``supports_evidence``.

A passage supports an evidence item when it is from the item's document, its page span holds the item's page
(when both have pages), and it holds the whole normalised quote or a run of 8 of its words
(``rulesage.core.text.supports``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rulesage.core.text import normalise, supports


class GoldError(ValueError):
    """A gold file that cannot be read: the line and what is wrong with it."""


class PassageLike(Protocol):
    @property
    def doc_key(self) -> str: ...
    @property
    def page_start(self) -> int | None: ...
    @property
    def page_end(self) -> int | None: ...
    @property
    def text(self) -> str: ...


Passage = PassageLike | Mapping[str, Any]
Question = Mapping[str, Any]


@dataclass(frozen=True)
class Evidence:
    doc: str
    page: int | None
    quote: str

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> Evidence:
        return cls(str(item["doc"]), item.get("page"), str(item["quote"]))


def _span(p: Passage) -> tuple[str, int | None, int | None, str]:
    if isinstance(p, Mapping):
        return p.get("doc_key") or "", p.get("page_start"), p.get("page_end"), p.get("text") or ""
    return p.doc_key, p.page_start, p.page_end, p.text


def supports_evidence(p: Passage, ev: Evidence | Mapping[str, Any]) -> bool:
    """The gold matching rule (module docstring)."""
    e = ev if isinstance(ev, Evidence) else Evidence.of(ev)
    doc, start, end, text = _span(p)
    if doc != e.doc:
        return False
    if e.page is not None and start and not start <= e.page <= (end or start):
        return False
    return supports(text, e.quote)


def quotes_evidence(p: Passage, quote: str, ev: Evidence | Mapping[str, Any]) -> bool:
    """A quote from passage ``p`` is the evidence's own sentence: the passage supports the item, and the
    quote and the item's quote hold each other (whole, normalised) or share a run of 8 words."""
    e = ev if isinstance(ev, Evidence) else Evidence.of(ev)
    if not supports_evidence(p, e):
        return False
    a, b = normalise(quote), normalise(e.quote)
    return bool(a) and (a in b or b in a or supports(quote, e.quote) or supports(e.quote, quote))


def needs_all(q: Question) -> bool:
    """Whether the question is found only when every evidence item is (``all`` on the row or an item)."""
    return bool(q.get("all")) or any(bool(ev.get("all")) for ev in q["evidence"])


def found(passages: Sequence[Passage], q: Question) -> bool:
    evs = q["evidence"]
    if needs_all(q):
        return all(any(supports_evidence(p, ev) for p in passages) for ev in evs)
    return any(supports_evidence(p, ev) for p in passages for ev in evs)


def first_rank(passages: Sequence[Passage], q: Question) -> int | None:
    """The 1-based rank of the first passage supporting any evidence item (None: none does)."""
    for i, p in enumerate(passages, 1):
        if any(supports_evidence(p, ev) for ev in q["evidence"]):
            return i
    return None


def found_at(passages: Sequence[Passage], q: Question) -> int | None:
    """The smallest k with ``found(passages[:k], q)`` (None when the whole list does not find it): the first
    supporting passage, or with ``all`` the deepest of each evidence item's first supporting passage."""
    firsts = []
    every = needs_all(q)
    for ev in q["evidence"]:
        first = next((i for i, p in enumerate(passages, 1) if supports_evidence(p, ev)), None)
        if every and first is None:
            return None
        if first is not None:
            firsts.append(first)
    if not firsts:
        return None
    return max(firsts) if every else min(firsts)


_REQUIRED = ("id", "game", "question", "answerable", "evidence")


def load_gold(path: Path) -> list[dict[str, Any]]:
    """Every row of a gold file, checked: a clear error names the line of a broken one."""
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldError(f"{path}:{n}: not JSON ({exc.msg})") from None
        missing = [k for k in _REQUIRED if k not in row]
        if missing:
            raise GoldError(f"{path}:{n}: missing {', '.join(missing)}")
        if not isinstance(row["evidence"], list) or any(
            not isinstance(ev, dict) or "doc" not in ev or "quote" not in ev for ev in row["evidence"]
        ):
            raise GoldError(f"{path}:{n}: evidence must be a list of {{doc, page?, quote}}")
        rows.append(row)
    return rows
