#!/usr/bin/env python3
"""Measure the category classifier on the training questions and pick its abstain threshold.

usage: rulesage train category-calibration [--json] [--min-precision 0.8]

For every game with a loaded category map (``rulesage ingest ... --categories data/categories``), each
training question of that game in the held-out fold (training/category/learn.py: the fifth of the questions
no learned example comes from; ``data/questions/questions-*.jsonl``, never the evaluation's files) has a
right answer: the categories whose sections hold the
passage that answers it (none when the answer lies outside every mapped section, where the right call is
to abstain). The classifier is run at every threshold on a grid; the table prints, per threshold, the share
of questions it votes on, the precision of those votes and the share of all questions it votes on rightly.
The chosen threshold is the lowest that keeps precision at or above ``--min-precision`` over all mapped
games together; rulesage/core/categories.py's THRESHOLD carries it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from rulesage.core import categories as cat

ROOT = Path(__file__).resolve().parents[2]

GRID = [round(0.3 + 0.05 * i, 2) for i in range(14)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--min-precision", type=float, default=0.8)
    ap.add_argument("--top", type=int, default=cat.TOP_TEXTS, help="texts averaged per category")
    ap.add_argument("--temperature", type=float, default=cat.TEMPERATURE)
    ap.add_argument("--questions", default=str(ROOT / "data" / "questions" / "questions-*.jsonl"))
    ns = ap.parse_args(argv)

    from rulesage import db
    from rulesage.embed import shared_embedder
    from training.category.learn import HELD_OUT_FOLD, fold, label, mapped_games

    url = db.database_url(start_embedded=True)
    rows: list[dict[str, Any]] = []
    with db.connect(url) as conn:
        games = mapped_games(conn)
        if not games:
            return 2
        embedder = shared_embedder()
        for slug, game_id in games:
            texts = conn.execute(
                "SELECT c.name, t.embedding FROM category_texts t JOIN categories c ON c.id = t.category_id"
                " WHERE c.game_id = %s ORDER BY c.id, t.ord",
                (game_id,),
            ).fetchall()
            owners = [r[0] for r in texts]
            matrix = np.stack([np.asarray(r[1].to_numpy(), dtype=np.float32) for r in texts])
            # only the fold no learned example came from: the threshold is never measured on its own examples
            mine = [x for x in label(conn, slug, game_id, ns.questions) if fold(x.question) == HELD_OUT_FOLD]
            vecs: Any = embedder.embed_queries([x.question for x in mine]) if mine else []
            for x, v in zip(mine, vecs, strict=True):
                score = cat.scores(cat.cosine_pairs(v, matrix, owners), top=ns.top)
                best = cat.call(score, threshold=0.0, temperature=ns.temperature)
                rows.append(
                    {
                        "game": slug,
                        "right": sorted(x.categories),
                        "best": best.best,
                        "confidence": best.confidence,
                        "source": x.source,
                    }
                )

    def table(subset: list[dict[str, object]]) -> list[dict[str, float]]:
        out = []
        n = len(subset) or 1
        for t in GRID:
            voted = [r for r in subset if float(r["confidence"]) >= t]  # type: ignore[arg-type]
            good = [r for r in voted if r["best"] in r["right"]]  # type: ignore[operator]
            out.append(
                {
                    "threshold": t,
                    "voted": round(len(voted) / n, 3),
                    "precision": round(len(good) / len(voted), 3) if voted else 1.0,
                    "right_votes": round(len(good) / n, 3),
                }
            )
        return out

    report: dict[str, Any] = {"questions": len(rows), "games": {}}
    for slug in sorted({str(r["game"]) for r in rows}):
        sub = [r for r in rows if r["game"] == slug]
        report["games"][slug] = {  # type: ignore[index]
            "questions": len(sub),
            "mapped": round(sum(bool(r["right"]) for r in sub) / len(sub), 3),
            "top1_when_mapped": round(
                sum(r["best"] in r["right"] for r in sub if r["right"])
                / max(1, sum(bool(r["right"]) for r in sub)),
                3,
            ),
            "grid": table(sub),
        }
    overall = table(rows)
    report["grid"] = overall
    ok = [g for g in overall if g["precision"] >= ns.min_precision]
    report["chosen_threshold"] = ok[0]["threshold"] if ok else None
    report["min_precision"] = ns.min_precision
    report["current_threshold"] = cat.THRESHOLD
    if ns.json:
        print(json.dumps(report, indent=2))
        return 0
    for slug, g in report["games"].items():  # type: ignore[union-attr]
        print(
            f"{slug}: {g['questions']} questions, {g['mapped']:.0%} answered inside a mapped section,"
            f" top-1 right on {g['top1_when_mapped']:.0%} of those"
        )
    print(f"\nall mapped games ({len(rows)} questions)\n threshold  voted  precision  right votes")
    for g in overall:
        print(
            f"  {g['threshold']:.2f}     {g['voted']:.3f}  {g['precision']:.3f}      {g['right_votes']:.3f}"
        )
    print(
        f"\nchosen (precision >= {ns.min_precision}): {report['chosen_threshold']};"
        f" in the code: {cat.THRESHOLD}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
