"""Errata and FAQ documents: which passages of the amended book each errata passage replaces.

A link is found, in this order of trust, by the rule number the errata names (its heading "702.75a-b", or a
"rule 702.19b" in its text), by section/heading name, by a page reference ("page 42"), and only as a last
resort by vector similarity; every link needs a confirmation (shared topic words with the candidate, or the
errata's quoted old wording found in it; the vector route accepts only the old-wording proof).

A linked passage is marked ``superseded`` (hidden from every arm) only while it still carries the wording the
errata replaces: not when the errata merely adds a new rule, not when the candidate already prints the
errata's quoted new wording, not when a later release rewrote the passage, and not when the book's release
is dated on or after the errata. Supersession is re-evaluated whenever the amended book gets a new release.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg

from rulesage.core.text import normalise

# '702.19b', '601.2f-h' (range of letters), '612.7'; not a version like '2022.04'
_RULE = re.compile(r"(?<![\d.])(\d{3}\.\d{1,3})([a-z])?(?:\s*[-\u2010-\u2015]\s*([a-z]))?(?![\w.]*\d)")
_RULE_HEADING = re.compile(r"^\s*(\d{3}\.\d{1,3}[a-z]?)(?:\s*[-\u2010-\u2015]\s*([a-z]))?\.?\s*$")
_RULE_MENTION = re.compile(
    r"\brules?\s+(\d{3}\.\d{1,3}[a-z]?(?:\s*[-\u2010-\u2015]\s*[a-z])?)", re.IGNORECASE
)
_PAGE = re.compile(r"\b(?:page|pg\.?|p\.)\s*(\d{1,4})\b", re.IGNORECASE)
_QUOTE = re.compile(r"\"([^\"]{3,600})\"|\u201c([^\u201d]{3,600})\u201d")
_OLD_CUE = re.compile(
    r"(used to (?:read|say)|previously (?:read|said)?|formerly|originally (?:read|said)|old (?:wording|text)|"
    r"\bwas:?|instead of|replace(?:s|d)?|change(?:s|d)?|no longer (?:reads|says))\W*$",
    re.IGNORECASE,
)
_NEW_CUE = re.compile(r"\b(with|to|now reads?|should read|new (?:wording|text))\W*$", re.IGNORECASE)
_ADDITION = re.compile(
    r"\b(this|the|a) new (sub)?rules?\b|\bnew (sub)?rules? (?:in|explains|was|has been|that)\b|"
    r"\bnew section\b|\bnew subrule\b|\bhas been added\b|\bwas added\b|\badds? (?:a|the) new\b",
    re.IGNORECASE,
)
_DATE = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?!\d)")
_WORD = re.compile(r"[a-z][a-z'\-]+")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "do",
        "does",
        "each",
        "for",
        "from",
        "has",
        "have",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "may",
        "more",
        "most",
        "no",
        "not",
        "of",
        "on",
        "one",
        "or",
        "other",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "also",
        "only",
        "any",
        "all",
        "both",
        "same",
        "very",
        "just",
        "like",
        "rule",
        "rules",
        "subrule",
        "subrules",
        "section",
        "sections",
        "new",
        "updated",
        "update",
        "change",
        "changes",
        "changed",
        "explains",
        "explain",
        "describes",
        "covers",
        "card",
        "cards",
        "official",
        "notably",
        "specifically",
        "paraphrasing",
        "example",
        "moving",
        "forward",
        "used",
        "now",
        "still",
    ]
)


@dataclass
class Claim:
    """What one errata passage says it changes."""

    rules: list[str] = field(default_factory=list)  # rule ids it targets
    topic: str | None = None  # its nearest non-numeric heading ("Hideaway")
    pages: list[int] = field(default_factory=list)
    old_quotes: list[str] = field(default_factory=list)  # wording it replaces
    new_quotes: list[str] = field(default_factory=list)  # wording it introduces
    addition: bool = False  # it adds a new rule rather than rewording one


def expand_rules(base: str, letter: str | None, last: str | None) -> list[str]:
    """'702.75' 'a' 'b' -> ['702.75a', '702.75b']; '612.7' -> ['612.7']."""
    if not letter:
        return [base]
    if not last or last < letter:
        return [base + letter]
    return [base + chr(c) for c in range(ord(letter), ord(last) + 1)]


def _rules_in(text: str) -> list[str]:
    out: list[str] = []
    for m in _RULE.finditer(text):
        out += expand_rules(m.group(1), m.group(2), m.group(3))
    return out


def heading_rules(heading_path: Sequence[str]) -> list[str]:
    """Rule ids named by the errata passage's own heading ('702.75a-b'), nearest heading first."""
    for h in reversed(heading_path):
        m = _RULE_HEADING.match(h)
        if m:
            ident = m.group(1)
            letter = ident[-1] if ident[-1].isalpha() else None
            base = ident[:-1] if letter else ident
            return expand_rules(base, letter, m.group(2))
    return []


def quotes(text: str) -> tuple[list[str], list[str]]:
    """Quoted wording split by its cue: (old wording the errata replaces, new wording it introduces)."""
    old: list[str] = []
    new: list[str] = []
    for m in _QUOTE.finditer(text):
        q = (m.group(1) or m.group(2) or "").strip()
        if len(q.split()) < 3:
            continue
        before = text[max(0, m.start() - 40) : m.start()]
        if _OLD_CUE.search(before) and not _NEW_CUE.search(before):
            old.append(q)
        else:
            new.append(q)
    return old, new


def read_claim(text: str, heading_path: Sequence[str]) -> Claim:
    rules = heading_rules(heading_path)
    if not rules:
        for m in _RULE_MENTION.finditer(text):
            ident = re.sub(r"\s+", "", m.group(1))
            rules += _rules_in(ident)
    named = [h.strip() for h in heading_path if h.strip() and not _RULE_HEADING.match(h)]
    topic = named[-1] if named else None
    old, new = quotes(text)
    return Claim(
        rules=list(dict.fromkeys(rules)),
        topic=topic,
        pages=sorted({int(m.group(1)) for m in _PAGE.finditer(text)}),
        old_quotes=old,
        new_quotes=new,
        addition=bool(_ADDITION.search(text)),
    )


def content_words(text: str) -> set[str]:
    """Distinctive words (lower case, crude singular), for the topic-overlap confirmation."""
    out = set()
    for w in _WORD.findall(normalise(text)):
        w = w.strip("'-")
        if len(w) < 4 or w in _STOP:
            continue
        if w.endswith("ies") and len(w) > 5:
            w = w[:-3] + "y"
        elif w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return out


def contains_quote(passage: str, quote: str) -> bool:
    """The whole normalised quote stands in the passage (old and new wording share partial runs)."""
    return len(quote.split()) >= 3 and normalise(quote) in normalise(passage)


def confirm(claim: Claim, errata_text: str, candidate: str, min_shared: int = 2) -> tuple[bool, str]:
    """Does the candidate really carry what the errata talks about? Returns (ok, evidence)."""
    for q in claim.old_quotes:
        if contains_quote(candidate, q):
            return True, f'old wording "{q[:200]}"'
    for q in claim.new_quotes:
        if contains_quote(candidate, q):
            return True, f'new wording "{q[:200]}"'
    topic = (claim.topic or "") + " " + errata_text
    shared = sorted(content_words(topic) & content_words(candidate))
    if len(shared) >= min_shared:
        return True, "shared words: " + ", ".join(shared[:8])
    return False, ""


def parse_date(value: str | None) -> dt.date | None:
    if not value:
        return None
    m = _DATE.search(value)
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def still_carries_old(
    claim: Claim,
    candidate: str,
    release_date: dt.date | None,
    errata_date: dt.date | None,
    rewritten: bool,
) -> bool:
    """Whether a linked passage still prints the wording the errata replaces (so it must be hidden)."""
    if any(contains_quote(candidate, q) for q in claim.old_quotes):
        return True
    if claim.addition:
        return False
    if any(contains_quote(candidate, q) for q in claim.new_quotes):
        return False
    if rewritten:
        return False
    return not (release_date and errata_date and release_date >= errata_date)


# -- the store step ---------------------------------------------------------------------------------------
@dataclass
class LinkStats:
    links: int = 0
    superseded: int = 0


@dataclass(frozen=True)
class _Cand:
    id: int
    text: str
    rule_id: str | None
    parent_rule: str | None
    heading_path: tuple[str, ...]
    kind: str


_CAND_COLS = "id, text, rule_id, parent_rule, heading_path, kind"


def _cands(rows: list[tuple]) -> list[_Cand]:
    return [_Cand(int(r[0]), r[1], r[2], r[3], tuple(r[4]), r[5]) for r in rows]


def relink_amended(conn: psycopg.Connection, amended_key: str) -> LinkStats:
    """Recompute the links and superseded flags of the amended book's live passages from every live errata
    passage that amends it. Runs inside the caller's transaction."""
    stats = LinkStats()
    book = conn.execute("SELECT id, version FROM documents WHERE key = %s", (amended_key,)).fetchone()
    if book is None:
        return stats
    book_id, book_version = int(book[0]), book[1]
    conn.execute(
        "DELETE FROM supersessions s USING current_passages p WHERE s.old_passage_id = p.id"
        " AND p.document_id = %s",
        (book_id,),
    )
    conn.execute(
        "UPDATE current_passages SET superseded = false WHERE document_id = %s AND superseded",
        (book_id,),
    )
    errata_docs = conn.execute(
        "SELECT id, version, path FROM documents WHERE amends = %s ORDER BY id", (amended_key,)
    ).fetchall()
    flagged: set[int] = set()
    release_date = parse_date(book_version)
    for e_id, e_version, e_path in errata_docs:
        errata_date = parse_date(e_version) or parse_date(str(e_path).rsplit("/", 1)[-1])
        rows = conn.execute(
            "SELECT id, text, heading_path, embedding IS NOT NULL FROM current_passages"
            " WHERE document_id = %s AND kind <> 'leaf' ORDER BY ord",
            (e_id,),
        ).fetchall()
        for new_id, text, heading_path, has_vec in rows:
            claim = read_claim(text, tuple(heading_path))
            found = _candidates(conn, book_id, int(new_id), claim, text, bool(has_vec))
            rewritten_rules = _rewritten(conn, book_id, int(new_id))
            for method, cand, evidence, covers in found:
                rewritten = bool(cand.rule_id and cand.rule_id in rewritten_rules)
                flag = still_carries_old(claim, cand.text, release_date, errata_date, rewritten)
                for old_id in [cand.id, *covers]:
                    conn.execute(
                        "INSERT INTO supersessions (old_passage_id, new_passage_id, method, evidence)"
                        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                        (old_id, new_id, method, evidence),
                    )
                    stats.links += 1
                    if flag:
                        flagged.add(old_id)
    if flagged:
        conn.execute("UPDATE passages SET superseded = true WHERE id = ANY(%s)", (sorted(flagged),))
    stats.superseded = len(flagged)
    return stats


def _rewritten(conn: psycopg.Connection, book_id: int, errata_passage_id: int) -> set[str]:
    """Rule ids whose passage linked to this errata passage was retired by a later release (rewritten)."""
    rows = conn.execute(
        "SELECT DISTINCT p.rule_id FROM supersessions s JOIN passages p ON p.id = s.old_passage_id"
        " WHERE s.new_passage_id = %s AND p.document_id = %s AND p.retired_at IS NOT NULL"
        " AND p.rule_id IS NOT NULL",
        (errata_passage_id, book_id),
    ).fetchall()
    return {r[0] for r in rows}


def _covering_rows(conn: psycopg.Connection, book_id: int, leaf: _Cand) -> list[int]:
    """Searchable rule rows that print a leaf's text (the leaf's wording surfaces through them)."""
    if not leaf.parent_rule:
        return []
    rows = conn.execute(
        "SELECT id, text FROM current_passages WHERE document_id = %s AND rule_id = %s AND id <> %s",
        (book_id, leaf.parent_rule, leaf.id),
    ).fetchall()
    body = normalise(leaf.text)
    return [int(r[0]) for r in rows if body and body in normalise(r[1])]


def _candidates(
    conn: psycopg.Connection, book_id: int, errata_id: int, claim: Claim, text: str, has_vec: bool
) -> list[tuple[str, _Cand, str, list[int]]]:
    """(method, candidate, evidence, covering rule rows) for each confirmed link of one errata passage."""
    out: list[tuple[str, _Cand, str, list[int]]] = []
    live = "document_id = %s"
    if claim.rules:
        for rule in claim.rules:
            cands = _cands(
                conn.execute(
                    f"SELECT {_CAND_COLS} FROM current_passages WHERE {live}"
                    " AND (rule_id = %s OR parent_rule = %s)"
                    " ORDER BY ord",
                    (book_id, rule, rule),
                ).fetchall()
            )
            # a rule row splits into several passages with one rule id; its leaves are confirmed with it
            exact = [c for c in cands if c.rule_id == rule]
            ok, why = False, ""
            joined = "\n".join(c.text for c in exact)
            if exact:
                ok, why = confirm(claim, text, joined)
            if not ok:
                continue
            for c in cands:
                covers = _covering_rows(conn, book_id, c) if c.kind == "leaf" else []
                out.append(("rule-number", c, f"rule {rule}; {why}", covers))
        if out:
            return out
    if claim.topic:
        cands = _cands(
            conn.execute(
                f"SELECT {_CAND_COLS} FROM current_passages WHERE {live} AND searchable"
                " AND lower(heading_path[array_length(heading_path, 1)]) = lower(%s) ORDER BY ord",
                (book_id, claim.topic),
            ).fetchall()
        )
        for c in cands:
            ok, why = confirm(claim, text, c.text)
            if ok:
                out.append(("section-name", c, f"heading {claim.topic!r}; {why}", []))
        if out:
            return out
    for page in claim.pages:
        cands = _cands(
            conn.execute(
                f"SELECT {_CAND_COLS} FROM current_passages WHERE {live} AND searchable AND page_start <= %s"
                " AND page_end >= %s ORDER BY ord",
                (book_id, page, page),
            ).fetchall()
        )
        best: tuple[int, _Cand, str] | None = None
        for c in cands:
            ok, why = confirm(claim, text, c.text, min_shared=3)
            score = len(content_words(text) & content_words(c.text))
            if ok and (best is None or score > best[0]):
                best = (score, c, why)
        if best:
            out.append(("page-reference", best[1], f"page {page}; {best[2]}", []))
    if out:
        return out
    if claim.old_quotes and has_vec:
        cands = _cands(
            conn.execute(
                f"SELECT {_CAND_COLS} FROM current_passages WHERE {live} AND searchable"
                " AND embedding IS NOT NULL"
                " ORDER BY embedding <=> (SELECT embedding FROM passages WHERE id = %s) LIMIT 10",
                (book_id, errata_id),
            ).fetchall()
        )
        for c in cands:
            for q in claim.old_quotes:
                if contains_quote(c.text, q):
                    out.append(("vector", c, f'nearest neighbour holding old wording "{q[:200]}"', []))
                    break
    return out
