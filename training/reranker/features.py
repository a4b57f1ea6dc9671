"""Encoder outputs computed once: the frozen int8 encoder (rulesage.embed's graph of the tuned search encoder,
or of MiniLM off the shelf) over each window and each question, kept as float16 token states so the relevance
head trains without re-running the encoder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from services.rerank.scorer import Tokens, length_batches, pad


def encoder_path(variant: str, base: str = "minilm") -> Path:
    """rulesage.embed's ONNX export of the encoder (``tuned`` or ``minilm``) in the state folder (exported on
    first use)."""
    from rulesage.config import models_dir
    from rulesage.embed import export_onnx, onnx_name

    models = models_dir()
    path = models / onnx_name(base, variant)
    return path if path.exists() else export_onnx(models, variant, base)


class FeatureCache:
    def __init__(
        self,
        max_tokens: int,
        variant: str = "int8",
        batch: int = 16,
        threads: int = 2,
        question_tokens: int = 128,
        base: str = "minilm",
    ) -> None:
        from services.rerank.scorer import RuntimeOptions, session

        self.session = session(encoder_path(variant, base), RuntimeOptions(threads=threads))
        self.tokens = Tokens(max_tokens, question_tokens)
        self.batch = batch
        self.windows: dict[tuple[int, int], np.ndarray] = {}  # (family, position) -> (L, 384) float16

    def _run(self, rows: Sequence[Sequence[int]]) -> list[np.ndarray]:
        out: list[np.ndarray] = [np.zeros(0)] * len(rows)
        for idx in length_batches([len(r) for r in rows], self.batch):
            ids, mask = pad([rows[i] for i in idx])
            hidden = self.session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            for row, i in enumerate(idx):
                out[i] = hidden[row, : len(rows[i])].astype(np.float16)
        return out

    def add_windows(self, keys: Sequence[tuple[int, int]], texts: Sequence[str]) -> None:
        todo = [(k, t) for k, t in zip(keys, texts, strict=True) if k not in self.windows]
        if not todo:
            return
        states = self._run(self.tokens.windows([t for _, t in todo]))
        for (k, _), h in zip(todo, states, strict=True):
            self.windows[k] = h

    def questions(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self._run([self.tokens.question(t) for t in texts])


def batch_states(states: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Pad token states (L_i, D) into (B, L, D) float32 with a 0/1 mask."""
    width = max(s.shape[0] for s in states)
    out = np.zeros((len(states), width, states[0].shape[1]), dtype=np.float32)
    mask = np.zeros((len(states), width), dtype=np.int64)
    for i, s in enumerate(states):
        out[i, : s.shape[0]] = s
        mask[i, : s.shape[0]] = 1
    return out, mask
