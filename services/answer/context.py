"""Match small, read big: each passage is shown inside its section's text, but only the passage is citable.

``surroundings`` cuts the section text before and after the passage to a character budget; ``PgLibrary``
reads sections and numbered rules from Postgres.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from psycopg_pool import AsyncConnectionPool

from rulesage.core.text import canonical_chars
from rulesage.db import vector_array
from services.answer.citations import ShownPassage

_WS = re.compile(r"\s+")


def _locate(section: str, passage: str) -> tuple[int, int] | None:
    at = section.find(passage)
    if at >= 0:
        return at, at + len(passage)
    # the passage may be stored with different spacing: anchor on its first and last words
    canon = canonical_chars(section)
    words = _WS.split(canonical_chars(passage).strip())
    if len(words) < 4:
        return None
    head = r"\s+".join(re.escape(w) for w in words[:6])
    tail = r"\s+".join(re.escape(w) for w in words[-6:])
    m = re.search(head, canon)
    if not m:
        return None
    n = re.search(tail, canon[m.start() :])
    if n is None:
        return None
    return m.start(), m.start() + n.end()


def _cut_left(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    cut = text[len(text) - budget :]
    space = cut.find(" ")
    return "…" + (cut[space + 1 :] if 0 <= space < 40 else cut)


def _cut_right(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    cut = text[:budget]
    space = cut.rfind(" ")
    return (cut[:space] if space > budget - 40 else cut) + "…"


def surroundings(section: str, passage: str, budget: int) -> tuple[str, str]:
    """The section text just before and just after the passage, together at most ``budget`` characters
    (plus ellipses). A passage not found in its section gets the section's opening as 'before'."""
    if budget <= 0 or not section.strip():
        return "", ""
    at = _locate(section, passage)
    if at is None:
        return _cut_right(section.strip(), budget), ""
    before, after = section[: at[0]].strip(), section[at[1] :].strip()
    half = budget // 2
    # give the unused share of one side to the other
    b_budget = max(half, budget - len(after))
    a_budget = max(half, budget - len(before))
    return _cut_left(before, b_budget), _cut_right(after, a_budget)


def build_context(
    passages: Sequence[ShownPassage], sections: dict[int, str], budget: int
) -> dict[int, tuple[str, str]]:
    """Per passage, the surrounding section text; the budget is shared evenly between passages."""
    with_section = [p for p in passages if p.section_id and p.section_id in sections]
    if not with_section:
        return {}
    each = budget // len(with_section)
    out = {}
    for p in with_section:
        before, after = surroundings(sections[p.section_id], p.text, each)
        if before or after:
            out[p.id] = (before, after)
    return out


_PASSAGE_COLUMNS = (
    "p.id, p.text, d.key, d.title, d.kind, d.version, coalesce(p.page_start, 0), coalesce(p.page_end, 0),"
    " p.heading_path, coalesce(p.rule_id, ''), coalesce(p.section_id, 0)"
)
LOOKUP_LIMIT = 12


def passage_from_row(row: Sequence[Any]) -> ShownPassage:
    pid, text, key, title, kind, version, ps, pe, heading, rule, section = row
    return ShownPassage(
        id=int(pid),
        text=str(text),
        doc_key=str(key),
        doc_title=str(title),
        doc_kind=str(kind),
        doc_version=str(version),
        page_start=int(ps),
        page_end=int(pe),
        heading_path=tuple(heading or ()),
        rule_id=str(rule),
        section_id=int(section),
    )


class StoredVectors(NamedTuple):
    """What ingest stored for one passage: its embedding, the model that drew it, and its sentence vectors
    row (model, text sha, spans, vectors; services/answer/sentence_index.py) or None."""

    vector: Any
    model: str
    sentences: tuple[str, str, list[int], bytes] | None = None


def with_vectors(passages: Sequence[ShownPassage], found: dict[int, StoredVectors]) -> list[ShownPassage]:
    """The passages with what was stored for them attached; sentence vectors only when they were drawn from
    this very text."""
    from services.answer.sentence_index import stored

    return [
        dataclasses.replace(
            p,
            vector=found[p.id].vector,
            vector_model=found[p.id].model,
            sentence_vectors=stored(found[p.id].sentences, p.text),
        )
        if p.id in found
        else p
        for p in passages
    ]


class PgLibrary:
    """Sections and numbered rules from Postgres, through an async pool (rulesage.db.async_pool)."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    async def sections(self, section_ids: Sequence[int]) -> dict[int, str]:
        ids = sorted({i for i in section_ids if i})
        if not ids:
            return {}
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT id, text FROM sections WHERE id = ANY(%s)", (ids,))
            return {int(r[0]): r[1] for r in await cur.fetchall()}

    async def vectors(self, passage_ids: Sequence[int]) -> dict[int, StoredVectors]:
        """What ingest stored for each passage; passages without an embedding are absent."""
        ids = sorted({i for i in passage_ids if i})
        if not ids:
            return {}
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT p.id, p.embedding, s.model, v.model, v.text_sha, v.spans, v.vectors, v.passage_vec"
                " FROM passages p"
                " JOIN embedding_space s ON s.id = p.space_id"
                " LEFT JOIN sentence_vectors v ON v.passage_id = p.id"
                " WHERE p.id = ANY(%s) AND p.embedding IS NOT NULL",
                (ids,),
            )
            rows = await cur.fetchall()

        # the passage's vector by the answer's own encoder when its row holds one, else the search's
        return {
            int(r[0]): StoredVectors(
                vector_array(r[7]) if r[7] is not None else vector_array(r[1]),
                r[3] if r[7] is not None else r[2],
                (r[3], r[4], list(r[5]), bytes(r[6])) if r[3] is not None else None,
            )
            for r in rows
        }

    async def lookup_rules(self, doc_keys: Sequence[str], rule_ids: Sequence[str]) -> list[ShownPassage]:
        """Live passages of those documents whose rule (or parent rule) is one asked for; a bare section
        number ('702') matches every rule in it. At most LOOKUP_LIMIT, in book order."""
        if not doc_keys or not rule_ids:
            return []
        exact = [r for r in rule_ids if "." in r]
        sections = [r for r in rule_ids if "." not in r]
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                f"SELECT {_PASSAGE_COLUMNS} FROM current_passages p JOIN documents d ON d.id = p.document_id"
                " WHERE d.key = ANY(%s) AND NOT p.superseded"
                " AND (p.rule_id = ANY(%s) OR p.parent_rule = ANY(%s)"
                "      OR (p.parent_rule IS NULL AND split_part(p.rule_id, '.', 1) = ANY(%s)))"
                " ORDER BY (p.rule_id = ANY(%s)) DESC, d.key, p.ord LIMIT %s",
                (list(doc_keys), exact, exact, sections, exact, LOOKUP_LIMIT),
            )
            return [passage_from_row(r) for r in await cur.fetchall()]
