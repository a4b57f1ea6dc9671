"""Window states drawn at index time: the careful reader's encoder output for each passage's window.

The shipped reranker's encoder is frozen and reads every window on its own (row 0 of its batch is the
question, each other row one window; rows never attend to each other). So what it computes for a window
depends on the window alone and can be drawn once, at ingest, like the passage's embedding. A rerank then
encodes only the question and runs the small head over the stored states: a forward pass over 80 windows
(~0.8-1.7 s on 2 cores) becomes a read of 80 rows plus ~70 ms of head.

Storage: per window, its token states (``tokens x 384``) as int8 with one float32 scale per token (absmax,
``services.rerank.codec``),
about 99 KB for a full 256-token window; rows are keyed by passage and stamped with the reranker's encoder
half (a retrained head over the same frozen encoder reads the same states) and the sha256 of the passage
text, so a new encoder or a changed text is a miss, never a wrong state. A miss is encoded on the spot (the
old cost) and written back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rulesage.indexing import text_sha
from services.rerank.codec import pack, unpack

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stored:
    """A state row as read back: usable only when ``model`` and ``text_sha`` match what is asked."""

    model: str
    text_sha: str
    states: bytes


FETCH_SQL = "SELECT passage_id, model, text_sha, states FROM window_states WHERE passage_id = ANY(%s)"
# Only for a passage that exists and still holds the text the states were drawn from.
SAVE_SQL = """
INSERT INTO window_states (passage_id, model, text_sha, states)
SELECT v.passage_id, v.model, v.text_sha, v.states
FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::bytea[]) AS v(passage_id, model, text_sha, states)
JOIN passages p ON p.id = v.passage_id AND encode(sha256(convert_to(p.text, 'UTF8')), 'hex') = v.text_sha
ON CONFLICT (passage_id) DO UPDATE
SET model = EXCLUDED.model, text_sha = EXCLUDED.text_sha, states = EXCLUDED.states
"""
# Live passages whose state row is missing or was drawn by another model (FK: only passages that still exist).
MISSING_SQL = """
SELECT p.id, p.text FROM ruled_passages p
LEFT JOIN window_states w ON w.passage_id = p.id
WHERE w.passage_id IS NULL OR w.model <> %s
ORDER BY p.id
"""


def usable(row: Stored | None, model: str, text: str) -> np.ndarray | None:
    if row is None or row.model != model or row.text_sha != text_sha(text):
        return None
    return unpack(row.states)


def _stored(rows: list[Any]) -> dict[int, Stored]:
    return {int(r[0]): Stored(r[1], r[2], bytes(r[3])) for r in rows}


async def fetch(conn: Any, ids: Sequence[int]) -> dict[int, Stored]:
    cur = await conn.execute(FETCH_SQL, (list(ids),))
    return _stored(await cur.fetchall())


def fetch_sync(conn: Any, ids: Sequence[int]) -> dict[int, Stored]:
    """``fetch`` over a blocking connection (the training tools read the states the service reads)."""
    return _stored(conn.execute(FETCH_SQL, (list(ids),)).fetchall())


def usable_sync(conn: Any, model: str, items: Sequence[tuple[int, str]]) -> list[np.ndarray | None]:
    """Each (passage id, text)'s stored states where ``model`` drew them from that very text, else None: the
    blocking read the training tools share, so they score windows on the states the service reads."""
    stored = fetch_sync(conn, [pid for pid, _ in items])
    return [usable(stored.get(pid), model, text) for pid, text in items]


def rows(model: str, items: Iterable[tuple[int, str, np.ndarray]]) -> tuple[list[Any], ...]:
    ids, models, shas, blobs = [], [], [], []
    for pid, text, states in items:
        ids.append(pid)
        models.append(model)
        shas.append(text_sha(text))
        blobs.append(pack(states))
    return ids, models, shas, blobs


async def save(conn: Any, model: str, items: Sequence[tuple[int, str, np.ndarray]]) -> None:
    if items:
        await conn.execute(SAVE_SQL, rows(model, items))


COUNT_MISSING_SQL = f"SELECT count(*) FROM ({MISSING_SQL}) AS m"


def draw_missing(url: str, progress: bool = False) -> int:
    """After an ingest: draw the states the configured reranker lacks (RULESAGE_RERANK_* settings). Loads the
    model only when some are missing; nothing to do for the interim scorer or the cross reader, with stored
    states off, or when
    states are drawn on first read instead (``RULESAGE_RERANK_STATES_AT_INGEST=false``)."""
    import psycopg

    from rulesage.config import load
    from rulesage.pairs import is_pair_reader
    from services.rerank.choice import chosen_model, load_scorer
    from services.rerank.scorer import RuntimeOptions, TrainedScorer, states_key, window_tokens
    from services.rerank.settings import RerankSettings

    s = load(RerankSettings)
    if not (s.rulesage_rerank_stored_states and s.rulesage_rerank_states_at_ingest):
        return 0
    path = chosen_model(s.rulesage_rerank_model)
    if path is None or is_pair_reader(path):  # the cosine and the cross reader read no stored states
        return 0
    opts = RuntimeOptions(
        device=s.rulesage_rerank_device,
        threads=s.rulesage_rerank_threads,
        max_tokens=s.rulesage_rerank_max_tokens,
        batch=s.rulesage_rerank_batch,
        question_tokens=s.rulesage_rerank_question_tokens,
        bulk=True,
    )
    key = states_key(path, window_tokens(path, opts))
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(COUNT_MISSING_SQL, (key,)).fetchone()  # type: ignore[arg-type]
    if not row or not row[0]:
        return 0
    scorer = load_scorer(opts, str(path))
    assert isinstance(scorer, TrainedScorer)
    return backfill(url, scorer.window_states, key, progress=progress)


def backfill(
    url: str,
    encode: Callable[[list[str]], list[np.ndarray]],
    model: str,
    batch: int = 128,
    progress: bool = False,
) -> int:
    """Draw the states of every ruled passage that lacks current ones (after an ingest); returns how many."""
    import psycopg

    from rulesage.indexing import in_batches

    def write(conn: Any, chunk: Sequence[Any]) -> None:
        states = encode([t for _, t in chunk])
        items = ((int(pid), text, s) for (pid, text), s in zip(chunk, states, strict=True))
        conn.execute(SAVE_SQL, rows(model, items))  # type: ignore[arg-type]

    with psycopg.connect(url, autocommit=True) as conn:
        todo = conn.execute(MISSING_SQL, (model,)).fetchall()
        if not todo:
            return 0
        in_batches(conn, todo, write, batch, "reranker window states", progress)
    log.info("drew reranker window states for %d passages", len(todo))
    return len(todo)
