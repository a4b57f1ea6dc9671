"""Train the quote selector and the answerability model, calibrate the abstain threshold, write the model.

usage: rulesage train answerer --asks FILE [--out services/answer/model/answerer.json]
       [--answerability trees|linear] [--reader-seen] [--removed-weight W] [--ignore-cards] [--report FILE]
       [--dry-run]

``FILE`` is what ``rulesage train answerer-asks`` wrote: the training questions' asks through the real road
(never an evaluation file; the guard ran there). The asks are split by a hash of the question: three
quarters fit the models, one quarter (``calibration``) sets the threshold and gives the figures the model
card quotes, so the threshold is never set on the asks a model was fitted on, nor on an evaluation run.

- The selector is fitted on the answerable asks whose shown passages hold the quote: a sentence holding the
  quote is a positive, every other shown sentence a negative, each ask weighing the same. By default only
  the asks the careful reader was not trained on (its held-out split) are used: on the others its order is
  better than it will be on a new question, and a selector fitted there leans on it too much.
- The answerability model (shallow gradient-boosted trees by default) is fitted on the silent asks (the
  book does not answer) against the answerable ones, the classes weighing the same within length bands and
  within real posts and written questions apart; with ``--removed-weight`` above 0, each answerable ask also
  counts once more with its quote-holding passages taken out, as a question the shown text does not answer.
- The threshold: the product's floors (abstains at least 90 % right, catching at least 80 % of the silent
  questions) when some threshold meets them on the calibration asks; else the highest that still answers 90 %
  of the answerable ones (a wrong "not in the book" is the failure the product exists to avoid).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from rulesage.core.metrics import abstain_figures, answering_floor, auc, calibrate_threshold
from services.answer.selector import (
    ASK_FEATURES,
    MODEL,
    READ_FEATURES,
    SENTENCE_FEATURES,
    TEXT_FEATURES,
    Linear,
    Shown,
    TextPrior,
    Trees,
    ask_features,
    sentence_features,
    sigmoid,
)
from training.questions import is_public_post

ROOT = Path(__file__).resolve().parents[2]

LONG_WORDS = 30  # a forum-style post
RERANK_PRIOR, SENTENCE_WEIGHT = 0.02, 0.7  # the cosine blend the selector replaces (extractive.py)


def part(question: str) -> str:
    return "calibration" if int(hashlib.sha256(question.encode()).hexdigest()[:8], 16) % 4 == 0 else "fit"


def reader_order(passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(passages, key=lambda p: -(p["rerank_score"] if p["rerank_score"] is not None else -1e9))


def shown_of(rec: dict[str, Any], drop_holding: bool = False) -> list[Shown]:
    return [
        Shown(
            text=p["text"],
            heading=p["heading_path"][-1] if p["heading_path"] else "",
            cosine=float(p["cosine"]),
            rerank_score=p["rerank_score"],
            errata=p["doc_kind"] == "errata",
            spans=tuple((s["start"], s["end"]) for s in p["sentences"]),
            sentence_cosines=tuple(float(s["cosine"]) for s in p["sentences"]),
            asked_cosines=tuple(float(s.get("asked_cosine", s["cosine"])) for s in p["sentences"]),
        )
        for p in rec["passages"]
        if not (drop_holding and p["holds"])
    ]


def labels_of(rec: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: holds the quote; its passage holds it."""
    s = [x["holds"] for p in rec["passages"] for x in p["sentences"]]
    ps = [p["holds"] for p in rec["passages"] for _ in p["sentences"]]
    return np.asarray(s, bool), np.asarray(ps, bool)


def baseline_scores(rec: dict[str, Any]) -> np.ndarray:
    order = sorted(range(len(rec["passages"])), key=lambda i: -(rec["passages"][i]["rerank_score"] or 0.0))
    prior = {i: RERANK_PRIOR * np.log1p(k) for k, i in enumerate(order)}
    return np.asarray(
        [
            SENTENCE_WEIGHT * s["cosine"] + (1 - SENTENCE_WEIGHT) * p["cosine"] - prior[i]
            for i, p in enumerate(rec["passages"])
            for s in p["sentences"]
        ]
    )


def fit_trees(x: np.ndarray, y: np.ndarray, w: np.ndarray, names: tuple[str, ...]) -> Trees:
    """Shallow gradient-boosted trees (scikit-learn's histogram booster), read back into plain arrays: the
    answerability signal is not linear in its features (a high best cosine means little when the question's
    names are unseen), and depth-3 trees can say so."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    hgb = HistGradientBoostingClassifier(
        max_depth=3,
        max_iter=150,
        learning_rate=0.05,
        min_samples_leaf=20,
        l2_regularization=1.0,
        early_stopping=False,
        random_state=0,
    )
    hgb.fit(x, y, sample_weight=w)
    trees = []
    for (predictor,) in hgb._predictors:
        n = predictor.nodes
        trees.append(
            {
                "feature": n["feature_idx"].astype(np.int64),
                "threshold": n["num_threshold"].astype(np.float64),
                "left": n["left"].astype(np.int64),
                "right": n["right"].astype(np.int64),
                "leaf": n["is_leaf"].astype(bool),
                "value": n["value"].astype(np.float64),
                "missing_left": n["missing_go_to_left"].astype(bool),
            }
        )
    # as the model file will hold them (rounded), so the check covers what ships
    model = Trees.of(
        Trees(names, float(np.ravel(hgb._baseline_prediction)[0]), tuple(trees)).as_dict(), names
    )
    if not np.allclose(model.logits(x), hgb.decision_function(x), atol=1e-4):
        raise SystemExit("the trees read back do not reproduce scikit-learn's scores")
    return model


TEXT_FOLDS = 5


def fit_text_prior(
    questions: list[str], answerable: list[bool], seed: int = 0
) -> tuple[TextPrior, dict[str, float]]:
    """The text prior fitted on ``questions``, and each of them scored by a prior fitted on the other folds
    (so the trees learn from scores as surprised as a new question's): tf-idf over word 1- and 2-grams seen
    in two questions at least, sublinear tf, a class-balanced logistic regression. Read back into arrays
    and checked to reproduce scikit-learn's probabilities."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    def fitted(qs: list[str], ys: list[bool]) -> tuple[Any, Any]:
        vec = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
        lr = LogisticRegression(C=2.0, max_iter=2000, class_weight="balanced")
        lr.fit(vec.fit_transform(qs), ys)
        return vec, lr

    unique = sorted(dict(zip(questions, answerable, strict=True)).items())
    qs, ys = [q for q, _ in unique], [y for _, y in unique]
    oof: dict[str, float] = {}
    folds = StratifiedKFold(TEXT_FOLDS, shuffle=True, random_state=seed)
    for train_at, test_at in folds.split(qs, ys):
        vec, lr = fitted([qs[i] for i in train_at], [ys[i] for i in train_at])
        probs = lr.predict_proba(vec.transform([qs[i] for i in test_at]))[:, 1]
        oof.update({qs[i]: float(p) for i, p in zip(test_at, probs, strict=True)})
    vec, lr = fitted(qs, ys)
    terms = vec.get_feature_names_out()
    prior = TextPrior.of(TextPrior(tuple(terms), vec.idf_, lr.coef_[0], float(lr.intercept_[0])).as_dict())
    check = qs[:500]
    theirs = lr.predict_proba(vec.transform(check))[:, 1]
    if not np.allclose([prior.probability(q) for q in check], theirs, atol=1e-4):
        raise SystemExit("the text prior read back does not reproduce scikit-learn's probabilities")
    return prior, oof


def is_real(rec: dict[str, Any]) -> bool:
    """A real player's post, not a written question: the collected ask's ``source`` by the questions' rule."""
    return is_public_post(rec.get("source", "written"))


def fit_linear(x: np.ndarray, y: np.ndarray, w: np.ndarray, names: tuple[str, ...], c: float) -> Linear:
    from sklearn.linear_model import LogisticRegression

    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    lr = LogisticRegression(C=c, max_iter=2000)
    lr.fit((x - mean) / scale, y, sample_weight=w)
    return Linear(names, mean, scale, lr.coef_[0].astype(np.float64), float(lr.intercept_[0]))


def pick(asks: list[dict[str, Any]], scores: list[np.ndarray]) -> dict[str, float]:
    """Of the asks whose shown passages hold the answer: the best sentence holds the quote / sits in a
    passage holding it (what gold's answered-correctly counts)."""
    sent = passage = n = 0
    for rec, sc in zip(asks, scores, strict=True):
        s_lab, p_lab = labels_of(rec)
        if not p_lab.any() or not len(sc):
            continue
        n += 1
        best = int(np.argmax(sc))
        sent += bool(s_lab[best])
        passage += bool(p_lab[best])
    return {
        "asks": n,
        "sentence_holds": round(sent / (n or 1), 3),
        "passage_holds": round(passage / (n or 1), 3),
    }


def stored(threshold: float) -> float:
    """The threshold as the model file keeps it: four decimals, rounded down, so the question the threshold
    was set at is still answered (rounding up would abstain on it)."""
    return math.floor(threshold * 10_000) / 10_000


def set_threshold(pairs: list[tuple[float, bool]]) -> tuple[float, str]:
    """The abstain threshold over (P(answerable), answerable) pairs, and the rule that chose it: the product's
    floors where some threshold meets them, else the highest that still answers 90 % of the answerable."""
    fitted = calibrate_threshold(pairs)
    if fitted is not None:
        return fitted.threshold, "calibrate_threshold at the floors (abstain precision 0.9, recall 0.8)"
    return (
        answering_floor(pairs),
        "the highest that answers 90 % of the answerable (no threshold met the 0.9 / 0.8 floors)",
    )


@dataclass(frozen=True)
class Calibration:
    """The threshold set on the calibration asks (all of them, or the real posts alone), with its rule, the
    figures the report and the model file keep, and the model file's ``calibrated_on``."""

    threshold: float
    rule: str
    figures: dict[str, Any]
    calibrated_on: str


def calibrate(scored: list[tuple[float, bool, bool]], on: str, asks_name: str = "") -> Calibration:
    """``scored``: (P(answerable), answerable, a real post) per calibration ask; ``on``: "all" or "real"."""
    pairs = [(p, ok) for p, ok, _ in scored]
    real_pairs = [(p, ok) for p, ok, real in scored if real]
    chosen = real_pairs if on == "real" else pairs
    threshold, rule = set_threshold(chosen)
    if on == "real":
        rule += f", on the {len(real_pairs)} real posts among the calibration asks"
    silent = sum(not ok for _, ok in chosen)
    figures = {
        "auc_calibration": round(auc([p for p, _ in pairs], [int(ok) for _, ok in pairs]), 3),
        "auc_calibration_real_posts": round(
            auc([p for p, _ in real_pairs], [int(ok) for _, ok in real_pairs]), 3
        ),
        "threshold": stored(threshold),
        "rule": rule,
        "figures_at_threshold": abstain_figures(pairs, threshold),
        "figures_at_threshold_real_posts": abstain_figures(real_pairs, threshold),
    }
    calibrated_on = (
        f"{len(chosen) - silent} answerable + {silent} silent held-out training asks"
        + (", real players' posts only" if on == "real" else "")
        + (f" of {asks_name}" if asks_name else "")
        + " (data/questions/questions-*.jsonl, eval-overlap guarded) through the real road"
    )
    return Calibration(stored(threshold), rule, figures, calibrated_on)


def recalibrate(path: Path, asks: list[dict[str, Any]], ns: argparse.Namespace, degraded: int) -> int:
    """An answerer's threshold set anew on ``asks``' calibration part; its models are kept as they are. The
    answerability model reads the head's scores, so a new head (or the real posts alone) moves where a share
    of the answerable questions falls."""
    from services.answer.selector import load

    answerer = load(path)
    cal = [a for a in asks if part(a["question"]) == "calibration"]
    scored: list[tuple[float, bool, bool]] = []
    for rec in cal:
        shown = shown_of(rec)
        logits = answerer.select(rec["question"], shown)
        p = answerer.answerable(rec["question"], shown, logits, None, rec.get("known", ()))
        scored.append((p, bool(rec["answerable"]), is_real(rec)))
    pairs = [(p, ok) for p, ok, _ in scored]
    real_pairs = [(p, ok) for p, ok, real in scored if real]
    cal_set = calibrate(scored, ns.calibrate_on, Path(ns.asks).name)
    figures = {
        "asks": {"read": len(asks) + degraded, "degraded": degraded, "calibration": len(cal)},
        "threshold_before": answerer.threshold,
        "figures_before": abstain_figures(pairs, answerer.threshold),
        "figures_before_real_posts": abstain_figures(real_pairs, answerer.threshold),
        **cal_set.figures,
    }
    print(json.dumps(figures, indent=2))
    if ns.report:
        Path(ns.report).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if ns.dry_run:
        return 0
    model = json.loads(path.read_text(encoding="utf-8"))
    model["threshold"] = cal_set.threshold
    model["threshold_rule"] = cal_set.rule
    model["calibrated_on"] = cal_set.calibrated_on
    model["recalibrated"] = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d"),
        "from": f"{path.name}@{hashlib.sha256(path.read_bytes()).hexdigest()[:12]}",
        "asks": Path(ns.asks).name,
        "calibrate_on": ns.calibrate_on,
        "figures": figures,
    }
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(readable_json(model) + "\n", encoding="utf-8")
    print(f"wrote {ns.out}", file=sys.stderr)
    return 0


def readable_json(value: Any, depth: int = 0) -> str:
    """JSON indented by object, each list of numbers on one line (the trees are thousands of numbers)."""
    pad = " " * (depth + 1)
    if isinstance(value, dict) and value:
        items = [f"{pad}{json.dumps(k)}: {readable_json(v, depth + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        items = [pad + readable_json(v, depth + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * depth + "]"
    return json.dumps(value)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asks", required=True)
    ap.add_argument("--out", default=str(MODEL))
    ap.add_argument("--reader-seen", action="store_true", help="also fit the selector on the reader's rows")
    ap.add_argument("--removed-weight", type=float, default=0.0)
    ap.add_argument(
        "--ask-features",
        default=",".join(ASK_FEATURES),
        help="the answerability model's features (comma-separated, of ASK_FEATURES)",
    )
    ap.add_argument("--c", type=float, default=1.0, help="inverse regularisation of both models")
    ap.add_argument(
        "--answerability",
        choices=("linear", "trees"),
        default="trees",
        help="the answerability model: shallow gradient-boosted trees, or a logistic regression",
    )
    ap.add_argument(
        "--sentence-reader",
        help="a sentence reader's folder: its best logit and margin join the answerability model's features;"
        " only the asks it never trained on (the careful reader's held-out split and the silent ones) are"
        " used, for fitting and calibrating alike",
    )
    ap.add_argument(
        "--text-prior",
        action="store_true",
        help="one more answerability feature: how answerable the question reads from its words alone"
        " (fitted on the fit asks' questions, out of fold for the trees)",
    )
    ap.add_argument(
        "--ignore-cards",
        action="store_true",
        help="fit as if the asks named no cards: every name counts against the book (the recipe before)",
    )
    ap.add_argument(
        "--calibrate-on",
        choices=("all", "real"),
        default="all",
        help="the calibration asks the threshold is set on: all of them, or the real players' posts alone"
        " (the kind of question the product serves; written silent questions read otherwise)",
    )
    ap.add_argument(
        "--recalibrate",
        metavar="MODEL",
        help="fit nothing: keep this answerer.json's selector and answerability model and set only its"
        " threshold on these asks' calibration part (a new head's asks, say), written to --out",
    )
    ap.add_argument("--report", help="also write the figures here (JSON)")
    ap.add_argument("--dry-run", action="store_true", help="figures only, no model written")
    ns = ap.parse_args(argv)

    lines = Path(ns.asks).read_text(encoding="utf-8").splitlines()
    asks = [d for d in map(json.loads, lines) if not d.get("degraded")]
    if ns.ignore_cards:
        for a in asks:
            a.pop("known", None)
    for a in asks:  # the reader's order, as the backend reads them (they arrive dealt ends-first)
        a["passages"] = reader_order(a["passages"])
    degraded = len(lines) - len(asks)
    if ns.recalibrate:
        return recalibrate(Path(ns.recalibrate), asks, ns, degraded)
    reader = None
    if ns.sentence_reader:
        from services.answer.sentences import SentenceReader

        reader = SentenceReader(Path(ns.sentence_reader))
        asks = [a for a in asks if a["split"] != "train"]
    fit = [a for a in asks if part(a["question"]) == "fit"]
    cal = [a for a in asks if part(a["question"]) == "calibration"]

    # -- the selector ----------------------------------------------------------------------------------------
    xs, ys, ws = [], [], []
    for rec in fit:
        if not rec["answerable"] or (rec["split"] == "train" and not ns.reader_seen):
            continue
        s_lab, _ = labels_of(rec)
        if not s_lab.any() or s_lab.all():
            continue
        xs.append(sentence_features(rec["question"], shown_of(rec)))
        ys.append(s_lab)
        ws.append(np.where(s_lab, 1.0 / s_lab.sum(), 1.0 / (~s_lab).sum()))
    selector = fit_linear(np.vstack(xs), np.concatenate(ys), np.concatenate(ws), SENTENCE_FEATURES, ns.c)
    selector_asks = len(xs)

    def logits(rec: dict[str, Any], drop: bool = False) -> tuple[list[Shown], np.ndarray]:
        shown = shown_of(rec, drop)
        return shown, selector.logits(sentence_features(rec["question"], shown))

    read_cache: dict[tuple[str, bool], np.ndarray | None] = {}
    text: TextPrior | None = None
    text_scores: dict[str, float] = {}  # the fit asks' out-of-fold scores, the calibration asks' own
    if ns.text_prior:
        text, text_scores = fit_text_prior([a["question"] for a in fit], [bool(a["answerable"]) for a in fit])
        text_scores.update({a["question"]: text.probability(a["question"]) for a in cal})

    def features(rec: dict[str, Any], drop: bool = False) -> np.ndarray:
        """The ask's row, the sentence reader's columns read over the selector's best (as served)."""
        shown, lg = logits(rec, drop)
        key = (rec["question"], drop)
        if reader is not None and key not in read_cache:
            from training.sentences.data import texts_of

            texts = [t for p in rec["passages"] if not (drop and p["holds"]) for t in texts_of(p)]
            read_cache[key] = reader.order(rec["question"], texts, lg)[1] if len(lg) else None
        prior = text_scores.get(rec["question"], 0.0)
        return ask_features(rec["question"], shown, lg, read_cache.get(key), rec.get("known", ()), prior)

    honest = [a for a in cal if a["answerable"] and a["split"] != "train"]
    seen = [a for a in cal if a["split"] == "train"]
    real = [a for a in cal if a["answerable"] and is_real(a)]
    selection = {
        "cosine blend (before)": pick(honest, [baseline_scores(a) for a in honest]),
        "selector": pick(honest, [logits(a)[1] for a in honest]),
        "reader-seen asks, cosine blend": pick(seen, [baseline_scores(a) for a in seen]),
        "reader-seen asks, selector": pick(seen, [logits(a)[1] for a in seen]),
        "real posts, cosine blend": pick(real, [baseline_scores(a) for a in real]),
        "real posts, selector": pick(real, [logits(a)[1] for a in real]),
    }

    # -- answerability ---------------------------------------------------------------------------------------
    ax, ay, aw, aq, ar = [], [], [], [], []
    for rec in fit:
        ax.append(features(rec))
        ay.append(bool(rec["answerable"]))
        aw.append(1.0)
        aq.append(rec["question"])
        ar.append(is_real(rec))
        held = [p["holds"] for p in rec["passages"]]
        if ns.removed_weight > 0 and rec["answerable"] and any(held) and not all(held):
            ax.append(features(rec, drop=True))
            ay.append(False)
            aw.append(ns.removed_weight)
            aq.append(rec["question"])
            ar.append(is_real(rec))
    y = np.asarray(ay)
    w = np.asarray(aw)
    # Both classes weigh the same within each cell of length band and source. Length: the silent training
    # questions are long posts more often than the answerable ones, and a model left to itself learns that a
    # long question is a silent one. Source: real posts (a URL) apart from written questions, since real
    # silent posts read differently from written silent ones and are far fewer.
    band = np.asarray([(len(q.split()) >= LONG_WORDS, real) for q, real in zip(aq, ar, strict=True)])
    cells = sorted({(bool(a), bool(b)) for a, b in band})
    for b in cells:
        for cls in (False, True):
            m = (band == b).all(axis=1) & (y == cls)
            if m.any():
                w[m] = w[m] / w[m].sum() * len(y) / (2 * len(cells))
    chosen = tuple(
        n
        for n in ASK_FEATURES
        if n in ns.ask_features.split(",")
        and (reader is not None or n not in READ_FEATURES)
        and (text is not None or n not in TEXT_FEATURES)
    )
    cols = [ASK_FEATURES.index(n) for n in chosen]
    if ns.answerability == "trees":
        answerability: Linear | Trees = fit_trees(np.vstack(ax)[:, cols], y, w, chosen)
    else:
        answerability = fit_linear(np.vstack(ax)[:, cols], y, w, chosen, ns.c)

    def p_answer(rec: dict[str, Any]) -> float:
        x = features(rec)[cols]
        return sigmoid(float(answerability.logits(x[None, :])[0]))

    cal_set = calibrate([(p_answer(a), bool(a["answerable"]), is_real(a)) for a in cal], ns.calibrate_on)
    base_pairs = [(float(baseline_scores(a).max()), bool(a["answerable"])) for a in cal]
    silent_fit = sum(not a["answerable"] for a in fit)
    report = {
        "asks": {"read": len(lines), "degraded": degraded, "fit": len(fit), "calibration": len(cal)},
        "selector_asks": selector_asks,
        "selection_on_calibration": selection,
        "answerability": {
            "fit": f"{len(fit) - silent_fit} answerable + {silent_fit} silent asks"
            + (f" + removed-passage copies at weight {ns.removed_weight}" if ns.removed_weight else ""),
            "auc_calibration_cosine_blend (before)": round(
                auc([s for s, _ in base_pairs], [int(ok) for _, ok in base_pairs]), 3
            ),
            **cal_set.figures,
        },
    }
    print(json.dumps(report, indent=2))
    if ns.report:
        Path(ns.report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if ns.dry_run:
        return 0
    model: dict[str, Any] = {
        "selector": selector.as_dict(),
        "answerability": answerability.as_dict(),
        "threshold": cal_set.threshold,
        "threshold_rule": cal_set.rule,
        "calibrated_on": cal_set.calibrated_on,
        "trained": {
            "when": datetime.now(UTC).strftime("%Y-%m-%d"),
            "reader_seen": ns.reader_seen,
            "removed_weight": ns.removed_weight,
            "ask_features": list(chosen),
            "c": ns.c,
            "answerability": ns.answerability,
            # the asks name the cards each question names: the model reads them as known names
            "known_cards": all("known" in a for a in asks),
            "text_prior": text is not None,
            "calibrate_on": ns.calibrate_on,
            "sentence_reader": reader.identity if reader is not None else None,
            "asks": "the careful reader's held-out split and the silent asks only"
            if reader is not None
            else "all",
        },
        "figures": report,
    }
    if text is not None:
        model["text_prior"] = text.as_dict()
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(readable_json(model) + "\n", encoding="utf-8")
    print(f"wrote {ns.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
