"""Cross-encoders over (question, text) pairs, as the services serve them: a BERT folder (fp16 weights and
its config) with one linear score over the mean of the pair's token states (``reader.json``), exported once
to an fp32 ONNX graph in the models folder, named by the weights' sha256 so a retrained file is exported
anew. The rerank service reads (question, window) pairs with one (``services/rerank/cross.py``), the
answer service (question, sentence) pairs with another (``services/answer/sentences.py``).

fp32 keeps a pair's score independent of its batch mates, so pairs are read in length-sorted batches. The
ONNX Runtime session options every service's models run under live here too (``ort_session``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def reader_config(folder: Path) -> dict[str, Any]:
    path = folder / "reader.json"
    return dict(json.loads(path.read_text())) if path.is_file() else {}


def is_pair_reader(path: Path) -> bool:
    """A pair reader's folder: the encoder's weights and reader.json with the score layer."""
    return path.is_dir() and (path / "model.safetensors").is_file() and "score" in reader_config(path)


def weights_sha(folder: Path) -> str:
    """Of the encoder's weights and the score layer's (reader.json): a retrained reader is a new graph."""
    h = hashlib.sha256()
    with (folder / "model.safetensors").open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(json.dumps(reader_config(folder).get("score"), sort_keys=True).encode())
    return h.hexdigest()


def export_graph(folder: Path, kind: str, models: Path | None = None) -> Path:
    """The reader's fp32 ONNX graph in the models folder (``KIND-SHA12-fp32.onnx``), exported from its
    weights when missing (torch: the image exports it at build time, so no pod needs torch at start-up)."""
    from rulesage.config import models_dir
    from rulesage.embed import export_transformer

    models = models or models_dir()
    graph = models / f"{kind}-{weights_sha(folder)[:12]}-fp32.onnx"
    if not graph.exists():
        log.info("exporting %s to ONNX in %s", kind, models)
        models.mkdir(parents=True, exist_ok=True)
        head = reader_config(folder)["score"]
        export_transformer(folder, graph, score=(head["weight"], float(head["bias"])))
    return graph


class PairTokens:
    """MiniLM word pieces of (question, text) pairs: [CLS] q [SEP] t [SEP] with segment ids, cut
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


def read_pairs(
    session: Any, tokens: PairTokens, question: str, texts: Sequence[str], batch: int
) -> np.ndarray:
    """The reader's logit for each (question, text) pair, through an ONNX Runtime session of its graph."""
    ids, types = tokens.pairs(question, texts)
    out = np.zeros(len(ids), dtype=np.float32)
    for idx in length_batches([len(r) for r in ids], batch):
        tok, mask = pad([ids[i] for i in idx])
        seg, _ = pad([types[i] for i in idx])
        feeds = {"input_ids": tok, "attention_mask": mask, "token_type_ids": seg}
        out[idx] = session.run(None, feeds)[0]
    return out


def ort_session(
    model: Path | bytes,
    threads: int = 0,
    arena: bool = False,
    providers: Sequence[str] = ("CPUExecutionProvider",),
) -> Any:
    """An ONNX Runtime session as the services run one (``threads`` 0: every core)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or (os.cpu_count() or 2)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # batches change shape every call: ORT's growing CPU arena kept the RSS climbing under load (+14 % over
    # minutes 1-5 of the load bench); allocating per run keeps memory flat. Index-time work (``arena``)
    # keeps it: the process ends or drops the session when done.
    so.enable_cpu_mem_arena = arena
    # no busy-waiting after a run: on a small machine the spinning threads took the cores the next
    # request's arms needed (arms+fusion p50 24 ms alone, 36 ms right after a rerank)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(
        model if isinstance(model, bytes) else str(model), so, providers=list(providers)
    )
