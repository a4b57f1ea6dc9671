"""Recall@8 and MRR@10 of the reranked order against the stand-in election's order.

For each question: the stand-in fused pool (top ``depth``), the fused top 8 as the baseline, and for each
scorer the kept set after the guarantees (what the service returns). Per-question hits are kept, so two
scorers can be compared by the questions they flip, not only by one figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

from rulesage.eval.gold import Evidence, load_gold, needs_all, supports_evidence
from services.rerank.guarantees import Candidate, ranked, select
from training.pool import FamilyIndex


@dataclass(frozen=True)
class Item:
    id: str
    question: str
    game: str
    family_id: int
    evidence: tuple[Evidence, ...]
    all_needed: bool = False


def gold_items(path: Path, families: dict[str, int]) -> list[Item]:
    out = []
    for d in load_gold(path):
        if not d.get("answerable") or d["game"] not in families:
            continue
        ev = tuple(Evidence.of(e) for e in d["evidence"])
        out.append(Item(d["id"], d["question"], d["game"], families[d["game"]], ev, needs_all(d)))
    return out


def hit(passages: Sequence[int], index: FamilyIndex, item: Item) -> bool:
    found = [any(supports_evidence(index.passages[i], ev) for i in passages) for ev in item.evidence]
    return all(found) if item.all_needed else any(found)


def first_hit_rank(order: Sequence[int], index: FamilyIndex, item: Item, k: int = 10) -> int:
    for r, i in enumerate(order[:k], start=1):
        if any(supports_evidence(index.passages[i], ev) for ev in item.evidence):
            return r
    return 0


def served_hit(
    pool: Sequence[int], supporters: set[int], scores: np.ndarray, prior: float
) -> tuple[bool, float]:
    """A pool (passage ids, fused order) ordered by its served score (``scores`` less ``prior · ln(1 +
    position)``): whether its first 8 hold a supporter, and the reciprocal rank of the first in its 10."""
    from services.rerank.scorer import with_prior

    order = [pool[i] for i in np.argsort(-with_prior(scores, prior), kind="stable")]
    first = next((1.0 / r for r, i in enumerate(order[:10], 1) if i in supporters), 0.0)
    return any(i in supporters for i in order[:8]), first


Variants = Callable[[str, list[str], list[int]], dict[str, list[float]]]


def prior_variants(name: str, scores: Sequence[float], betas: Sequence[float] = (1.0, 2.0, 4.0)) -> dict:
    """Blends of a score with the election's order (position p, 0-based, best first): score - beta*ln(1+p),
    and the parameter-free RRF of the two orders."""
    pos = np.arange(len(scores), dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    out = {f"{name}+prior{b:g}": list(s - b * np.log1p(pos)) for b in betas}
    model_rank = np.empty(len(s))
    model_rank[np.asarray(ranked(list(s)), dtype=int)] = np.arange(len(s)) if len(s) else []
    out[f"rrf({name},fused)"] = list(1.0 / (61 + model_rank) + 1.0 / (61 + pos))
    return out


def measure(
    conn: psycopg.Connection,
    items: Sequence[Item],
    indexes: dict[int, FamilyIndex],
    variants: Variants,
    depth: int = 80,
    keep: int = 8,
) -> dict[str, dict]:
    """{'fused': {...}, variant: {...}} with recall@keep, MRR@10, and per-question hits; 'pool' holds
    recall@depth. ``variants(question, texts, pool)`` returns named score lists for the pool."""
    from training.questions import space_embedder

    vecs = space_embedder(conn).embed_queries([it.question for it in items])
    hits: dict[str, dict[str, bool]] = {"fused": {}}
    ranks: dict[str, list[int]] = {"fused": []}
    pool_hits = 0
    for item, vec in zip(items, vecs, strict=True):
        index = indexes.get(item.family_id) or indexes.setdefault(
            item.family_id, FamilyIndex(conn, item.family_id)
        )
        try:
            pool = index.fused(conn, item.question, vec, k=depth)
        except psycopg.OperationalError:  # the server restarted under us: reconnect once
            from rulesage import db

            conn = db.connect(autocommit=True)
            pool = index.fused(conn, item.question, vec, k=depth)
        pool_hits += hit(pool, index, item)
        hits["fused"][item.id] = hit(pool[:keep], index, item)
        ranks["fused"].append(first_hit_rank(pool, index, item))
        cands = [Candidate(index.passages[i].doc_kind, index.passages[i].game) for i in pool]
        texts = [index.passages[i].text for i in pool]
        for name, scores in (variants(item.question, texts, pool) if texts else {}).items():
            sel = select(cands, scores, item.game, keep)
            hits.setdefault(name, {})[item.id] = hit([pool[i] for i in sel.kept], index, item)
            ranks.setdefault(name, []).append(first_hit_rank([pool[i] for i in ranked(scores)], index, item))
    return summarise(hits, ranks, len(items), pool_hits, depth)


def summarise(hits: dict, ranks: dict, n: int, pool_hits: int, depth: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for name in hits:
        r = np.array(ranks[name], dtype=float)
        out[name] = {
            "recall@8": round(sum(hits[name].values()) / max(n, 1), 4),
            "mrr@10": round(float(np.where(r > 0, 1.0 / np.maximum(r, 1), 0.0).mean()) if len(r) else 0.0, 4),
            "hits": hits[name],
        }
    out["pool"] = {f"recall@{depth}": round(pool_hits / max(n, 1), 4), "questions": n}
    return out


def flips(a: dict[str, bool], b: dict[str, bool]) -> tuple[int, int]:
    """(questions b finds that a misses, questions a finds that b misses)."""
    return sum(b[k] and not a[k] for k in a), sum(a[k] and not b[k] for k in a)
