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

import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from services.rerank.scorer import RuntimeOptions, length_batches, pad, session

log = logging.getLogger(__name__)

READER_DIR = Path(__file__).resolve().parent / "model" / "reader"
DEFAULT_DEPTH = 24
# candidates past the read depth sit this far under the lowest score read, in their fused order
BELOW = 100.0


def weights_sha(folder: Path) -> str:
    """Of the encoder's weights and the score layer's (reader.json): a retrained reader is a new graph."""
    h = hashlib.sha256()
    with (folder / "model.safetensors").open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(json.dumps(reader_config(folder).get("score"), sort_keys=True).encode())
    return h.hexdigest()


def export_graph(folder: Path = READER_DIR, models: Path | None = None) -> Path:
    """The reader's fp32 ONNX graph in the models folder, exported from its weights when missing (torch:
    the image exports it at build time, so no pod needs torch at start-up)."""
    from rulesage.config import models_dir
    from rulesage.embed import export_transformer

    models = models or models_dir()
    graph = models / f"cross-reader-{weights_sha(folder)[:12]}-fp32.onnx"
    if not graph.exists():
        log.info("exporting the cross reader to ONNX in %s", models)
        models.mkdir(parents=True, exist_ok=True)
        head = reader_config(folder)["score"]
        export_transformer(folder, graph, score=(head["weight"], float(head["bias"])))
    return graph


def reader_config(folder: Path) -> dict[str, Any]:
    path = folder / "reader.json"
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def is_reader(path: Path) -> bool:
    """A cross reader's folder (the encoder's weights, reader.json with the score layer), as opposed to the
    head's one ONNX file."""
    return path.is_dir() and (path / "model.safetensors").is_file() and "score" in reader_config(path)


def below_depth(read: np.ndarray, total: int) -> np.ndarray:
    """Scores of all ``total`` candidates from the logits of the first ``len(read)``: the candidates past
    the read depth sit below the lowest one read, in their fused order."""
    floor = float(read.min()) - BELOW
    tail = floor - np.arange(total - len(read), dtype=np.float32)
    return np.concatenate([read, tail]).astype(np.float32)


class PairTokens:
    """MiniLM word pieces of (question, candidate) pairs: [CLS] q [SEP] c [SEP] with segment ids, cut
    longest-first to ``max_tokens`` exactly as the training tokenizer cut them."""

    def __init__(self, max_tokens: int) -> None:
        from tokenizers import Tokenizer

        from rulesage.embed import package_model_dir

        tok = Tokenizer.from_file(str(package_model_dir() / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=max_tokens, strategy="longest_first")
        self.tokenizer = tok

    def pairs(self, question: str, texts: Sequence[str]) -> tuple[list[list[int]], list[list[int]]]:
        encs = self.tokenizer.encode_batch([(question, t) for t in texts])
        return [e.ids for e in encs], [e.type_ids for e in encs]


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
        graph = export_graph(folder, models)
        sha = graph.name.split("-")[2]
        self.session = session(graph, opts)
        self.tokens = PairTokens(self.max_tokens)
        prior = f"+fused-prior{self.prior:g}" if self.prior else ""
        self.identity = f"cross-reader@{sha}/top{self.depth}{prior}"

    def read(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """The cross reader's logit for each (question, text) pair."""
        ids, types = self.tokens.pairs(question, texts)
        out = np.zeros(len(ids), dtype=np.float32)
        for idx in length_batches([len(r) for r in ids], self.batch):
            tok, mask = pad([ids[i] for i in idx])
            seg, _ = pad([types[i] for i in idx])
            feeds = {"input_ids": tok, "attention_mask": mask, "token_type_ids": seg}
            out[idx] = self.session.run(None, feeds)[0]
        return out

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """Candidates arrive best first (the fused order) as the reader reads them (headings + window)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        return below_depth(self.read(question, passages[: self.depth]), len(passages))
