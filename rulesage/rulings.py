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
  trace_id, public_state ('pending' | 'held' | 'cleared'), public_reason, created_at (ISO 8601),
  retired_at (ISO 8601 or None), retired_reason
The question's embedding (``question_vec``, from fusion's embedder) is stored beside it, never served.

Ratings: readers rate 1-3, one rating per client; the crowd's score is the Bayesian-smoothed mean
(2.0 x 3 + sum) / (3 + n). A judge (an authenticated admin) may rate too: the judge's latest rating is the
ruling's effective score, whatever the crowd says. A ruling whose effective score is under 1.5 with five or
more crowd votes is excluded from "asked before".

Prior rulings ("asked before"): the few (<= 3) nearest earlier rulings of the same game by cosine distance
between question embeddings (at most ``PRIOR_MAX_DISTANCE``), only answered ones cleared for the wall, not
retired, not excluded, with an effective score of at least ``PRIOR_MIN_SCORE``. The road looks them up
before answering (the language-model backends are shown them after the book, as examples that never outrank
it and can never be cited); the ruling page and the API list them, labelled as earlier rulings of this site.
A retired ruling (an admin's action, with its reason) is never offered as a prior; its page says why.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
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
    "r.trace_id, r.public_state, r.public_reason, r.created_at, r.retired_at, r.retired_reason"
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
        "retired_at",
        "retired_reason",
    ]
    out = dict(zip(keys, row, strict=True))
    out["created_at"] = out["created_at"].isoformat()
    out["retired_at"] = out["retired_at"].isoformat() if out["retired_at"] else None
    out["cards"] = (out["wrench"] or {}).get("cards", [])  # stored once, in the wrench
    return out


def vector_literal(values: Sequence[float]) -> str | None:
    """A vector as pgvector's text form ('[0.1,0.2]'), cast with ::vector in SQL; None for an empty one."""
    if not values:
        return None
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


async def save(conn: Any, ruling: dict[str, Any], question_vec: Sequence[float] = ()) -> str:
    """Insert a ruling (async psycopg connection); returns its id. Accepted once this returns.
    ``question_vec`` is the question's embedding (stored NULL when empty: the embedder did not answer)."""
    rid = ruling.get("id") or new_id()
    await conn.execute(
        "INSERT INTO rulings (id, game_id, question, answer, verdict, citations, passages, wrench, models,"
        " trace_id, question_vec)"
        " SELECT %s, g.id, %s, %s, %s, %s, %s, %s, %s, %s, %s::vector FROM games g WHERE g.slug = %s",
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
            vector_literal(question_vec),
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
    " coalesce(s.n, 0), coalesce(s.total, 0), js.score"
)
# The crowd's count and sum (judge rows excluded) and the judge's latest score, per ruling r.
_RATING_JOIN = (
    " LEFT JOIN (SELECT ruling_id, count(*) AS n, sum(score) AS total FROM ratings WHERE NOT judge"
    " GROUP BY ruling_id) s ON s.ruling_id = r.id"
    " LEFT JOIN LATERAL (SELECT j.score FROM ratings j WHERE j.ruling_id = r.id AND j.judge"
    " ORDER BY j.created_at DESC, j.id DESC LIMIT 1) js ON true"
)


def _summary(row: tuple[Any, ...]) -> dict[str, Any]:
    keys = ["id", "game", "game_name", "question", "answer", "verdict", "public_state", "public_reason"]
    out = dict(zip(keys, row[:8], strict=True))
    out["created_at"] = row[8].isoformat()
    out["rating"] = rating_summary(int(row[10]), int(row[9]), None if row[11] is None else int(row[11]))
    return out


async def wall(
    conn: Any, *, limit: int = 20, offset: int = 0, game: str | None = None
) -> list[dict[str, Any]]:
    """Cleared rulings only, newest first (a held, pending or retired ruling never appears here)."""
    cur = await conn.execute(
        f"SELECT {_SUMMARY} FROM rulings r JOIN games g ON g.id = r.game_id{_RATING_JOIN}"
        " WHERE r.public_state = 'cleared' AND r.retired_at IS NULL AND (%s::text IS NULL OR g.slug = %s)"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT %s OFFSET %s",
        (game, game, limit, offset),
    )
    return [_summary(row) for row in await cur.fetchall()]


async def wall_count(conn: Any, *, game: str | None = None) -> int:
    cur = await conn.execute(
        "SELECT count(*) FROM rulings r JOIN games g ON g.id = r.game_id"
        " WHERE r.public_state = 'cleared' AND r.retired_at IS NULL AND (%s::text IS NULL OR g.slug = %s)",
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
EXCLUDE_BELOW = 1.5  # an effective score under this ...
EXCLUDE_MIN_VOTES = 5  # ... with at least this many crowd votes keeps a ruling out of "asked before"
JUDGE_CLIENT = "judge"  # the rater of a judge's ratings (one admin token: one judge)


def bayesian_mean(total: float, n: int) -> float:
    """(2.0 x 3 + sum) / (3 + n): a ruling with few ratings stays near the middle of the scale."""
    return (RATING_PRIOR_MEAN * RATING_PRIOR_WEIGHT + total) / (RATING_PRIOR_WEIGHT + n)


def effective_score(total: float, n: int, judge_score: int | None = None) -> float:
    """The judge's latest score when a judge rated, else the crowd's Bayesian mean."""
    return float(judge_score) if judge_score is not None else bayesian_mean(total, n)


def is_excluded(effective: float, n: int) -> bool:
    """Whether a ruling is kept out of "asked before" by its rating: a low score that enough votes back."""
    return n >= EXCLUDE_MIN_VOTES and effective < EXCLUDE_BELOW


def rating_summary(total: int, n: int, judge_score: int | None = None) -> dict[str, Any]:
    """``mean``, ``count`` and ``sum`` are the crowd's (judge ratings are not crowd votes); ``effective`` is
    what counts (the judge's latest score when there is one); ``excluded`` applies the exclusion rule."""
    effective = effective_score(total, n, judge_score)
    return {
        "mean": round(bayesian_mean(total, n), 3),
        "count": n,
        "sum": total,
        "effective": round(effective, 3),
        "judged": judge_score is not None,
        "judge_score": judge_score,
        "excluded": is_excluded(effective, n),
    }


async def rate(conn: Any, rid: str, score: int, client: str, *, judge: bool = False) -> dict[str, Any] | None:
    """Record a 1-3 rating. A reader's later rating replaces its earlier one; a judge's rating is added (the
    latest judge rating is the effective score, the earlier ones stay as the record).
    Returns the ruling's new rating summary, or None when no such ruling exists."""
    if score not in (1, 2, 3):
        raise ValueError("a rating is 1, 2 or 3")
    async with conn.transaction():
        cur = await conn.execute("SELECT 1 FROM rulings WHERE id = %s FOR UPDATE", (rid,))
        if await cur.fetchone() is None:
            return None
        if not judge:
            await conn.execute(
                "DELETE FROM ratings WHERE ruling_id = %s AND client = %s AND NOT judge", (rid, client)
            )
        await conn.execute(
            "INSERT INTO ratings (ruling_id, score, client, judge) VALUES (%s, %s, %s, %s)",
            (rid, score, client, judge),
        )
    return await rating(conn, rid)


async def rating(conn: Any, rid: str) -> dict[str, Any]:
    cur = await conn.execute(
        "SELECT count(*) FILTER (WHERE NOT judge), coalesce(sum(score) FILTER (WHERE NOT judge), 0),"
        " (SELECT j.score FROM ratings j WHERE j.ruling_id = %s AND j.judge"
        "  ORDER BY j.created_at DESC, j.id DESC LIMIT 1)"
        " FROM ratings WHERE ruling_id = %s",
        (rid, rid),
    )
    row = await cur.fetchone()
    return rating_summary(int(row[1]), int(row[0]), None if row[2] is None else int(row[2]))


# Retiring ----------------------------------------------------------------------------------------------


async def retire(conn: Any, rid: str, reason: str) -> bool:
    """Retire a ruling (an admin's action): never offered as "asked before" again, off the wall, still
    readable at its permalink with ``reason``. Retiring again keeps the first date and sets the new reason.
    Returns False when no such ruling exists."""
    reason = " ".join(reason.split())
    if not reason:
        raise ValueError("a retirement needs a reason")
    if not valid_id(rid):
        return False
    cur = await conn.execute(
        "UPDATE rulings SET retired_at = coalesce(retired_at, now()), retired_reason = %s WHERE id = %s",
        (reason, rid),
    )
    return bool(cur.rowcount)


# Prior rulings ("asked before") ------------------------------------------------------------------------

PRIOR_LIMIT = 3
PRIOR_MIN_SCORE = 2.0  # the middle of the scale: an unrated ruling (mean 2.0) qualifies, a doubted one not
# Cosine distance (1 - cosine similarity) between all-MiniLM-L6-v2 question embeddings. Measured on rules
# questions: paraphrases of one question sit at 0.13-0.35 ("is a natural 20 always a hit?" / "does rolling a
# 20 on an attack always hit?" 0.35), the same call in player words and book words at 0.44 (settlements next
# to each other / the distance rule), neighbouring but different calls at 0.49-0.56 (trample / deathtouch
# with trample; a hit checker / bearing off with one on the bar), unrelated questions of one game above 0.75.
# 0.45 keeps the first two groups and drops the rest: a prior is about the same thing or it is not shown.
PRIOR_MAX_DISTANCE = 0.45

_EFFECTIVE = (
    "CASE WHEN js.score IS NOT NULL THEN js.score::float8 ELSE"
    f" ({RATING_PRIOR_MEAN!r} * {RATING_PRIOR_WEIGHT} + coalesce(s.total, 0))"
    f" / ({RATING_PRIOR_WEIGHT} + coalesce(s.n, 0))::float8 END"
)

# The candidates are filtered before any distance is computed (MATERIALIZED): only rows of the same game,
# embedding model and dimension reach the <=> operator, which refuses vectors of different dimensions.
_PRIORS = f"""
WITH candidates AS MATERIALIZED (
    SELECT r.id, r.question, r.answer, r.created_at, r.question_vec,
           coalesce(s.n, 0) AS n, coalesce(s.total, 0) AS total, js.score AS judge_score,
           {_EFFECTIVE} AS effective
    FROM rulings r JOIN games g ON g.id = r.game_id{_RATING_JOIN}
    WHERE g.slug = %(game)s AND r.question_vec IS NOT NULL AND r.retired_at IS NULL
      AND r.verdict = 'answered' AND r.public_state = 'cleared'
      AND r.models->>'embed' = %(model)s AND vector_dims(r.question_vec) = %(dims)s
      AND (%(exclude)s::text IS NULL OR r.id <> %(exclude)s)
      AND (%(before)s::timestamptz IS NULL OR r.created_at < %(before)s)
)
SELECT id, question, answer, created_at, n, total, judge_score, distance FROM (
    SELECT c.*, c.question_vec <=> %(vec)s::vector AS distance FROM candidates c
    WHERE c.effective >= %(min_score)s AND NOT (c.n >= %(min_votes)s AND c.effective < %(below)s)
) near
WHERE distance <= %(max_distance)s
ORDER BY distance, created_at DESC, id
LIMIT %(limit)s
"""


async def priors(
    conn: Any,
    game: str,
    question_vec: Sequence[float],
    model: str,
    *,
    exclude: str | None = None,
    before: Any = None,
    limit: int = PRIOR_LIMIT,
    max_distance: float = PRIOR_MAX_DISTANCE,
) -> list[dict[str, Any]]:
    """The nearest well-rated earlier rulings of ``game`` to a question embedding (see the module doc),
    nearest first; [] without a vector or an embedding model. ``exclude``: a ruling never listed (the ruling
    itself); ``before``: only rulings created before this time."""
    literal = vector_literal(question_vec)
    if literal is None or not model:
        return []
    cur = await conn.execute(
        _PRIORS,
        {
            "game": game,
            "model": model,
            "dims": len(question_vec),
            "exclude": exclude,
            "before": before,
            "vec": literal,
            "min_score": PRIOR_MIN_SCORE,
            "min_votes": EXCLUDE_MIN_VOTES,
            "below": EXCLUDE_BELOW,
            "max_distance": max_distance,
            "limit": limit,
        },
    )
    return [
        {
            "id": str(row[0]),
            "question": str(row[1]),
            "answer": str(row[2]),
            "created_at": row[3].isoformat(),
            "rating": rating_summary(int(row[5]), int(row[4]), None if row[6] is None else int(row[6])),
            "distance": round(float(row[7]), 4),
            "url": f"/rulings/{row[0]}",
            "kind": "earlier_ruling",
        }
        for row in await cur.fetchall()
    ]


async def asked_before(conn: Any, rid: str) -> list[dict[str, Any]]:
    """A stored ruling's "asked before" list, read now: the priors of its own question among the rulings
    made before it (a ruling retired or marked down since is no longer listed). [] when its question has no
    stored embedding."""
    cur = await conn.execute(
        "SELECT g.slug, r.question_vec::text, r.models->>'embed', r.created_at FROM rulings r"
        " JOIN games g ON g.id = r.game_id WHERE r.id = %s AND r.question_vec IS NOT NULL",
        (rid,),
    )
    row = await cur.fetchone()
    if row is None:
        return []
    vec = [float(v) for v in str(row[1]).strip("[]").split(",") if v]
    return await priors(conn, str(row[0]), vec, str(row[2] or ""), exclude=rid, before=row[3])
