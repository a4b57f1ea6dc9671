"""Train the extractive backend's answerability model (services/answer/answerability.json).

    rulesage train-answerability [--questions 700] [--seed 13] [--out PATH]

Needs the mesh running (`rulesage up --detach`) over an ingested shelf. Data: the helper-written player
questions in data/reranker/questions-*.jsonl (game, doc, quote, question), never gold: questions whose text
or quote touches a gold question are dropped (services.rerank.train.data.touches_gold). Each sampled question
is asked of its game through the real road (fusion + rerank), then two examples are drawn:

- *as found*: the 8 passages the road kept; answerable when one of them holds the quote;
- *book silent*: every candidate holding the quote taken away, the 8 best of the rest by the reranker's
  scores; not answerable.

The features are computed exactly as the answer service computes them (rank_sentences with the MiniLM scorer
and the stored vectors, PgLibrary.terms). The split is by quote (10 % held out); the report gives held-out
AUC for the model and for each feature alone, and the weights are fitted on every example in the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rulesage import db
from rulesage.text import supports
from services.answer import answerability
from services.answer.backends.extractive import BiEncoderScorer, rank_sentences, reading_of
from services.answer.citations import PassageView
from services.answer.context import PgLibrary, with_vectors
from services.answer.server import view_of

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = str(ROOT / "data" / "reranker" / "questions-*.jsonl")


async def example(
    lib: PgLibrary, scorer: BiEncoderScorer, question: str, shown: list[PassageView]
) -> np.ndarray | None:
    if not shown:
        return None
    shown = with_vectors(shown, await lib.vectors([p.id for p in shown]))
    terms = await lib.terms(question, [p.id for p in shown])
    ranked = await asyncio.to_thread(rank_sentences, question, shown, scorer)
    if not ranked:
        return None
    return answerability.features(reading_of(ranked), terms)


async def collect(sample: list[Any], games: dict[str, list[str]], rng: random.Random) -> list[dict[str, Any]]:
    from rulesage.road import Road
    from services.rerank.train.data import split_of

    road = Road()
    await road.open()
    lib = PgLibrary(road.pool)
    scorer = BiEncoderScorer()
    rows: list[dict[str, Any]] = []
    try:
        for n, q in enumerate(sample, 1):
            slug = q.game if q.game in games.get("", []) else rng.choice(sorted(games.get(q.game, [q.game])))
            try:
                out = await road.search(slug, q.question)
            except Exception as exc:  # an unknown game, a refused question: skip it, say so
                print(f"  skipped {q.question[:60]!r}: {exc}", file=sys.stderr)
                continue
            holds = {c.id for c in out.candidates if c.doc_key == q.doc and supports(c.text, q.quote)}
            if not holds:
                continue  # the road never found the quote: neither example says anything clean
            split = split_of(q, 0.1)
            found = [view_of(p) for p in out.passages]
            x = await example(lib, scorer, q.question, found)
            if x is not None:
                rows.append({"x": x.tolist(), "y": int(any(p.id in holds for p in found)), "split": split})
            rest = [c for c in out.candidates if c.id not in holds]
            rest.sort(key=lambda c: -c.rerank_score if c.has_rerank_score else 0.0)
            x = await example(lib, scorer, q.question, [view_of(c) for c in rest[:8]])
            if x is not None:
                rows.append({"x": x.tolist(), "y": 0, "split": split})
            if n % 50 == 0:
                print(f"  {n}/{len(sample)} questions, {len(rows)} examples", file=sys.stderr)
    finally:
        await road.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rulesage train-answerability", description=__doc__)
    p.add_argument("--questions", type=int, default=700)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--out", type=Path, default=answerability.MODEL_FILE)
    p.add_argument("--metrics", type=Path, default=ROOT / "artifacts" / "answerability" / "metrics.json")
    ns = p.parse_args(argv)

    from services.rerank.train.data import gold_guard, load_questions, touches_gold

    rng = random.Random(ns.seed)
    gold_q, gold_quotes = gold_guard()
    pool = [q for q in load_questions(QUESTIONS) if not touches_gold(q, gold_q, gold_quotes)]
    rng.shuffle(pool)
    sample = pool[: ns.questions]
    with db.connection() as conn:
        games: dict[str, list[str]] = {"": [r[0] for r in conn.execute("SELECT slug FROM games").fetchall()]}
        for fam, slug in conn.execute(
            "SELECT f.slug, g.slug FROM games g JOIN families f ON f.id = g.family_id"
        ):
            games.setdefault(fam, []).append(slug)
    examples = asyncio.run(collect(sample, games, rng))
    x = np.array([r["x"] for r in examples])
    y = np.array([r["y"] for r in examples], dtype=np.float64)
    train = np.array([r["split"] == "train" for r in examples])
    held = answerability.fit(x[train], y[train])
    val_scores = [held.probability(v) for v in x[~train]]
    report: dict[str, Any] = {
        "questions": len(sample),
        "examples": len(examples),
        "answerable_share": round(float(y.mean()), 3),
        "held_out": int((~train).sum()),
        "held_out_auc": {"model": round(answerability.auc(val_scores, y[~train].tolist()), 4)},
    }
    for i, name in enumerate(answerability.FEATURES):
        report["held_out_auc"][name] = round(answerability.auc(x[~train, i].tolist(), y[~train].tolist()), 4)
    final = answerability.fit(x, y)
    report["weights"] = final.to_json()
    ns.out.write_text(json.dumps(final.to_json(), indent=1) + "\n")
    ns.metrics.parent.mkdir(parents=True, exist_ok=True)
    ns.metrics.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
