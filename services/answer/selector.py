"""The quote selector and the answerability model: two small trained models over one ask's shown passages.

Pure logic, no I/O. The inputs are what an ask already has: the question, the eight passages in the careful
reader's order (with its scores), every sentence's span and MiniLM cosine, and each passage's cosine. From
them each sentence gets a feature row (its own and its passage's relevance, where the reader put its
passage, how much of the question's rarer words it and its passage hold, its neighbours, its length and
place), and each ask gets one (the best sentences' scores, how much of the question the shown text covers).

- The **selector** is a logistic regression over the sentence rows: the probability that a sentence holds
  the answer. The answer quotes the best sentence (and a close second).
- The **answerability** model is a logistic regression over the ask row: the probability that the book
  answers the question from what is shown. The backend abstains under a threshold calibrated on held-out
  training asks (``services/answer/model/answerer.json`` says on which).

Both are trained by ``scripts/train_answerer.py`` on the training questions' asks through the real road
(``scripts/answer_data.py``), never on an evaluation file; their weights are plain JSON.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MODEL = Path(__file__).resolve().parent / "model" / "answerer.json"

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOPWORDS = """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me might more
    most my no nor not now of off on once only or other our out over own same she should so some
    such than that the their them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself dm gm player players rule rules game question questions ask asking wondering thanks
    please thank anyone someone something get got make made way really actually like want wanted
    think say says said know use used one two work works happen happens case
"""
_STOP = frozenset(_STOPWORDS.split())


def terms(text: str) -> list[str]:
    """Content words, lower-cased, a plural's ``s`` dropped (so "attacks" meets "attack")."""
    out = []
    for w in _WORD.findall(text.lower()):
        w = w.split("'")[0]
        if w in _STOP or (len(w) < 3 and not w.isdigit()):
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z']+(?:\s+(?:of|the|de)?\s*[A-Z][a-z']+)*)")


def names(question: str) -> list[str]:
    """The capitalised names a question uses mid-sentence (a spell, card, feat or subclass), lower-cased:
    a name the shown passages never print is a sign the book may not speak of it."""
    out = []
    for m in _NAME.finditer(question):
        name = m.group(1).lower()
        if name.split()[0] not in _STOP and name not in {"i", "dm", "gm"}:
            out.append(name)
    return sorted(set(out))


def _bigrams(ws: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(ws))


def _last_sentence(question: str) -> str:
    """The question's last asked sentence: a forum post tells the situation first and asks last."""
    parts = [p for p in re.split(r"(?<=[.!?])\s+", question.strip()) if p]
    asked = [p for p in parts if p.endswith("?")]
    return (asked or parts or [question])[-1]


@dataclass(frozen=True)
class Shown:
    """One shown passage as the selector reads it, in the reader's order."""

    text: str
    heading: str  # the nearest heading
    cosine: float  # the passage's MiniLM cosine
    rerank_score: float | None
    errata: bool
    spans: tuple[tuple[int, int], ...]
    sentence_cosines: tuple[float, ...]


SENTENCE_FEATURES = (
    "cos",
    "cos_gap",
    "passage_cos",
    "passage_cos_gap",
    "reader_pos",
    "reader_gap",
    "idf_overlap",
    "idf_overlap_passage",
    "idf_overlap_asked",
    "term_share",
    "bigrams",
    "neighbour_cos",
    "best_in_passage",
    "cos_rank",
    "length",
    "first",
    "heading_overlap",
    "errata",
)
ASK_FEATURES = (
    "best",
    "second",
    "best_gap",
    "best_cos",
    "best_passage_cos",
    "reader_top",
    "reader_top_gap",
    "coverage",
    "coverage_best_passage",
    "unseen_terms",
    "unseen_names",
)


def sentence_features(question: str, shown: Sequence[Shown]) -> np.ndarray:
    """One row per sentence (passages in the reader's order, sentences in reading order)."""
    q_terms = terms(question)
    q_set = set(q_terms)
    asked = set(terms(_last_sentence(question)))
    q_bi = _bigrams(q_terms)
    sent_terms = [[set(terms(p.text[s:e])) for s, e in p.spans] for p in shown]
    head_terms = [set(terms(p.heading)) for p in shown]
    n = sum(len(x) for x in sent_terms) or 1
    df: dict[str, int] = {}
    for per in sent_terms:
        for ts in per:
            for t in ts & q_set:
                df[t] = df.get(t, 0) + 1
    idf = {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}
    mass = sum(idf.values()) or 1.0
    asked_mass = sum(idf.get(t, 0.0) for t in asked) or 1.0
    all_cos = [c for p in shown for c in p.sentence_cosines]
    top_cos = max(all_cos, default=0.0)
    order = {v: i for i, v in enumerate(sorted(set(all_cos), reverse=True))}
    top_pcos = max((p.cosine for p in shown), default=0.0)
    scores = [p.rerank_score for p in shown if p.rerank_score is not None]
    top_rr = max(scores, default=0.0)
    rows = []
    for k, p in enumerate(shown):
        p_terms = set().union(*sent_terms[k]) | head_terms[k] if sent_terms[k] else head_terms[k]
        p_idf = sum(idf.get(t, 0.0) for t in p_terms & q_set) / mass
        best_here = max(p.sentence_cosines, default=0.0)
        for j, (s, e) in enumerate(p.spans):
            ts = sent_terms[k][j] | head_terms[k]
            cos = p.sentence_cosines[j]
            neighbours = [p.sentence_cosines[i] for i in (j - 1, j + 1) if 0 <= i < len(p.spans)]
            words = terms(p.text[s:e])
            rows.append(
                [
                    cos,
                    cos - top_cos,
                    p.cosine,
                    p.cosine - top_pcos,
                    math.log1p(k),
                    (p.rerank_score - top_rr) / 10.0 if p.rerank_score is not None else -1.0,
                    sum(idf.get(t, 0.0) for t in ts & q_set) / mass,
                    p_idf,
                    sum(idf.get(t, 0.0) for t in ts & asked) / asked_mass,
                    len(ts & q_set) / (len(q_set) or 1),
                    math.log1p(len(_bigrams(words) & q_bi)),
                    max(neighbours, default=cos),
                    float(cos >= best_here),
                    math.log1p(order[cos]),
                    math.log1p(e - s) / 6.0,
                    float(j == 0),
                    len(head_terms[k] & q_set) / (len(head_terms[k]) or 1),
                    float(p.errata),
                ]
            )
    return np.asarray(rows, dtype=np.float64).reshape(-1, len(SENTENCE_FEATURES))


def ask_features(question: str, shown: Sequence[Shown], logits: np.ndarray) -> np.ndarray:
    """The ask's row, from the selector's logits (sentences in the order of ``sentence_features``)."""
    q_set = set(terms(question))
    seen: set[str] = set()
    per_passage = []
    for p in shown:
        ts = set(terms(p.text)) | set(terms(p.heading))
        per_passage.append(ts)
        seen |= ts
    ranked = np.sort(logits)[::-1] if len(logits) else np.zeros(1)
    best = float(ranked[0])
    second = float(ranked[1]) if len(ranked) > 1 else best - 5.0
    owner = []
    for k, p in enumerate(shown):
        owner.extend([k] * len(p.spans))
    best_k = owner[int(np.argmax(logits))] if len(logits) else 0
    scores = [p.rerank_score for p in shown if p.rerank_score is not None]
    top_rr = max(scores, default=0.0)
    second_rr = sorted(scores, reverse=True)[1] if len(scores) > 1 else top_rr
    share = len(q_set & seen) / (len(q_set) or 1)
    named = names(question)
    shown_text = " ".join(p.text.lower() + " " + p.heading.lower() for p in shown)
    unseen_names = sum(n not in shown_text for n in named) / len(named) if named else 0.0
    return np.asarray(
        [
            best,
            second,
            best - second,
            max((c for p in shown for c in p.sentence_cosines), default=0.0),
            max((p.cosine for p in shown), default=0.0),
            top_rr / 10.0,
            (top_rr - second_rr) / 10.0,
            share,
            len(q_set & per_passage[best_k]) / (len(q_set) or 1) if shown else 0.0,
            1.0 - share,
            unseen_names,
        ],
        dtype=np.float64,
    )


@dataclass(frozen=True)
class Linear:
    """A standardised logistic regression: ``w · (x − mean) / scale + b``."""

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def logits(self, x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return np.zeros(0)
        return ((x - self.mean) / self.scale) @ self.weights + self.bias

    @classmethod
    def of(cls, d: dict[str, Any], names: tuple[str, ...], subset: bool = False) -> Linear:
        """From the model file; with ``subset``, the model may read any of ``names``, in their order."""
        mine = tuple(d["features"])
        known = [n for n in names if n in mine] if subset else list(names)
        if mine != tuple(known) or not mine:
            raise ValueError(f"the model's features {list(mine)} are not this code's {list(names)}")
        names = mine
        arrays = [np.asarray(d[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
        if any(a.shape != (len(names),) for a in arrays) or not all(np.isfinite(a).all() for a in arrays):
            raise ValueError("the model's arrays do not match its features or are not finite")
        if np.any(arrays[1] <= 0):
            raise ValueError("the model's scales must be positive")
        return cls(names, arrays[0], arrays[1], arrays[2], float(d["bias"]))

    def as_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.names),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
            "bias": round(self.bias, 6),
        }


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


@dataclass(frozen=True)
class Answerer:
    """The two trained models and the abstain threshold calibrated with them."""

    selector: Linear
    answerability: Linear
    threshold: float
    calibrated_on: str
    identity: str

    def read(self, question: str, shown: Sequence[Shown]) -> tuple[np.ndarray, float]:
        """Every sentence's selector logit, and the probability that the shown text answers the question."""
        logits = self.selector.logits(sentence_features(question, shown))
        if not len(logits):
            return logits, 0.0
        x = ask_features(question, shown, logits)[self.ask_columns]
        return logits, sigmoid(float(self.answerability.logits(x[None, :])[0]))

    @property
    def ask_columns(self) -> list[int]:
        return [ASK_FEATURES.index(n) for n in self.answerability.names]


def load(path: Path = MODEL) -> Answerer:
    """The shipped models; a missing or malformed file is an error naming it (the service fails to start)."""
    import hashlib

    try:
        raw = path.read_bytes()
        d = json.loads(raw)
        selector = Linear.of(d["selector"], SENTENCE_FEATURES)
        answerability = Linear.of(d["answerability"], ASK_FEATURES, subset=True)
        threshold = float(d["threshold"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the answerer's model {path} is missing or unreadable: {exc}") from None
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the answerer's model {path} holds threshold {threshold}, outside [0, 1]")
    sha = hashlib.sha256(raw).hexdigest()[:12]
    return Answerer(selector, answerability, threshold, str(d.get("calibrated_on", "")), f"answerer@{sha}")
