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
# A reviewer's action on a ruling: the public state it sets and the reason shown when none is given.
REVIEW_ACTIONS = {"clear": ("cleared", "cleared by a reviewer"), "hold": ("held", "held by a reviewer")}


def valid_id(rid: str) -> bool:
    """Only ids this module could have made reach the database (a NUL or a path never does)."""
    return 0 < len(rid) <= 32 and all(ch in _ALPHABET for ch in rid)


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
    if not valid_id(rid):
        return None
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


# The public wall and the review queue -------------------------------------------------------------------

PUBLIC_STATES = ("pending", "held", "cleared")

_SUMMARY = (
    "r.id, g.slug, g.name, r.question, r.answer, r.verdict, r.public_state, r.public_reason, r.created_at,"
    " coalesce(s.n, 0), coalesce(s.total, 0)"
)
_RATING_JOIN = (
    " LEFT JOIN (SELECT ruling_id, count(*) AS n, sum(score) AS total FROM ratings GROUP BY ruling_id) s"
    " ON s.ruling_id = r.id"
)


def _summary(row: tuple[Any, ...]) -> dict[str, Any]:
    keys = ["id", "game", "game_name", "question", "answer", "verdict", "public_state", "public_reason"]
    out = dict(zip(keys, row[:8], strict=True))
    out["created_at"] = row[8].isoformat()
    out["rating"] = rating_summary(int(row[10]), int(row[9]))
    return out


async def wall(
    conn: Any, *, limit: int = 20, offset: int = 0, game: str | None = None
) -> list[dict[str, Any]]:
    """Cleared rulings only, newest first (a held or pending ruling never appears here)."""
    cur = await conn.execute(
        f"SELECT {_SUMMARY} FROM rulings r JOIN games g ON g.id = r.game_id{_RATING_JOIN}"
        " WHERE r.public_state = 'cleared' AND (%s::text IS NULL OR g.slug = %s)"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT %s OFFSET %s",
        (game, game, limit, offset),
    )
    return [_summary(row) for row in await cur.fetchall()]


async def wall_count(conn: Any, *, game: str | None = None) -> int:
    cur = await conn.execute(
        "SELECT count(*) FROM rulings r JOIN games g ON g.id = r.game_id"
        " WHERE r.public_state = 'cleared' AND (%s::text IS NULL OR g.slug = %s)",
        (game, game),
    )
    row = await cur.fetchone()
    return int(row[0])


async def queue(conn: Any, *, limit: int = 100) -> list[dict[str, Any]]:
    """Rulings waiting for a person: held first (the doorman's reason shown), then pending; oldest first."""
    cur = await conn.execute(
        f"SELECT {_SUMMARY} FROM rulings r JOIN games g ON g.id = r.game_id{_RATING_JOIN}"
        " WHERE r.public_state IN ('pending', 'held')"
        " ORDER BY (r.public_state = 'held') DESC, r.created_at, r.id LIMIT %s",
        (limit,),
    )
    return [_summary(row) for row in await cur.fetchall()]


async def review(conn: Any, rid: str, state: str, reason: str) -> bool:
    """A reviewer's decision ('cleared' or 'held'); returns False when no such ruling exists."""
    if state not in ("cleared", "held"):
        raise ValueError(f"a reviewer can only clear or hold, not {state!r}")
    cur = await conn.execute(
        "UPDATE rulings SET public_state = %s, public_reason = %s, reviewed_at = now() WHERE id = %s",
        (state, reason, rid),
    )
    return bool(cur.rowcount)


async def record_screening(
    conn: Any, rid: str, cleared: bool, reason: str, doorman: dict[str, Any] | None = None
) -> bool:
    """The doorman's decision, applied only while the ruling is still pending (a reviewer's word stands).
    ``doorman`` (who held the role, the checks it ran, its time) goes into the wrench as wrench.doorman."""
    cur = await conn.execute(
        "UPDATE rulings SET public_state = %s, public_reason = %s,"
        " wrench = coalesce(wrench, '{}'::jsonb) || jsonb_build_object('doorman', %s::jsonb)"
        " WHERE id = %s AND public_state = 'pending'",
        ("cleared" if cleared else "held", reason, Jsonb(doorman or {}), rid),
    )
    return bool(cur.rowcount)


async def latest_doorman(conn: Any) -> str:
    """Who the doorman said it was when it last screened a question ("" before any screening)."""
    cur = await conn.execute(
        "SELECT wrench->'doorman'->>'holder' FROM rulings WHERE wrench->'doorman'->>'holder' IS NOT NULL"
        " AND wrench->'doorman'->>'holder' <> 'unreachable' ORDER BY created_at DESC, id LIMIT 1"
    )
    row = await cur.fetchone()
    return str(row[0]) if row else ""


async def pending(conn: Any, *, older_than_s: float = 0.0, limit: int = 50) -> list[tuple[str, str]]:
    """(id, question) of rulings no doorman decision has reached yet, oldest first."""
    cur = await conn.execute(
        "SELECT id, question FROM rulings WHERE public_state = 'pending'"
        " AND created_at <= now() - make_interval(secs => %s) ORDER BY created_at, id LIMIT %s",
        (older_than_s, limit),
    )
    return [(str(r[0]), str(r[1])) for r in await cur.fetchall()]


# Ratings -----------------------------------------------------------------------------------------------

RATING_PRIOR_MEAN = 2.0  # the middle of the 1-3 scale
RATING_PRIOR_WEIGHT = 3  # as if three readers had already given the prior mean


def bayesian_mean(total: float, n: int) -> float:
    """(2.0 x 3 + sum) / (3 + n): a ruling with few ratings stays near the middle of the scale."""
    return (RATING_PRIOR_MEAN * RATING_PRIOR_WEIGHT + total) / (RATING_PRIOR_WEIGHT + n)


def rating_summary(total: int, n: int) -> dict[str, Any]:
    return {"mean": round(bayesian_mean(total, n), 3), "count": n, "sum": total}


async def rate(conn: Any, rid: str, score: int, client: str) -> dict[str, Any] | None:
    """Record one client's 1-3 rating (a later rating from the same client replaces its earlier one).
    Returns the ruling's new rating summary, or None when no such ruling exists."""
    if score not in (1, 2, 3):
        raise ValueError("a rating is 1, 2 or 3")
    async with conn.transaction():
        cur = await conn.execute("SELECT 1 FROM rulings WHERE id = %s FOR UPDATE", (rid,))
        if await cur.fetchone() is None:
            return None
        await conn.execute("DELETE FROM ratings WHERE ruling_id = %s AND client = %s", (rid, client))
        await conn.execute(
            "INSERT INTO ratings (ruling_id, score, client) VALUES (%s, %s, %s)", (rid, score, client)
        )
    return await rating(conn, rid)


async def rating(conn: Any, rid: str) -> dict[str, Any]:
    cur = await conn.execute(
        "SELECT count(*), coalesce(sum(score), 0) FROM ratings WHERE ruling_id = %s", (rid,)
    )
    row = await cur.fetchone()
    return rating_summary(int(row[1]), int(row[0]))
