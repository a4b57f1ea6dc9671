"""Retrieval and answer metrics (pure): recall, percentiles, AUC, nDCG, recall@k curves, reliability bins
and the abstain threshold. The gold matching rule is rulesage.eval.gold's."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def recall_curve(ranks: Sequence[int | None], ks: Sequence[int]) -> list[float]:
    """Recall@k for each k in ``ks``, from each question's ``found_at`` rank (None: never found)."""
    n = len(ranks) or 1
    return [sum(1 for r in ranks if r is not None and r <= k) / n for k in ks]


@dataclass(frozen=True)
class ReliabilityBin:
    lo: float
    hi: float
    n: int
    mean_score: float
    observed: float  # share of the bin's questions with the outcome


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width bins of a score in [0, 1] (a score of 1 falls in the last bin), each with its mean score
    and the share of its questions whose outcome held; empty bins are left out."""
    grouped: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for score, ok in pairs:
        grouped[min(bins - 1, max(0, int(score * bins)))].append((score, ok))
    return [
        ReliabilityBin(
            i / bins,
            (i + 1) / bins,
            len(g),
            sum(s for s, _ in g) / len(g),
            sum(1 for _, ok in g if ok) / len(g),
        )
        for i, g in enumerate(grouped)
        if g
    ]


def expected_calibration_error(bins: Sequence[ReliabilityBin]) -> float:
    """The bins' |mean score - observed share|, weighted by their share of the questions."""
    total = sum(b.n for b in bins)
    return sum(b.n * abs(b.mean_score - b.observed) for b in bins) / total if total else 0.0


def pct(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": 0.0, "p95": 0.0, "n": 0}
    s = sorted(values)

    def q(f: float) -> float:
        return round(s[min(len(s) - 1, max(0, math.ceil(f * len(s)) - 1))], 2)

    return {"p50": round(statistics.median(s), 2), "p95": q(0.95), "n": len(s)}


def ndcg_at_10(ranked: list[str], rels: dict[str, int]) -> float:
    dcg = sum((2 ** rels.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(rels.values(), reverse=True)[:10]
    idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: Sequence[str], rels: Mapping[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def auc(scores: list[float], labels: list[int]) -> float:
    """Area under the ROC curve (ties count half); nan without both classes."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    return sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))


@dataclass(frozen=True)
class Calibration:
    threshold: float
    answered_share: float
    abstain_precision: float
    abstain_recall: float
    n: int


def answering_floor(pairs: Sequence[tuple[float, bool]], share: float = 0.9) -> float:
    """Given (score, answerable) per question, the highest threshold (abstain under it) that still answers
    ``share`` of the answerable questions."""
    yes = sorted(s for s, ok in pairs if ok)
    below = int(len(yes) * (1 - share))  # this many answerable questions may fall under the threshold
    return yes[below] if yes else 0.0


def abstain_figures(pairs: Sequence[tuple[float, bool]], threshold: float) -> dict[str, float]:
    """What abstaining under ``threshold`` does to (score, answerable) pairs: the answered share of the
    answerable, and the abstains' precision and recall (silent questions caught)."""
    abstained = [ok for s, ok in pairs if s < threshold]
    silent = sum(not ok for _, ok in pairs)
    answerable = len(pairs) - silent
    return {
        "answered_share_of_answerable": round(
            sum(s >= threshold for s, ok in pairs if ok) / (answerable or 1), 3
        ),
        "abstain_precision": round(sum(not ok for ok in abstained) / (len(abstained) or 1), 3),
        "abstain_recall": round(sum(not ok for ok in abstained) / (silent or 1), 3),
    }


def calibrate_threshold(
    pairs: Sequence[tuple[float, bool]], min_precision: float = 0.9, min_recall: float = 0.8
) -> Calibration | None:
    """Given (best score, answerable) per question, the threshold (abstain when score < threshold) that
    answers the largest share while abstains stay >= ``min_precision`` unanswerable and catch >=
    ``min_recall`` of the unanswerable questions. The threshold sits midway between the highest abstained
    and the lowest answered score. None when no threshold meets both floors."""
    if not pairs:
        return None
    unanswerable = sum(1 for _, ok in pairs if not ok)
    if unanswerable == 0:
        return None
    scores = sorted({s for s, _ in pairs})
    best: Calibration | None = None
    for i, cut in enumerate([*scores, math.inf]):
        abstained = [ok for s, ok in pairs if s < cut]
        if not abstained:
            continue
        caught = sum(1 for ok in abstained if not ok)
        precision = caught / len(abstained)
        recall = caught / unanswerable
        if precision < min_precision or recall < min_recall:
            continue
        answered = (len(pairs) - len(abstained)) / len(pairs)
        below = scores[i - 1]
        threshold = (below + cut) / 2 if cut != math.inf else below + 1e-6
        if best is None or answered > best.answered_share:
            best = Calibration(threshold, answered, precision, recall, len(pairs))
    return best
