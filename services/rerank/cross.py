"""The cross reader: a true cross-encoder that reads the question and a candidate together.

The model is the tuned search encoder's first layers over the pair, its token states mean-pooled, and one
linear score (its weights in ``reader.json``), trained on the road's hard
negatives (``rulesage train reader``; model/reader/MODEL_CARD.md). It ships as fp16 weights (the 50 MB
budget) and is exported once to an fp32 ONNX graph in the models folder (named by the weights' sha256, so a
retrained file is exported anew); fp32 keeps a pair's score independent of its batch mates, so pairs are read
in length-sorted batches.

Only the first ``depth`` candidates of the fused order are read (``reader.json``): a pair costs a forward
pass, and the election's top already holds nearly every answer. The rest keep the fused order below them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rulesage.pairs import (
    PairTokens,
    export_graph,
    read_pairs,
    reader_config,
)
from services.rerank.scorer import RuntimeOptions, session

log = logging.getLogger(__name__)

READER_DIR = Path(__file__).resolve().parent / "model" / "reader"
DEFAULT_DEPTH = 24
# candidates past the read depth sit this far under the lowest score read, in their fused order
BELOW = 100.0


def below_depth(read: np.ndarray, total: int) -> np.ndarray:
    """Scores of all ``total`` candidates from the logits of the first ``len(read)``: the candidates past
    the read depth sit below the lowest one read, in their fused order."""
    floor = float(read.min()) - BELOW
    tail = floor - np.arange(total - len(read), dtype=np.float32)
    return np.concatenate([read, tail]).astype(np.float32)


class CrossScorer:
    """Scores the fused order's first ``depth`` candidates by the cross reader; blended with the fused order
    by ``prior`` (the servicer's ``score - prior * ln(1 + position)``)."""

    reads_headings = True

    def __init__(self, folder: Path, opts: RuntimeOptions, models: Path | None = None) -> None:
        cfg = reader_config(folder)
        self.depth = int(cfg.get("depth", DEFAULT_DEPTH))
        self.prior = float(cfg.get("fused_prior", 0.0))
        # > 0: the head's order is fused with this reader's at that weight (services/rerank/blend.py)
        self.head_share = float(cfg.get("head_share", 0.0))
        self.max_tokens = min(opts.max_tokens, int(cfg.get("max_tokens", opts.max_tokens)))
        self.batch = opts.batch
        graph = export_graph(folder, "cross-reader", models)
        sha = graph.name.split("-")[2]
        self.session = session(graph, opts)
        self.tokens = PairTokens(self.max_tokens)
        prior = f"+fused-prior{self.prior:g}" if self.prior else ""
        self.identity = f"cross-reader@{sha}/top{self.depth}{prior}"

    def read(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """The cross reader's logit for each (question, text) pair."""
        return read_pairs(self.session, self.tokens, question, texts, self.batch)

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """Candidates arrive best first (the fused order) as the reader reads them (headings + window)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        return below_depth(self.read(question, passages[: self.depth]), len(passages))
