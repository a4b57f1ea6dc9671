"""Training groups for the reranker: a question, its positive passage and hard negatives.

Sources:
- ``questions``: player-style questions written by helpers from the books (data/reranker/questions-*.jsonl:
  game, doc, page, quote, question). Positive = the live passage of that document that holds the quote
  (rulesage.core.text.supports, page span preferred).
- ``pseudo``: structure pseudo-queries: a passage's nearest heading as the query, that passage as the
  positive (alone they taught a heading matcher, docs/RERANKER-NOTES; they are off unless asked for).

Hard negatives: the stand-in election's top candidates (Postgres full-text + dense cosine over the same
family, RRF) that do not hold the quote. Questions whose quote overlaps a gold question's evidence, or whose
text is a gold question's, are dropped: training pairs never come from the gold questions.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from rulesage.config import shared_dir
from rulesage.core.text import normalise, supports
from services.rerank.train.pool import FamilyIndex

log = logging.getLogger(__name__)
GOLD = shared_dir() / "eval" / "gold-dev.jsonl"


@dataclass(frozen=True)
class Question:
    game: str
    doc: str
    page: int | None
    quote: str
    question: str
    source: str  # 'questions' | 'pseudo'


@dataclass
class Group:
    question: str
    family_id: int
    positive: int  # position in the family index
    negatives: list[int]
    source: str
    split: str  # 'train' | 'val'
    supporters: set[int] = field(default_factory=set)
    pool: list[int] = field(default_factory=list)  # the stand-in election's top candidates, best first


def load_questions(pattern: str) -> list[Question]:
    out = []
    for path in sorted(glob.glob(pattern)):
        for line in Path(path).read_text().splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            if d.get("question") and d.get("quote") and d.get("doc"):
                q = Question(d["game"], d["doc"], d.get("page"), d["quote"], d["question"], "questions")
                out.append(q)
    return out


def gold_guard(path: Path = GOLD) -> tuple[set[str], list[str]]:
    """Normalised gold questions and gold evidence quotes (to keep them out of training)."""
    questions, quotes = set(), []
    if path.exists():
        for line in path.read_text().splitlines():
            d = json.loads(line)
            questions.add(normalise(d["question"]))
            quotes += [normalise(e["quote"]) for e in d.get("evidence", [])]
    return questions, quotes


def touches_gold(q: Question, gold_questions: set[str], gold_quotes: list[str]) -> bool:
    if normalise(q.question) in gold_questions:
        return True
    mine = normalise(q.quote)
    return any(g in mine or mine in g or supports(q.quote, g) or supports(g, q.quote) for g in gold_quotes)


def split_of(q: Question, val_share: float) -> str:
    """Held-out by quote (questions on one quote never straddle the split), stable across runs."""
    h = int(hashlib.sha256(f"{q.doc}|{normalise(q.quote)}".encode()).hexdigest()[:8], 16)
    return "val" if h / 0xFFFFFFFF < val_share else "train"


def family_ids(conn: psycopg.Connection) -> dict[str, int]:
    """Game slug -> family id, plus family slug -> family id (family-level documents' rows)."""
    out = {r[0]: int(r[1]) for r in conn.execute("SELECT slug, id FROM families").fetchall()}
    out.update({r[0]: int(r[1]) for r in conn.execute("SELECT slug, family_id FROM games").fetchall()})
    return out


def positive_of(index: FamilyIndex, q: Question) -> tuple[int | None, set[int]]:
    supporters = {i for i, p in enumerate(index.passages) if p.doc_key == q.doc and supports(p.text, q.quote)}
    if not supporters:
        return None, supporters
    on_page = [
        i
        for i in sorted(supporters)
        if q.page and index.passages[i].page_start <= q.page <= index.passages[i].page_end
    ]
    return (on_page or sorted(supporters))[0], supporters


_HEADING_NOISE = re.compile(r"^[\W\d_]+|[\W_]+$")


def pseudo_queries(index: FamilyIndex, n: int, rng: random.Random) -> list[tuple[str, int]]:
    """(heading, passage) pairs: the first passage under each distinct heading, headings of 2-8 words."""
    seen: dict[tuple[str, str], int] = {}
    for i, p in enumerate(index.passages):
        if not p.heading_path:
            continue
        head = _HEADING_NOISE.sub("", p.heading_path[-1]).strip()
        if 2 <= len(head.split()) <= 8:
            seen.setdefault((p.doc_key, head.lower()), i)
    pairs = [(head, i) for (_, head), i in seen.items()]
    rng.shuffle(pairs)
    return pairs[:n]


def build_groups(
    conn: psycopg.Connection,
    questions: Iterable[Question],
    negatives: int,
    pseudo: int,
    seed: int,
    val_share: float = 0.1,
    pool_depth: int = 40,
) -> tuple[list[Group], Counter[str], dict[int, FamilyIndex]]:
    """Groups of (question, positive, hard negatives). Returns the groups, counts per outcome, the indexes."""
    from rulesage.embed import shared_embedder

    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    fams = family_ids(conn)
    gold_q, gold_quotes = gold_guard()
    indexes: dict[int, FamilyIndex] = {}
    todo: list[tuple[Question, int, int, set[int]]] = []
    for q in questions:
        fam = fams.get(q.game)
        if fam is None:
            counts["no-family-in-db"] += 1
            continue
        if touches_gold(q, gold_q, gold_quotes):
            counts["dropped-gold-overlap"] += 1
            continue
        if fam not in indexes:
            indexes[fam] = FamilyIndex(conn, fam)
        pos, supporters = positive_of(indexes[fam], q)
        if pos is None:
            counts["no-passage-holds-quote"] += 1
            continue
        todo.append((q, fam, pos, supporters))
    if pseudo:
        per_family = max(pseudo // max(len(indexes), 1), 1)
        for fam, index in sorted(indexes.items()):
            for head, i in pseudo_queries(index, per_family, rng):
                q = Question("", index.passages[i].doc_key, None, "", head, "pseudo")
                todo.append((q, fam, i, {i}))
    vecs: Any = shared_embedder().embed_queries([q.question for q, _, _, _ in todo]) if todo else []
    groups = []
    for (q, fam, pos, supporters), vec in zip(todo, vecs, strict=True):
        fused = indexes[fam].fused(conn, q.question, vec, k=pool_depth)
        # Hard negatives: the election's top candidates that do not hold the quote, best first.
        chosen = [i for i in fused if i not in supporters][:negatives]
        if len(chosen) < min(negatives, 4):
            counts["too-few-negatives"] += 1
            continue
        split = split_of(q, val_share) if q.source == "questions" else "train"
        groups.append(Group(q.question, fam, pos, chosen, q.source, split, supporters, fused))
        counts[f"{q.source}-{split}"] += 1
    return groups, counts, indexes
