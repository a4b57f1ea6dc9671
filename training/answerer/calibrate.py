"""Calibrate the extractive answerer's abstain threshold on the training questions, never on an evaluation.

usage: rulesage train abstain [--per-class N] [--out services/answer/calibration.json]
       (against a running mesh over the whole shelf: `rulesage up --detach` first)

Every silent training question (``"answerable": false`` in ``data/questions/questions-*.jsonl``: on topic,
but the book does not answer it) and as many answerable ones (a fixed sample by a hash of the text) walk the
real road, search and answer, exactly as an ask does; each gives the answerer's score and whether the book
answers it. The training guard drops every question that overlaps the evaluation's files. The threshold is
``rulesage.core.metrics.calibrate_threshold`` at the product's floors (abstains at least 90 % right and
catching at least 80 % of the silent questions, answering as many as possible); when no threshold meets
both floors, the highest that still answers 90 % of the answerable questions: a wrong "not in the book" is
the failure the product exists to avoid, so the answering floor is the one kept. (Best balanced accuracy,
the first fallback tried, chose 0.53 on these questions and cut answered-correctly on both gold sets from
0.50 / 0.58 to 0.34 / 0.39: the silent training questions are easier to tell apart than real ones.)
What was chosen, by which rule, on which questions, goes to
``calibration.json``; the answer service reads it and every ruling's wrench names it.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rulesage.core.metrics import abstain_figures, answering_floor, auc, calibrate_threshold

ROOT = Path(__file__).resolve().parents[2]

CALIBRATION = ROOT / "services" / "answer" / "calibration.json"
QUESTIONS = "data/questions/questions-*.jsonl"


def _rank(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def training_questions(per_class: int) -> list[dict[str, Any]]:
    """(game, question, answerable) rows: every silent one (up to ``per_class``), as many answerable."""
    from training.questions import eval_guard, load_questions

    guard = eval_guard()
    rows = [
        {"game": q.game, "question": q.question, "answerable": q.answerable}
        for q in load_questions(str(ROOT / QUESTIONS), silent=True)
        if not guard.touches(q)
    ]
    silent = sorted((r for r in rows if not r["answerable"]), key=lambda r: _rank(str(r["question"])))[
        :per_class
    ]
    answerable = sorted((r for r in rows if r["answerable"]), key=lambda r: _rank(str(r["question"])))
    return silent + answerable[: len(silent)]


def balanced_best(pairs: list[tuple[float, bool]]) -> float:
    """The threshold (abstain under it) with the best mean of the answered share of answerable questions and
    the abstained share of silent ones."""
    yes = [s for s, ok in pairs if ok]
    no = [s for s, ok in pairs if not ok]
    cuts = sorted({s for s, _ in pairs})
    best, best_t = -1.0, cuts[0]
    for i, cut in enumerate(cuts):
        value = (sum(s >= cut for s in yes) / len(yes) + sum(s < cut for s in no) / len(no)) / 2
        if value > best:
            best, best_t = value, (cuts[i - 1] + cut) / 2 if i else cut
    return best_t


async def scores(rows: list[dict[str, Any]]) -> list[tuple[float, bool, str]]:
    from rulesage.road import BadQuestion, Road

    road = Road()
    out: list[tuple[float, bool, str]] = []
    try:
        for i, r in enumerate(rows, 1):
            try:
                search = await road.search(r["game"], r["question"])
            except BadQuestion as exc:  # a row naming a family or a game this shelf lacks: not an ask
                out.append((float("nan"), r["answerable"], f"refused: {exc}"))
                continue
            ruling = (await road.answer(search, store=False)).to_json()
            info = ruling["wrench"].get("answer") or {}
            degraded = [a["arm"] for a in ruling["wrench"].get("arms", []) if a.get("state") != "ok"] + [
                s
                for s in ("fusion", "rerank", "answer")
                if (ruling["wrench"].get(s) or {}).get("state") != "ok"
            ]
            if degraded or info.get("confidence") is None:
                out.append((float("nan"), r["answerable"], "degraded: " + ",".join(degraded)))
            else:
                out.append((float(info["confidence"]), r["answerable"], ruling["verdict"]))
            if i % 50 == 0:
                print(f"  {i}/{len(rows)}", file=sys.stderr)
    finally:
        await road.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--per-class", type=int, default=400, help="silent questions at most (as many answerable)"
    )
    ap.add_argument("--out", default=str(CALIBRATION))
    ap.add_argument("--scores", help="also write every (score, answerable, verdict) here, JSON lines")
    ap.add_argument(
        "--from-scores", help="fit from a --scores file of an earlier run instead of asking again"
    )
    ns = ap.parse_args(argv)
    t0 = time.monotonic()
    if ns.from_scores:
        lines = Path(ns.from_scores).read_text(encoding="utf-8").splitlines()
        scored = [
            (float(d["score"]), bool(d["answerable"]), str(d["verdict"])) for d in map(json.loads, lines)
        ]
    else:
        scored = asyncio.run(scores(training_questions(ns.per_class)))
    if ns.scores and not ns.from_scores:
        Path(ns.scores).write_text(
            "".join(json.dumps({"score": s, "answerable": ok, "verdict": v}) + "\n" for s, ok, v in scored),
            encoding="utf-8",
        )
    kept = [(s, ok) for s, ok, _ in scored if s == s]  # NaN: a degraded or refused ask measures nothing
    refused = sum(why.startswith("refused") for _, _, why in scored)
    degraded = len(scored) - len(kept) - refused
    fitted = calibrate_threshold(kept)
    if fitted is not None:
        threshold, rule = (
            fitted.threshold,
            "calibrate_threshold at the floors (abstain precision 0.9, recall 0.8)",
        )
    else:
        threshold = answering_floor(kept)
        rule = (
            "the highest that answers 90 % of the answerable (no threshold met the 0.9 / 0.8 abstain floors)"
        )
    report = {
        "threshold": round(threshold, 4),
        "rule": rule,
        "calibrated_on": (
            f"{sum(ok for _, ok in kept)} answerable + {sum(not ok for _, ok in kept)} silent training"
            f" questions ({QUESTIONS}, eval-overlap guarded) through the real road"
        ),
        "degraded_asks": degraded,
        "refused_rows": refused,
        "answerability_auc": round(auc([s for s, _ in kept], [int(ok) for _, ok in kept]), 3),
        "figures_at_threshold": abstain_figures(kept, threshold),
        "balanced_accuracy_threshold": round(balanced_best(kept), 4),
        "when": datetime.now(UTC).strftime("%Y-%m-%d"),
        "seconds": round(time.monotonic() - t0, 1),
    }
    Path(ns.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
