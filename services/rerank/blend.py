"""The head's order and the cross reader's, fused by reciprocal rank.

The two readers err differently: the head (frozen window states, a small learned correction) keeps the
answering passage near the top on real posts, the cross reader finds more answering passages in the kept 8
but orders the very top worse. Their orders are fused as the arms' are (RRF, k = 60), each order weighted:
``head_share / (k + head rank) + (1 - head_share) / (k + reader rank)``, ranks counted from 1. Scores of
different models are never added, only their ranks, so neither model's scale needs calibrating.

Each order is the model's own served order: its score less its fused prior ``prior · ln(1 + fused
position)``; past the reader's read depth the reader's order is the fused order. ``head_share`` is chosen on
held-out training questions (training/reader/measure.py) and shipped in reader.json.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.rerank.cross import CrossScorer
from services.rerank.scorer import TrainedScorer, with_prior

K = 60  # as the fuser's RRF


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each candidate by score, ties kept in the fused order (candidates arrive best
    first)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    out = np.empty(len(order), dtype=np.float64)
    out[order] = np.arange(1, len(order) + 1)
    return out


def blend(head: np.ndarray, reader: np.ndarray, head_share: float, k: int = K) -> np.ndarray:
    """Weighted RRF of two served orders over the same candidates (see the module's docstring)."""
    if len(head) != len(reader):
        raise ValueError(f"{len(head)} head scores against {len(reader)} reader scores")
    if not 0.0 <= head_share <= 1.0:
        raise ValueError(f"head_share {head_share} outside [0, 1]")
    fused = head_share / (k + ranks(head)) + (1.0 - head_share) / (k + ranks(reader))
    return np.asarray(fused, dtype=np.float32)


def on_scale(order: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Scores in ``order``'s order drawn from ``scale``'s values: the candidate ranked j-th by ``order`` gets
    ``scale``'s j-th largest score. The blend's RRF values are not on any model's scale; the answer
    service's features read the rerank score as the head gives it, so the blend serves the head's
    scores, re-dealt to the blended order."""
    values = np.sort(np.asarray(scale, dtype=np.float64))[::-1]
    return np.asarray(values[ranks(order).astype(int) - 1], dtype=np.float32)


class BlendScorer:
    """The head and the cross reader over the same candidates, their served orders fused (``blend``).

    The servicer gives each model what it reads (the head: windows, from stored states where it can; the
    reader: headings + window) and calls ``combine``; ``score`` hands both models the same texts and is for
    warming the sessions up."""

    reads_headings = True
    prior = 0.0  # each model's own prior is applied inside ``combine``

    def __init__(self, head: TrainedScorer, reader: CrossScorer, head_share: float) -> None:
        if not 0.0 < head_share < 1.0:
            raise ValueError(f"a blend needs a head share inside (0, 1), not {head_share}")
        self.head, self.reader, self.head_share = head, reader, head_share
        self.states_key = head.states_key
        self.identity = f"{reader.identity}+rrf(head {head_share:g}, {head.identity})"

    def combine(self, head_raw: np.ndarray, reader_raw: np.ndarray) -> np.ndarray:
        """The blended order, scored on the head's served scale (``on_scale``)."""
        head = with_prior(head_raw, self.head.prior)
        fused = blend(head, with_prior(reader_raw, self.reader.prior), self.head_share)
        return on_scale(fused, head)

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        return self.combine(self.head.score(question, passages), self.reader.score(question, passages))
