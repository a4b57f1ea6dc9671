"""Does what was shown answer the question? The extractive backend's abstain signal.

The best sentence's relevance alone did not separate silent books from answering ones (gold-dev: abstain
precision 0.28 / recall 0.39 at best). A question the book is silent on is usually *on topic*: its words
partly match, and what is missing is the one concept the player asked about ("fate points" in Blades in the
Dark, "short rest" in Basic Fantasy). So besides the relevance of the best sentence and passage, the model
reads lexical evidence: how much of the question's weight (idf over the game's family) the shown passages
and the best one hold, and the heaviest question term none of them holds.

A logistic model over these features gives P(answered); the backend abstains below a threshold calibrated
on gold-dev's unanswerable questions (``rulesage eval``'s ``abstain_calibration``). The weights are trained
by ``rulesage train-answerability`` on the helper-written player questions (never gold): each asked of its
own game, with the shown passages as the road found them (answerable when one holds the quote) and again
with every passage holding the quote taken away (the book, as shown, is silent).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_FILE = Path(__file__).resolve().parent / "answerability.json"

FEATURES = (
    "best_sentence",  # the best sentence's blended score (sentence and passage cosine)
    "best_sentence_cosine",  # that sentence's own cosine
    "best_passage",  # the best passage cosine among those shown
    "coverage_shown",  # idf-weighted share of the question's terms some shown passage holds
    "coverage_best",  # ... that the best sentence's passage holds
    "missing_idf",  # the heaviest question term no shown passage holds (idf / the family's max idf)
    "unknown_share",  # idf-weighted share of question terms the family's books never use
)


@dataclass(frozen=True)
class Term:
    """A question term (an English-stemmed lexeme) and where it occurs."""

    lexeme: str
    df: int  # live passages of the family holding it
    n: int  # live passages of the family
    holders: frozenset[int]  # shown passages holding it

    @property
    def idf(self) -> float:
        return math.log(1.0 + (self.n - self.df + 0.5) / (self.df + 0.5))


@dataclass(frozen=True)
class Reading:
    """What the extractive backend measured for one question and its shown passages."""

    best_sentence: float
    best_sentence_cosine: float
    best_passage: float
    best_passage_id: int


def features(reading: Reading, terms: Sequence[Term]) -> np.ndarray:
    weights = np.array([t.idf for t in terms], dtype=np.float64)
    total = float(weights.sum())
    if not terms or total <= 0:
        coverage_shown = coverage_best = 1.0
        missing = unknown = 0.0
    else:
        shown = np.array([bool(t.holders) for t in terms])
        best = np.array([reading.best_passage_id in t.holders for t in terms])
        coverage_shown = float(weights[shown].sum() / total)
        coverage_best = float(weights[best].sum() / total)
        top = max(math.log(1.0 + (t.n + 0.5) / 0.5) for t in terms)  # the idf of a term no passage holds
        missing = float(weights[~shown].max() / top) if (~shown).any() else 0.0
        unknown = float(sum(t.idf for t in terms if t.df == 0) / total)
    return np.array(
        [
            reading.best_sentence,
            reading.best_sentence_cosine,
            reading.best_passage,
            coverage_shown,
            coverage_best,
            missing,
            unknown,
        ],
        dtype=np.float64,
    )


@dataclass(frozen=True)
class Model:
    """Standardised logistic regression: P(answered) = sigmoid(w . (x - mean) / scale + b)."""

    weights: np.ndarray
    bias: float
    mean: np.ndarray
    scale: np.ndarray
    identity: str = "answerability"

    def probability(self, x: np.ndarray) -> float:
        z = float(np.dot(self.weights, (x - self.mean) / self.scale) + self.bias)
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(FEATURES),
            "weights": [round(float(w), 6) for w in self.weights],
            "bias": round(self.bias, 6),
            "mean": [round(float(m), 6) for m in self.mean],
            "scale": [round(float(s), 6) for s in self.scale],
        }


def load(path: Path = MODEL_FILE) -> Model | None:
    """The shipped weights, or None (the backend then abstains on the best sentence's score alone)."""
    if not path.exists():
        return None
    raw = json.loads(path.read_text())
    if list(raw.get("features", [])) != list(FEATURES):
        raise ValueError(f"{path}: trained on {raw.get('features')}, this code reads {list(FEATURES)}")
    import hashlib

    sha = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return Model(
        np.asarray(raw["weights"], dtype=np.float64),
        float(raw["bias"]),
        np.asarray(raw["mean"], dtype=np.float64),
        np.asarray(raw["scale"], dtype=np.float64),
        identity=f"answerability@{sha}",
    )


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 3000, lr: float = 0.5) -> Model:
    """Logistic regression by full-batch gradient descent on standardised features (deterministic)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    w = np.zeros(z.shape[1])
    b = 0.0
    n = len(y)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        g = p - y
        w -= lr * (z.T @ g / n + l2 * w / n)
        b -= lr * float(g.mean())
    return Model(w, b, mean, scale)


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (ties count half)."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))
