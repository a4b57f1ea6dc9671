"""Train the doorman's learned screen: `rulesage train doorman`.

Reads data/doorman/train.jsonl (hand-written training rows, no exam rows), holds out a stratified 20 %
validation split (fixed seed), fits a multinomial logistic regression over [MiniLM embedding ⊕ TF-IDF
character 2-5-grams ⊕ TF-IDF word 1-2-grams] on the other 80 % for each C in a small grid, and keeps the C
whose validation hold recall is best at its own threshold. The threshold is chosen on the validation split
only: the lowest score that still clears at least 98 % of the validation ordinary rows. Writes
services/doorman/model/screen.npz (plain arrays, no pickle) and MODEL-CARD.md beside it.

scikit-learn (installed with alt-profanity-check) is needed here only; serving reads the arrays with numpy.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from services.doorman.learned import (
    CHAR_RANGE,
    FORMAT,
    MODEL_PATH,
    ORDINARY,
    WORD_RANGE,
    ScreenModel,
    char_ngrams,
    file_sha256,
    word_ngrams,
)

ROOT = Path(__file__).resolve().parents[2]
TRAIN = ROOT / "data" / "doorman" / "train.jsonl"
SEED = 20240611
VAL_SHARE = 0.20
ORDINARY_CLEAR_MIN = 0.98
C_GRID = (2.0, 8.0, 32.0)
# Each block is l2-normalised, so these set how much each kind of evidence counts before the regression.
BLOCK_WEIGHTS = (1.0, 1.0, 0.5)
MIN_DF = 2
EMBED_VARIANT = "fp32"


def load_rows(path: Path) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for n, r in enumerate(rows, 1):
        if (r["label"] == "clear") != (r["class"] == ORDINARY):
            raise ValueError(f"{path}:{n}: label {r['label']!r} does not match class {r['class']!r}")
    return rows


def choose_threshold(ordinary_scores: np.ndarray, share: float = ORDINARY_CLEAR_MIN) -> float:
    """The lowest hold threshold at which at least ``share`` of these ordinary rows score below it (are
    cleared): halfway between the highest ordinary score that must be cleared and the next one up."""
    s = np.sort(ordinary_scores)[::-1]
    allowed = int(np.floor((1.0 - share) * len(s)))  # how many ordinary rows may be held
    top_cleared = float(s[allowed])
    above = float(s[allowed - 1]) if allowed >= 1 else 1.0
    return min((top_cleared + above) / 2.0, 1.0) if above > top_cleared else float(np.nextafter(above, 2.0))


def _features(vec_c: Any, vec_w: Any, emb: np.ndarray, texts: list[str]) -> Any:
    from scipy import sparse

    w_e, w_c, w_w = BLOCK_WEIGHTS
    return sparse.hstack(
        [sparse.csr_matrix(emb * w_e), vec_c.transform(texts) * w_c, vec_w.transform(texts) * w_w]
    ).tocsr()


def _per_class(
    classes: list[str], y: list[str], hold: np.ndarray, threshold: float
) -> dict[str, dict[str, float]]:
    out = {}
    for c in classes:
        mask = np.array([v == c for v in y])
        if not mask.any():
            continue
        held = int((hold[mask] >= threshold).sum())
        n = int(mask.sum())
        right = n - held if c == ORDINARY else held
        out[c] = {"rows": n, "held": held, "right": right, "share": right / n}
    return out


def train(path: Path = TRAIN, out: Path = MODEL_PATH) -> dict[str, Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split

    from rulesage.embed import Embedder

    rows = load_rows(path)
    texts = [r["text"] for r in rows]
    y = [r["class"] for r in rows]
    idx_tr, idx_va = train_test_split(
        np.arange(len(rows)), test_size=VAL_SHARE, random_state=SEED, stratify=y
    )
    embedder = Embedder(variant=EMBED_VARIANT, encoder="minilm")  # the screen reads MiniLM off the shelf
    emb = embedder.embed_queries(texts)
    tr_t, va_t = [texts[i] for i in idx_tr], [texts[i] for i in idx_va]
    tr_y, va_y = [y[i] for i in idx_tr], [y[i] for i in idx_va]

    vec_c = TfidfVectorizer(analyzer=char_ngrams, sublinear_tf=True, min_df=MIN_DF, dtype=np.float32)
    vec_w = TfidfVectorizer(analyzer=word_ngrams, sublinear_tf=True, min_df=MIN_DF, dtype=np.float32)
    vec_c.fit(tr_t)
    vec_w.fit(tr_t)
    x_tr = _features(vec_c, vec_w, emb[idx_tr], tr_t)
    x_va = _features(vec_c, vec_w, emb[idx_va], va_t)

    best: dict[str, Any] | None = None
    grid = []
    for c in C_GRID:
        clf = LogisticRegression(C=c, class_weight="balanced", max_iter=5000, random_state=SEED)
        clf.fit(x_tr, tr_y)
        classes = [str(k) for k in clf.classes_]
        proba = clf.predict_proba(x_va)
        hold = 1.0 - proba[:, classes.index(ORDINARY)]
        is_ord = np.array([v == ORDINARY for v in va_y])
        threshold = choose_threshold(hold[is_ord])
        recall = float((hold[~is_ord] >= threshold).mean())
        grid.append({"C": c, "threshold": threshold, "hold_recall": recall})
        if best is None or recall > best["hold_recall"] + 1e-9:
            best = {"C": c, "clf": clf, "classes": classes, "hold": hold, "threshold": threshold}
            best["hold_recall"] = recall
    assert best is not None
    clf, classes, threshold = best["clf"], best["classes"], best["threshold"]

    meta = {
        "format": FORMAT,
        "embedder": embedder.identity.model,
        "embedder_variant": EMBED_VARIANT,
        "embedding_dim": int(emb.shape[1]),
        "char_ngrams": list(CHAR_RANGE),
        "word_ngrams": list(WORD_RANGE),
        "min_df": MIN_DF,
        "C": best["C"],
        "seed": SEED,
        "train_sha256": file_sha256(path),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        out,
        meta=np.array(json.dumps(meta, sort_keys=True)),
        classes=np.array(classes),
        char_vocab=np.array(vec_c.get_feature_names_out(), dtype=str),
        word_vocab=np.array(vec_w.get_feature_names_out(), dtype=str),
        char_idf=vec_c.idf_.astype(np.float32),
        word_idf=vec_w.idf_.astype(np.float32),
        coef=clf.coef_.astype(np.float32),
        intercept=clf.intercept_.astype(np.float32),
        block_weights=np.array(BLOCK_WEIGHTS, dtype=np.float32),
        threshold=np.array(threshold, dtype=np.float64),
    )

    # The exported arrays must score as the fitted model does (same features, float32 rounding only).
    model = ScreenModel.load(out)
    k = classes.index(ORDINARY)
    mine = np.array([1.0 - model.probabilities(t, emb[i])[k] for t, i in zip(va_t, idx_va, strict=True)])
    drift = float(np.abs(mine - best["hold"]).max())
    if drift > 1e-3:
        raise RuntimeError(f"exported model disagrees with the fitted one by {drift:.2g}")

    report = {
        "rows": len(rows),
        "train_rows": len(idx_tr),
        "val_rows": len(idx_va),
        "counts": dict(Counter(y)),
        "kinds": dict(Counter(f"{r['class']}/{r.get('kind', '')}" for r in rows)),
        "grid": grid,
        "C": best["C"],
        "threshold": threshold,
        "val_hold_recall": best["hold_recall"],
        "val_per_class": _per_class(classes, va_y, best["hold"], threshold),
        "val_hard": _per_class(
            classes,
            [y[i] if rows[i].get("kind") == "hard" else "" for i in idx_va],
            best["hold"],
            threshold,
        ),
        "features": {
            "embedding": int(emb.shape[1]),
            "char": len(model.char_vocab),
            "word": len(model.word_vocab),
        },
        "sha256": model.sha256,
        "bytes": out.stat().st_size,
        "embedder": embedder.identity.model,
        "export_drift": drift,
    }
    (out.parent / "MODEL-CARD.md").write_text(card(report, meta), encoding="utf-8")
    return report


def card(r: dict[str, Any], meta: dict[str, Any]) -> str:
    per = "\n".join(
        f"| {c} | {v['rows']} | {v['held']} | {v['share']:.1%} |" for c, v in r["val_per_class"].items()
    )
    hard = "\n".join(
        f"| {c} | {v['rows']} | {v['held']} | {v['share']:.1%} |"
        for c, v in r["val_hard"].items()
        if c != ORDINARY
    )
    grid = "\n".join(f"| {g['C']:g} | {g['threshold']:.3f} | {g['hold_recall']:.1%} |" for g in r["grid"])
    counts = ", ".join(f"{c} {n}" for c, n in sorted(r["counts"].items()))
    return f"""# Doorman screen model — card

`screen.npz`, written by `rulesage train doorman` (training/doorman/learn.py); read by
services/doorman/learned.py and run by the Screener after the rules and alt-profanity-check, before the judge.
It can only hold more. Any failure of the stage (missing file, wrong embedder, exception) holds the question.

sha256 (`sha256sum screen.npz`):

    {r["sha256"]}  screen.npz

Size: {r["bytes"]:,} bytes.

## Data

data/doorman/train.jsonl, sha256 `{meta["train_sha256"][:16]}…` (see data/doorman/README-train.md):
{r["rows"]} hand-written rows: {counts}. No exam row was used or read.
Split: stratified by class, {VAL_SHARE:.0%} validation (seed {SEED}): {r["train_rows"]} rows to fit,
{r["val_rows"]} to choose C and the threshold.
The model shipped is the one fitted on the 80 % (not refitted on all rows), so the validation figures below
describe it.

## Features and model

- MiniLM sentence embedding: {r["embedder"]}, {r["features"]["embedding"]} dims, unit length;
- TF-IDF of character {CHAR_RANGE[0]}-{CHAR_RANGE[1]}-grams inside space-padded lower-cased words:
  {r["features"]["char"]:,} n-grams (each seen in at least {MIN_DF} training rows), sublinear tf, l2;
- TF-IDF of lower-cased word {WORD_RANGE[0]}-{WORD_RANGE[1]}-grams: {r["features"]["word"]:,} (same settings).

Block weights (embedding, char, word): {", ".join(f"{w:g}" for w in BLOCK_WEIGHTS)}.

Multinomial logistic regression over the 8 classes (balanced class weights, lbfgs). The hold score is
1 − P(ordinary); the reason names the most likely hold class. C chosen from the grid by validation hold
recall at each C's own threshold:

| C | threshold | validation hold recall |
|---|---|---|
{grid}

Chosen: C = {r["C"]:g}.

## Threshold

Holds at a score of {r["threshold"]:.4f} or more: the lowest threshold at which at least
{ORDINARY_CLEAR_MIN:.0%} of the validation ordinary rows are cleared (halfway between the highest ordinary
score that must be cleared and the next one up).
Override with RULESAGE_DOORMAN_SCREEN_THRESHOLD; switch the stage off with RULESAGE_DOORMAN_SCREEN_MODEL=off.

## Validation (the 20 % split, this threshold)

Overall hold recall: {r["val_hold_recall"]:.1%}.

| class | rows | held | right |
|---|---|---|---|
{per}

Hard rows (the bad part inside a real rules question) in the validation split:

| class | rows | held | right |
|---|---|---|---|
{hard}

## Format

A numpy `.npz` of plain arrays, loaded with `allow_pickle=False` (no pickle, no scikit-learn at serving
time): `meta` (JSON), `classes`, `char_vocab`, `word_vocab` (string arrays), `char_idf`, `word_idf`, `coef`
(classes × [embedding | char | word]), `intercept`, `block_weights`, `threshold`. The feature code is shared
by training and serving (learned.py); training checks the exported arrays score as the fitted model does
(largest difference {r["export_drift"]:.1e}).

## Limits

- Small, hand-written training set ({r["rows"]} rows) in one writer's idea of many voices; validation rows
  come from the same writing, and some hard rows reuse a rules question that also appears as an ordinary
  row, so validation figures are optimistic for text written by other people.
- It judges English best; other languages rest mostly on the character n-grams and few examples.
- It sees only questions the rules and the profanity classifier cleared; it is a second net, not a
  replacement for them, and a held-out exam (exam 3) is the real measure.
- The embedder must be the one named above (weights and ONNX variant); another one is refused, and the
  stage then holds every question it sees.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=TRAIN)
    ap.add_argument("--out", type=Path, default=MODEL_PATH)
    ns = ap.parse_args(argv)
    report = train(ns.data, ns.out)
    json.dump({k: v for k, v in report.items() if k != "kinds"}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
