"""Alias mining: player words -> book terms, each justified by a verbatim quote from the book.

Only a few patterns, chosen for precision (a junk alias adds noise to the dense arm's canonical lane):
- definitions: "a Warlord is a type of Hero", "X, also called Y", "X (also known as Y)";
- glossary cross-references: an entry whose whole body is "See Z." / "See: Z";
- abbreviations and quoted synonyms in "(or X)": "experience points (or XP)", 'A rhinoceros (or "rhino")'.
Every candidate carries ``evidence``: an exact substring of the passage it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psycopg

_DET = {"a", "an", "the", "this", "that", "these", "those", "your", "its", "their", "each", "any", "some"}
_BAD = set(
    [
        "it",
        "they",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "you",
        "we",
        "one",
        "which",
        "who",
        "what",
        "there",
        "here",
        "something",
        "anything",
        "everything",
        "none",
    ]
)
# everyday words that must never become an alias on their own (they would match every question)
_COMMON = frozenset(
    [
        "if",
        "and",
        "or",
        "not",
        "when",
        "then",
        "else",
        "each",
        "all",
        "any",
        "deal",
        "play",
        "turn",
        "move",
        "card",
        "cards",
        "game",
        "player",
        "players",
        "die",
        "dice",
        "roll",
        "hit",
        "attack",
        "action",
        "round",
        "time",
    ]
)
_CLAUSE_STOP = set(
    [
        "that",
        "which",
        "who",
        "whose",
        "used",
        "with",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "to",
        "and",
        "or",
        "but",
        "when",
        "where",
        "while",
        "if",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "of",
        "than",
        "whom",
        "because",
        "so",
    ]
)
_WORD = r"[A-Za-z][A-Za-z'\-]*"
_ALSO = re.compile(
    r"(?P<pre>[^.;:!?()\n]{0,80}?)(?:,\s*|\s+\(|\s+(?:is|are)\s+)also\s+(?:called|known\s+as)\s+"
    r"(?P<post>\"[^\"\n]{1,40}\"|\u201c[^\u201d\n]{1,40}\u201d|[^,.;:()\n]{1,60})",
    re.IGNORECASE,
)
_TYPE_OF = re.compile(
    rf"(?:^|(?<=[.;:!?\n])\s*|\b(?:a|an|the)\s+)(?P<x>{_WORD}(?:\s+{_WORD}){{0,2}})\s+(?:is|are)\s+(?:a|an)\s+"
    rf"(?:type|kind|sort|form)\s+of\s+(?P<y>{_WORD}(?:\s+{_WORD}){{0,3}})",
)
_SEE_ENTRY = re.compile(r"^\s*(?:(?P<term>[^\n]{1,60})\n)?\s*See:?\s+(?P<target>[^\n]{1,60}?)\.?\s*$")
_OR_PAREN = re.compile(
    rf"(?P<pre>(?:{_WORD}\s+){{0,4}}{_WORD})\s+\(or\s+(?P<x>\"[^\"\n]{{1,30}}\"|\u201c[^\u201d\n]{{1,30}}\u201d|"
    rf"[A-Z]{{2,6}}s?)\)"
)


@dataclass(frozen=True)
class AliasCandidate:
    alias: str
    term: str
    evidence: str  # verbatim substring of the passage
    source: str  # 'definition', 'see', 'glossary'


def _clean(phrase: str) -> str:
    phrase = phrase.strip().strip("\"'\u201c\u201d\u2018\u2019").strip()
    return re.sub(r"\s+", " ", phrase)


def _phrase_after(text: str, max_words: int = 4) -> str:
    """Leading noun phrase: skip a determiner, stop at a clause word or punctuation."""
    text = _clean(text)
    if text.startswith(('"', "\u201c")):
        return _clean(text)
    words = text.split()
    if words and words[0].lower() in _DET:
        words = words[1:]
    out: list[str] = []
    for w in words:
        if w.lower() in _CLAUSE_STOP or not re.fullmatch(_WORD, w):
            break
        out.append(w)
        if len(out) == max_words:
            break
    return " ".join(out)


_PREP = {"of", "for", "in", "on", "with", "to", "from", "by", "at", "into", "onto", "than"}


def _phrase_before(text: str, max_words: int = 4) -> str:
    """Trailing noun phrase of ``text``: walk back until a clause word, a determiner or punctuation. Empty
    when the phrase is the tail of a prepositional phrase ("a stack of cards": "cards" is not the term)."""
    words = text.split()
    out: list[str] = []
    for w in reversed(words):
        if not re.fullmatch(_WORD, w) or w.lower() in _CLAUSE_STOP or w.lower() in _DET:
            if w.lower() in _PREP:
                return ""
            break
        out.append(w)
        if len(out) == max_words:
            break
    return " ".join(reversed(out))


def _ok(alias: str, term: str) -> bool:
    a, t = alias.lower(), term.lower()
    if not a or not t or a == t or a in _BAD or t in _BAD or a in _COMMON:
        return False
    if " " not in a and len(a) < 4 and not alias.isupper():
        return False
    if a.rstrip("s") == t.rstrip("s"):
        return False
    if len(a) < 2 or len(t) < 3 or len(a.split()) > 5 or len(t.split()) > 6:
        return False
    return not (re.search(r"\d", a) or re.search(r"\d", t))


def _evidence(text: str, start: int, end: int) -> str:
    """The sentence around [start, end) (verbatim), at most ~300 characters."""
    stops = [m.end() for m in re.finditer(r"[.!?](?=\s)|\n", text[: start + 1])]
    left = stops[-1] if stops else 0
    right_candidates = [i for i in (text.find(". ", end), text.find("\n", end)) if i >= 0]
    right = min(right_candidates) + 1 if right_candidates else len(text)
    if right - left > 300:
        left, right = max(start - 60, 0), min(end + 60, len(text))
    return text[left:right].strip()


def _initials_match(abbrev: str, phrase: str) -> str | None:
    """Words of the end of ``phrase`` whose initials spell ``abbrev`` (hyphenated parts count): 'non-player
    characters' for 'NPCs'."""
    letters = abbrev.rstrip("s").lower()
    words = phrase.split()
    for n in range(1, min(len(words), 4) + 1):
        tail = words[-n:]
        initials = "".join(part[0].lower() for w in tail for part in w.split("-") if part)
        if initials == letters:
            return " ".join(tail)
    return None


def mine(text: str, heading_path: Sequence[str] = (), kind: str = "prose") -> list[AliasCandidate]:
    """Alias candidates of one passage, each with a verbatim evidence quote."""
    out: list[AliasCandidate] = []
    for m in _ALSO.finditer(text):
        term = _phrase_before(m.group("pre"), 4)
        alias = _phrase_after(m.group("post"), 4)
        if _ok(alias, term):
            out.append(AliasCandidate(alias, term, _evidence(text, m.start("pre"), m.end()), "definition"))
    for m in _TYPE_OF.finditer(text):
        alias = _phrase_after(m.group("x"), 3)
        term = _phrase_after(m.group("y"), 3)
        if _ok(alias, term):
            out.append(AliasCandidate(alias, term, _evidence(text, m.start("x"), m.end()), "definition"))
    see = _SEE_ENTRY.match(text)
    if see:
        m = see
        entry = _clean(m.group("term") or (heading_path[-1] if heading_path else ""))
        target = _clean(m.group("target"))
        reference = re.match(r"(?i)(rules?|sections?|chapter|page|also|the)\b", target)
        if entry and not reference and _ok(entry, target):
            source = "glossary" if kind == "glossary" else "see"
            out.append(AliasCandidate(entry, target, text.strip(), source))
    for m in _OR_PAREN.finditer(text):
        alias = _clean(m.group("x"))
        if re.fullmatch(r"[A-Z]{2,6}s?", alias):
            term = _initials_match(alias, m.group("pre")) or ""
        else:
            term = _phrase_before(m.group("pre"), 1)
        if _ok(alias, term):
            out.append(AliasCandidate(alias, term, _evidence(text, m.start("pre"), m.end()), "definition"))
    return [c for c in out if c.evidence and c.evidence in text]


def dedupe(cands: Iterable[tuple[AliasCandidate, int]]) -> list[tuple[AliasCandidate, int]]:
    """First evidence wins per (alias, term), case-insensitively."""
    seen: set[tuple[str, str]] = set()
    out = []
    for c, pid in cands:
        key = (c.alias.lower(), c.term.lower())
        if key not in seen:
            seen.add(key)
            out.append((c, pid))
    return out


def store_document_aliases(conn: psycopg.Connection, document_id: int) -> int:
    """Mine the live passages of one document and store new aliases for its family; returns rows added.
    Aliases whose evidence passage was retired are dropped first."""
    conn.execute(
        "DELETE FROM aliases a USING passages p WHERE a.passage_id = p.id AND p.document_id = %s"
        " AND p.retired_at IS NOT NULL",
        (document_id,),
    )
    rows = conn.execute(
        "SELECT id, family_id, text, heading_path, kind FROM current_passages WHERE document_id = %s"
        " ORDER BY ord",
        (document_id,),
    ).fetchall()
    if not rows:
        return 0
    family_id = rows[0][1]
    found = dedupe((c, int(r[0])) for r in rows for c in mine(r[2], tuple(r[3]), r[4]))
    added = 0
    for c, pid in found:
        cur = conn.execute(
            "INSERT INTO aliases (family_id, alias, term, evidence, passage_id, source)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (family_id, alias, term) DO NOTHING",
            (family_id, c.alias.lower(), c.term.lower(), c.evidence, pid, c.source),
        )
        added += cur.rowcount
    return added
