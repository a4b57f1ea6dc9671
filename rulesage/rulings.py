"""Rulings in the database: stored once by the ask road, read by the gateway and the CLI.

A ruling is a plain dict (JSON-ready) with keys:
  id, game, game_name, question, answer, verdict ('answered' | 'not_in_book' | 'unavailable'),
  citations: [{passage_id, quote, start, end, page, doc_key, doc_title, doc_version, rule_id}],
  passages:  [{id, text, doc_key, doc_title, doc_kind, doc_version, page_start, page_end, heading_path,
               rule_id, fused_score, ranks: {list: rank}, rerank_score}]   (the kept 8, dealt order)
  wrench:    {arms: [{arm, state, detail, hits, ms}], voted: [..], k, ceiling, ceiling_formula,
              guarantees_fired: [..], rerank: {state, detail, model}, answer: {state, detail, attempts,
              rejections}, aliases: [..], candidates: [{id, fused_score, ranks, rerank_score}],
              timings: [{stage, ms}], search_span_ms, answer_ms, total_ms, trace_id}
  models:    {embed, rerank, answer}
  trace_id, public_state ('pending' | 'held' | 'cleared'), public_reason, created_at (ISO 8601)
"""

from __future__ import annotations

import secrets
from typing import Any

from psycopg.types.json import Jsonb

_ALPHABET = "23456789abcdefghjkmnpqrstuvwxyz"


def new_id() -> str:
    """A short, unguessable permalink id (10 characters, ~49 bits)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(10))


_COLUMNS = (
    "r.id, g.slug, g.name, r.question, r.answer, r.verdict, r.citations, r.passages, r.wrench, r.models, "
    "r.trace_id, r.public_state, r.public_reason, r.created_at"
)


def _row(row: tuple[Any, ...]) -> dict[str, Any]:
    keys = [
        "id",
        "game",
        "game_name",
        "question",
        "answer",
        "verdict",
        "citations",
        "passages",
        "wrench",
        "models",
        "trace_id",
        "public_state",
        "public_reason",
        "created_at",
    ]
    out = dict(zip(keys, row, strict=True))
    out["created_at"] = out["created_at"].isoformat()
    return out


async def save(conn: Any, ruling: dict[str, Any]) -> str:
    """Insert a ruling (async psycopg connection); returns its id. Accepted once this returns."""
    rid = ruling.get("id") or new_id()
    await conn.execute(
        "INSERT INTO rulings (id, game_id, question, answer, verdict, citations, passages, wrench, models,"
        " trace_id) SELECT %s, g.id, %s, %s, %s, %s, %s, %s, %s, %s FROM games g WHERE g.slug = %s",
        (
            rid,
            ruling["question"],
            ruling["answer"],
            ruling["verdict"],
            Jsonb(ruling.get("citations", [])),
            Jsonb(ruling.get("passages", [])),
            Jsonb(ruling.get("wrench", {})),
            Jsonb(ruling.get("models", {})),
            ruling.get("trace_id", ""),
            ruling["game"],
        ),
    )
    return rid


async def get(conn: Any, rid: str) -> dict[str, Any] | None:
    cur = await conn.execute(
        f"SELECT {_COLUMNS} FROM rulings r JOIN games g ON g.id = r.game_id WHERE r.id = %s", (rid,)
    )
    row = await cur.fetchone()
    return _row(row) if row else None


async def set_public_state(conn: Any, rid: str, state: str, reason: str) -> None:
    await conn.execute(
        "UPDATE rulings SET public_state = %s, public_reason = %s, reviewed_at = now() WHERE id = %s",
        (state, reason, rid),
    )
