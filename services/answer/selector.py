"""The quote selector and the answerability model: two small trained models over one ask's shown passages.

Pure logic, no I/O. The inputs are what an ask already has: the question, the eight passages in the careful
reader's order (with its scores), every sentence's span and MiniLM cosines (to the question, and to its last
asked sentence alone), and each passage's cosine. From them each sentence gets a feature row (its own and its
passage's relevance, where the reader put its passage, how much of the question's rarer words it and its
passage hold, its neighbours, its length and place), and each ask gets one (the best sentences' scores, how
much of the question the shown text covers, the question's names it never prints).

- The **selector** is a logistic regression over the sentence rows: the probability that a sentence holds
  the answer. The answer quotes the best sentence (and a close second).
- The **answerability** model is shallow gradient-boosted trees (or a logistic regression) over the ask
  row: the probability that the book answers the question from what is shown. The backend abstains under a
  threshold calibrated on held-out training asks (``services/answer/model/answerer.json`` says on which).

Both are trained by ``training/answerer/train.py`` on the training questions' asks through the real road
(``training/answerer/data.py``), never on an evaluation file; their weights are plain JSON.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rulesage.core.text import asked_sentence

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
    # each sentence's cosine to the question's asked sentence alone (empty: the question is that sentence)
    asked_cosines: tuple[float, ...] = ()

    @property
    def asked(self) -> tuple[float, ...]:
        return self.asked_cosines or self.sentence_cosines


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
    "asked_cos",
    "asked_cos_gap",
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
    "best_asked_cos",
    "reader_top",
    "reader_top_gap",
    "coverage",
    "coverage_best_passage",
    "best_place",
    "unseen_terms",
    "unseen_names",
    "read_best",
    "read_gap",
    "text_prior",
)
# the sentence reader's columns: a model naming them is served only beside that reader
READ_FEATURES = ("read_best", "read_gap")
# the question's words alone (``TextPrior``): a model naming it carries its own text model
TEXT_FEATURES = ("text_prior",)


def sentence_features(question: str, shown: Sequence[Shown]) -> np.ndarray:
    """One row per sentence (passages in the reader's order, sentences in reading order)."""
    q_terms = terms(question)
    q_set = set(q_terms)
    asked = set(terms(asked_sentence(question)))
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
    top_asked = max((c for p in shown for c in p.asked), default=0.0)
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
                    p.asked[j],
                    p.asked[j] - top_asked,
                    math.log1p(e - s) / 6.0,
                    float(j == 0),
                    len(head_terms[k] & q_set) / (len(head_terms[k]) or 1),
                    float(p.errata),
                ]
            )
    return np.asarray(rows, dtype=np.float64).reshape(-1, len(SENTENCE_FEATURES))


def unknown_names(question: str, known: Sequence[str] = ()) -> list[str]:
    """The question's names (``names``) less those a card table knows: ``known`` holds the lower-cased names
    of the cards the question names and the words that named them. A card's name is never printed in its
    game's rules, so it says nothing about whether the book speaks to the question."""
    return [n for n in names(question) if not any(n in k or k in n for k in known if k)]


def ask_features(
    question: str,
    shown: Sequence[Shown],
    logits: np.ndarray,
    read: np.ndarray | None = None,
    known: Sequence[str] = (),
    text_prior: float = 0.0,
) -> np.ndarray:
    """The ask's row, from the selector's logits (sentences in the order of ``sentence_features``) and the
    sentence reader's logits over the sentences it read (``read``; without it, its columns are 0).
    ``known``: see ``unknown_names``; ``text_prior``: ``TextPrior.probability`` of the question."""
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
    # the share of the question's names that neither the shown text nor the card table knows
    named, unknown = names(question), unknown_names(question, known)
    shown_text = " ".join(p.text.lower() + " " + p.heading.lower() for p in shown)
    unseen_names = sum(n not in shown_text for n in unknown) / len(named) if named else 0.0
    return np.asarray(
        [
            best,
            second,
            best - second,
            max((c for p in shown for c in p.sentence_cosines), default=0.0),
            max((p.cosine for p in shown), default=0.0),
            max((c for p in shown for c in p.asked), default=0.0),
            top_rr / 10.0,
            (top_rr - second_rr) / 10.0,
            share,
            len(q_set & per_passage[best_k]) / (len(q_set) or 1) if shown else 0.0,
            # whether the sentence order agrees with the passage order: 0 when the best sentence is in the
            # reader's first passage, ln(1 + k) when it sits in its k-th after that
            math.log1p(best_k),
            1.0 - share,
            unseen_names,
            *read_columns(read),
            text_prior,
        ],
        dtype=np.float64,
    )


def read_columns(read: np.ndarray | None) -> tuple[float, float]:
    """The sentence reader's best logit over the sentences it read, and its margin over the next."""
    if read is None or not len(read):
        return 0.0, 0.0
    ranked = np.sort(np.asarray(read, dtype=np.float64))[::-1]
    return float(ranked[0]), float(ranked[0] - ranked[1]) if len(ranked) > 1 else 5.0


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


@dataclass(frozen=True)
class Trees:
    """Gradient-boosted regression trees in log-odds: ``baseline + Σ leaf(x)``. Each tree is flat arrays,
    node 0 the root: an inner node sends ``x[feature] <= threshold`` to ``left``, else to ``right`` (a
    missing value where ``missing_left`` says); a leaf holds its ``value`` (the learning rate folded in)."""

    names: tuple[str, ...]
    baseline: float
    trees: tuple[dict[str, np.ndarray], ...]

    FIELDS = ("feature", "threshold", "left", "right", "leaf", "value", "missing_left")

    @functools.cached_property
    def _walks(self) -> list[tuple[list[Any], ...]]:
        """The trees as plain lists: an ask scores one row, where a walk in Python beats numpy's per-call
        cost."""
        return [tuple(t[f].tolist() for f in self.FIELDS) for t in self.trees]

    def logits(self, x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return np.zeros(0)
        walks = self._walks
        out = []
        for row in x.tolist():
            total = self.baseline
            for feature, threshold, left, right, leaf, value, missing_left in walks:
                node = 0
                while not leaf[node]:
                    v = row[feature[node]]
                    go_left = missing_left[node] if v != v else v <= threshold[node]
                    node = left[node] if go_left else right[node]
                total += value[node]
            out.append(total)
        return np.asarray(out, dtype=np.float64)

    @classmethod
    def of(cls, d: dict[str, Any], names: tuple[str, ...]) -> Trees:
        """From the model file; the trees may read any of ``names``, in their order."""
        mine = tuple(d["features"])
        if not mine or mine != tuple(n for n in names if n in mine):
            raise ValueError(f"the model's features {list(mine)} are not this code's {list(names)}")
        kinds = {"feature": np.int64, "left": np.int64, "right": np.int64, "leaf": bool, "missing_left": bool}
        trees = []
        for raw in d["trees"]:
            t = {f: np.asarray(raw[f], dtype=kinds.get(f, np.float64)) for f in cls.FIELDS}
            n = len(t["leaf"])
            if n == 0 or any(len(a) != n for a in t.values()):
                raise ValueError("a tree's arrays differ in length or are empty")
            inner = ~t["leaf"]
            at = np.flatnonzero(inner)
            # a child comes after its parent, so every walk ends at a leaf
            for kids in (t["left"][inner], t["right"][inner]):
                if np.any(kids <= at) or np.any(kids >= n):
                    raise ValueError("a tree's child index is out of order or out of range")
            if np.any(t["feature"][inner] < 0) or np.any(t["feature"][inner] >= len(mine)):
                raise ValueError("a tree's feature index is out of range")
            if not (np.isfinite(t["value"]).all() and np.isfinite(t["threshold"][inner]).all()):
                raise ValueError("a tree's values are not finite")
            trees.append(t)
        baseline = float(d["baseline"])
        if not trees or not math.isfinite(baseline):
            raise ValueError("the model holds no trees or a non-finite baseline")
        return cls(mine, baseline, tuple(trees))

    def as_dict(self) -> dict[str, Any]:
        def plain(f: str, a: np.ndarray) -> list[Any]:
            if a.dtype == bool or f in ("feature", "left", "right"):
                return [int(v) for v in a]
            if f == "threshold":  # exact: a rounded split would send a row lying near it the other way
                return [float(v) for v in a]
            return [round(float(v), 6) for v in a]

        return {
            "kind": "trees",
            "features": list(self.names),
            "baseline": round(self.baseline, 6),
            "trees": [{f: plain(f, t[f]) for f in self.FIELDS} for t in self.trees],
        }


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, x))))


_TOKEN = re.compile(r"(?u)\b\w\w+\b")


@dataclass(frozen=True)
class TextPrior:
    """How answerable a question reads from its words alone, before any passage: tf-idf over its word 1- and
    2-grams (scikit-learn's ``TfidfVectorizer``: lower-cased, sublinear tf, smooth idf, l2 norm) and a
    logistic regression. Silent posts ask for what rulebooks do not hold ("is there an official rule",
    tournament policy, another edition); answerable ones tell a situation at the table."""

    terms: tuple[str, ...]
    idf: np.ndarray
    weights: np.ndarray
    bias: float

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.terms)}

    def probability(self, question: str) -> float:
        tokens = _TOKEN.findall(question.lower())
        counts: dict[int, int] = {}
        for gram in [*tokens, *(f"{a} {b}" for a, b in itertools.pairwise(tokens))]:
            i = self.index.get(gram)
            if i is not None:
                counts[i] = counts.get(i, 0) + 1
        if not counts:
            return sigmoid(self.bias)
        at = np.fromiter(counts, dtype=np.int64, count=len(counts))
        x = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * self.idf[at]
        x /= np.linalg.norm(x)
        return sigmoid(float(x @ self.weights[at]) + self.bias)

    @classmethod
    def of(cls, d: dict[str, Any]) -> TextPrior:
        terms = tuple(str(t) for t in d["terms"])
        idf, weights = (np.asarray(d[k], dtype=np.float64) for k in ("idf", "weights"))
        if not terms or idf.shape != (len(terms),) or weights.shape != (len(terms),):
            raise ValueError("the text prior's terms, idf and weights differ in length or are empty")
        if not (np.isfinite(idf).all() and np.isfinite(weights).all() and math.isfinite(float(d["bias"]))):
            raise ValueError("the text prior's numbers are not finite")
        return cls(terms, idf, weights, float(d["bias"]))

    def as_dict(self) -> dict[str, Any]:
        return {
            "terms": list(self.terms),
            "idf": [round(float(v), 6) for v in self.idf],
            "weights": [round(float(v), 6) for v in self.weights],
            "bias": round(self.bias, 6),
        }


@dataclass(frozen=True)
class Answerer:
    """The two trained models and the abstain threshold calibrated with them."""

    selector: Linear
    answerability: Linear | Trees
    threshold: float
    calibrated_on: str
    identity: str
    # whether the answerability model was fitted with the card table's names known (``unknown_names``); a
    # model fitted without them reads every name as the book's, as it was fitted
    reads_cards: bool = False
    # the question's words alone, for a model that reads ``text_prior``
    text: TextPrior | None = None

    def read(self, question: str, shown: Sequence[Shown]) -> tuple[np.ndarray, float]:
        """Every sentence's selector logit, and the probability that the shown text answers the question."""
        logits = self.select(question, shown)
        return logits, self.answerable(question, shown, logits)

    def select(self, question: str, shown: Sequence[Shown]) -> np.ndarray:
        """Every sentence's selector logit."""
        return self.selector.logits(sentence_features(question, shown)[:, self.sentence_columns])

    def answerable(
        self,
        question: str,
        shown: Sequence[Shown],
        logits: np.ndarray,
        read: np.ndarray | None = None,
        known: Sequence[str] = (),
    ) -> float:
        """The probability that the shown text answers the question, from the selector's logits and, for a
        model that reads them, the sentence reader's over the sentences it read. ``known``: the names a card
        table knows (``unknown_names``)."""
        if not len(logits):
            return 0.0
        if self.needs_reader and read is None:
            raise ValueError(f"{self.identity} reads the sentence reader's scores, and none was given")
        known = known if self.reads_cards else ()
        prior = self.text.probability(question) if self.text is not None else 0.0
        x = ask_features(question, shown, logits, read, known, prior)[self.ask_columns]
        return sigmoid(float(self.answerability.logits(x[None, :])[0]))

    @property
    def needs_reader(self) -> bool:
        return any(n in READ_FEATURES for n in self.answerability.names)

    @functools.cached_property
    def sentence_columns(self) -> list[int]:
        return [SENTENCE_FEATURES.index(n) for n in self.selector.names]

    @functools.cached_property
    def ask_columns(self) -> list[int]:
        return [ASK_FEATURES.index(n) for n in self.answerability.names]


def load(path: Path = MODEL) -> Answerer:
    """The shipped models; a missing or malformed file is an error naming it (the service fails to start)."""
    import hashlib

    try:
        raw = path.read_bytes()
        d = json.loads(raw)
        selector = Linear.of(d["selector"], SENTENCE_FEATURES, subset=True)
        a = d["answerability"]
        answerability: Linear | Trees = (
            Trees.of(a, ASK_FEATURES) if a.get("kind") == "trees" else Linear.of(a, ASK_FEATURES, subset=True)
        )
        threshold = float(d["threshold"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the answerer's model {path} is missing or unreadable: {exc}") from None
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the answerer's model {path} holds threshold {threshold}, outside [0, 1]")
    sha = hashlib.sha256(raw).hexdigest()[:12]
    reads_cards = bool((d.get("trained") or {}).get("known_cards", False))
    calibrated_on = str(d.get("calibrated_on", ""))
    try:
        text = TextPrior.of(d["text_prior"]) if "text_prior" in d else None
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the answerer's model {path} holds a broken text prior: {exc}") from None
    if text is None and any(n in TEXT_FEATURES for n in answerability.names):
        raise ValueError(f"the answerer's model {path} reads text_prior and holds no text prior")
    return Answerer(selector, answerability, threshold, calibrated_on, f"answerer@{sha}", reads_cards, text)
