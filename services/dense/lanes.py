"""Alias lanes (pure). When a player's word from the alias table appears in the question, two lanes vote:
*expanded* keeps the player's words and adds a nudge toward the book's term ("... [warlord (hero)]"), and
*canonical* replaces the alias with the book's term. With no alias, one lane and one embedding.

A forum post tells its situation first and asks last; with ``asked`` (its asking sentences alone, see
``rulesage.core.text.asked_only``) one more lane, "dense.asked", votes for what the post asks."""

from __future__ import annotations

import re
from dataclasses import dataclass

CARDS_LANE = "dense.cards"


@dataclass(frozen=True)
class Alias:
    alias: str
    term: str
    evidence: str = ""


@dataclass(frozen=True)
class Lane:
    name: str
    text: str


def _pattern(word: str) -> re.Pattern[str]:
    # whole words, case-insensitive, with a plain plural
    return re.compile(r"(?<![\w-])" + re.escape(word) + r"(?:s|es)?(?![\w-])", re.IGNORECASE)


def matching(question: str, aliases: list[Alias], most: int = 3) -> list[Alias]:
    """Aliases whose player word appears in the question, longest first, one per alias word."""
    found: list[Alias] = []
    seen: set[str] = set()
    for a in sorted(aliases, key=lambda a: (-len(a.alias), a.alias, a.term)):
        key = a.alias.lower()
        if key in seen or a.alias.lower() == a.term.lower():
            continue
        if _pattern(a.alias).search(question):
            found.append(a)
            seen.add(key)
        if len(found) == most:
            break
    return found


def lanes(question: str, matches: list[Alias], cards_text: str = "", asked: str = "") -> list[Lane]:
    """The question's lanes; with ``cards_text`` (what the cards it names say) one more, "dense.cards", and
    with ``asked`` (the question's asking sentences) one more, "dense.asked". The question's own lane stays
    first (the one the aisle and the prior rulings read when no alias matched)."""
    extra = [Lane(CARDS_LANE, f"{question} {cards_text}")] if cards_text else []
    if asked:
        extra.append(Lane("dense.asked", asked))
    if not matches:
        return [Lane("dense", question), *extra]
    nudges = " ".join(f"[{m.alias.lower()} ({m.term.lower()})]" for m in matches)
    canonical = question
    for m in matches:
        canonical = _pattern(m.alias).sub(m.term, canonical)
    return [Lane("dense.expanded", f"{question} {nudges}"), Lane("dense.canonical", canonical), *extra]
