"""Distillation rows for the cross reader: each trained-split question's served candidates, labelled by what
the shipped head scores them (its served reading, before the fused prior) plus a bonus on the passages that
hold the row's quote.

The cross reader's own rows (``data.build``) teach one answering window against five hard negatives; these
teach the head's whole order over the candidates the road actually serves (``rulesage train reranker-pools``'
file, its first ``depth``), so a listwise loss (sentence-transformers' cross-encoder ``ListNetLoss``: the
cross-entropy between the softmax of the reader's logits and the softmax of these labels) carries the head's
judgement of every candidate, and the bonus keeps the answer on top where the head misplaced it. The held-out
split is never read here: the reader is measured on it (``measure``). The evaluation guard runs inside
``build_groups``.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from services.rerank.window import reader_text
from training.reader.recipe import Recipe


def pick(holders: int, score: np.ndarray, docs: int, rng: random.Random) -> list[int]:
    """Which candidates a row keeps, by index: the first ``holders`` (those that hold the quote), then half
    the remaining places to the head's best-scored others, then others drawn at random, so the list shows
    the student both what the head nearly chose and the ordinary rest. ``docs`` places in all."""
    if not 0 < holders < docs or len(score) < docs:
        raise ValueError(f"{holders} holders and {len(score)} candidates cannot fill {docs} places")
    by_head = sorted(range(holders, len(score)), key=lambda k: (-float(score[k]), k))
    best = by_head[: (docs - holders) // 2]
    drawn = rng.sample(by_head[len(best) :], docs - holders - len(best))
    return list(range(holders)) + best + drawn


def build(pattern: str, head: Path, out: Path, recipe: Recipe) -> dict[str, Any]:
    """Write ``out``/distil.jsonl from the served pools ``recipe.teacher`` names: per row the question,
    ``teacher_docs`` reader texts (every holder of the quote among the first ``teacher_depth`` served
    candidates, or the group's positive when none is there; then the head's best others; then others drawn
    at random) and their labels, divided by ``teacher_temperature`` (the head's scores span ~18 points, and
    their softmax would put nearly all its mass on one candidate). Every real post of the trained split is
    kept and ``teacher_written`` of its written questions, drawn with the recipe's seed. Returns the counts,
    the labels' spread (what the loss's softmax reads) and the file's sha256."""
    from rulesage import db
    from services.rerank.scorer import RuntimeOptions, TrainedScorer
    from services.rerank.states import usable_sync
    from training.questions import build_groups, load_questions
    from training.reranker.pools import load_pools

    t0 = time.perf_counter()
    pools_file = Path(recipe.teacher)
    depth, docs, bonus, temperature = (
        recipe.teacher_depth,
        recipe.teacher_docs,
        recipe.teacher_bonus,
        recipe.teacher_temperature,
    )
    rng = random.Random(recipe.seed)
    scorer = TrainedScorer(head, RuntimeOptions(threads=recipe.threads))
    conn = db.connect(autocommit=True)
    try:
        served = load_pools(pools_file)
        groups, counts, indexes = build_groups(
            conn, load_questions(pattern), 15, 0, recipe.seed, pool_depth=depth, pools=served
        )
        trained = [g for g in groups if g.split == "train"]
        public = [g for g in trained if g.public]
        others = [g for g in trained if not g.public]
        chosen = public + rng.sample(others, min(recipe.teacher_written, len(others)))
        rows: list[dict[str, Any]] = []
        kept: Counter[str] = Counter()
        for g in chosen:
            index = indexes[g.family_id]
            pool = list(g.pool)[:depth]
            # at most half the list holds the quote (a rule printed in several passages), best served first
            holders = ([i for i in pool if i in g.supporters] or [g.positive])[: docs // 2]
            rest = [i for i in pool if i not in g.supporters]
            if len(rest) < docs - len(holders):
                kept["too-few-candidates"] += 1
                continue
            ids = holders + rest
            passages = [index.passages[i] for i in ids]
            texts = [p.text for p in passages]
            known = usable_sync(conn, scorer.states_key, [(p.id, p.text) for p in passages])
            windows, _ = scorer.fill_states(texts, known)
            score, _ = scorer.read_scores(scorer.read_question(g.question), windows)
            n_hold = len(holders)
            picked = pick(n_hold, score, docs, rng)
            rows.append(
                {
                    "question": g.question,
                    "public": g.public,
                    "docs": [reader_text(passages[k].heading_path, texts[k]) for k in picked],
                    "labels": [
                        round(
                            (float(score[k]) + (bonus if k < n_hold else 0.0)) / recipe.teacher_temperature, 4
                        )
                        for k in picked
                    ],
                }
            )
            kept["public" if g.public else "written"] += 1
    finally:
        conn.close()
    rng.shuffle(rows)
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    out.mkdir(parents=True, exist_ok=True)
    (out / "distil.jsonl").write_text(body)
    return {
        "pools": str(pools_file),
        "teacher": scorer.identity,
        "depth": depth,
        "docs": docs,
        "bonus": bonus,
        "temperature": temperature,
        "outcomes": dict(counts),
        "rows": dict(kept),
        "labels": label_spread(rows),
        "minutes": round((time.perf_counter() - t0) / 60, 1),
        "sha256": hashlib.sha256(body.encode()).hexdigest(),
    }


def label_spread(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The labels' spread (what the softmax of the listwise loss will read), for the run's record."""
    labels = [x for row in rows for x in row["labels"]]
    if not labels:
        raise ValueError("no labelled rows: no trained question has a served pool")
    arr = np.asarray(labels)
    return {k: float(getattr(arr, k)()) for k in ("mean", "std", "min", "max")}
