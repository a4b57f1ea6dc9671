"""Recall@8 and MRR@10 of the reranked order against the stand-in election's order.

For each question: the stand-in fused pool (top ``depth``), the fused top 8 as the baseline, and for each
scorer the kept set after the guarantees (what the service returns). Per-question hits are kept, so two
scorers can be compared by the questions they flip, not only by one figure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

from services.rerank.guarantees import Candidate, ranked, select
from services.rerank.scorer import Scorer
from services.rerank.train.pool import Evidence, FamilyIndex, matches


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
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if not d.get("answerable") or d["game"] not in families:
            continue
        ev = tuple(Evidence(e["doc"], e.get("page"), e["quote"]) for e in d["evidence"])
        all_needed = bool(d.get("all")) or any(e.get("all") for e in d["evidence"])
        out.append(Item(d["id"], d["question"], d["game"], families[d["game"]], ev, all_needed))
    return out


def hit(passages: Sequence[int], index: FamilyIndex, item: Item) -> bool:
    found = [any(matches(index.passages[i], ev) for i in passages) for ev in item.evidence]
    return all(found) if item.all_needed else any(found)


def first_hit_rank(order: Sequence[int], index: FamilyIndex, item: Item, k: int = 10) -> int:
    for r, i in enumerate(order[:k], start=1):
        if any(matches(index.passages[i], ev) for ev in item.evidence):
            return r
    return 0


def measure(
    conn: psycopg.Connection,
    items: Sequence[Item],
    indexes: dict[int, FamilyIndex],
    scorers: dict[str, Scorer],
    depth: int = 80,
    keep: int = 8,
) -> dict[str, dict]:
    """{'fused': {...}, name: {...}} with recall@keep, MRR@10, recall@depth and per-question hits."""
    from rulesage.embed import shared_embedder

    vecs = shared_embedder().embed_queries([it.question for it in items])
    hits: dict[str, dict[str, bool]] = {"fused": {}, **{n: {} for n in scorers}}
    ranks: dict[str, list[int]] = {"fused": [], **{n: [] for n in scorers}}
    pool_hits = 0
    for item, vec in zip(items, vecs, strict=True):
        index = indexes.get(item.family_id) or indexes.setdefault(
            item.family_id, FamilyIndex(conn, item.family_id)
        )
        pool = index.fused(conn, item.question, vec, k=depth)
        pool_hits += hit(pool, index, item)
        hits["fused"][item.id] = hit(pool[:keep], index, item)
        ranks["fused"].append(first_hit_rank(pool, index, item))
        cands = [Candidate(index.passages[i].doc_kind, index.passages[i].game) for i in pool]
        texts = [index.passages[i].text for i in pool]
        for name, scorer in scorers.items():
            scores = [float(s) for s in scorer.score(item.question, texts)] if texts else []
            sel = select(cands, scores, item.game, keep)
            hits[name][item.id] = hit([pool[i] for i in sel.kept], index, item)
            ranks[name].append(first_hit_rank([pool[i] for i in ranked(scores)], index, item))
    out: dict[str, dict] = {}
    n = max(len(items), 1)
    for name in hits:
        r = np.array(ranks[name], dtype=float)
        out[name] = {
            f"recall@{keep}": round(sum(hits[name].values()) / n, 4),
            "mrr@10": round(float(np.where(r > 0, 1.0 / np.maximum(r, 1), 0.0).mean()) if len(r) else 0.0, 4),
            "hits": hits[name],
        }
    out["pool"] = {f"recall@{depth}": round(pool_hits / n, 4), "questions": len(items)}
    return out


def flips(a: dict[str, bool], b: dict[str, bool]) -> tuple[int, int]:
    """(questions b finds that a misses, questions a finds that b misses)."""
    return sum(b[k] and not a[k] for k in a), sum(a[k] and not b[k] for k in a)
