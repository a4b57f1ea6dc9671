"""The careful reader's question tower: the encoder's top layers tuned, for the question side only.

The head reads window states the frozen int8 encoder drew at ingest, and the question's states drawn per ask.
Only the question side can change without redrawing the shelf's stored states, so here a copy of the encoder
reads the question with its top ``layers`` layers trained beside the head. The lower layers stay frozen and
their states are computed once per question (fp16), so a step runs only the top layers forwards and back:
the issue's "unfreeze the encoder's top layers over cached lower-layer states", on the side a player writes.

Served as a third graph (``question-int8.onnx`` beside ``reranker-int8.onnx``, named in ``reranker.json``):
the whole tuned encoder, quantised to int8 as the window encoder is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

LAYERS = 6  # MiniLM-L6


class QuestionTower(nn.Module):
    def __init__(self, weights: Path, layers: int) -> None:
        super().__init__()
        from transformers import AutoModel

        if not 1 <= layers <= LAYERS:
            raise ValueError(f"tuned layers must be 1..{LAYERS}, not {layers}")
        self.bert = AutoModel.from_pretrained(
            str(weights), local_files_only=True, dtype=torch.float32, attn_implementation="eager"
        )
        self.cut = LAYERS - layers
        for p in self.bert.parameters():
            p.requires_grad_(False)
        for layer in self.bert.encoder.layer[self.cut :]:
            for p in layer.parameters():
                p.requires_grad_(True)

    def trained(self) -> list[nn.Parameter]:
        return [p for p in self.parameters() if p.requires_grad]

    @torch.no_grad()
    def lower(self, rows: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Each question's states below the tuned layers, one question a pass (fp16, (L, 384))."""
        self.bert.eval()
        out = []
        for row in rows:
            ids = torch.tensor([list(row)], dtype=torch.long)
            hidden = self.bert(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                token_type_ids=torch.zeros_like(ids),
                output_hidden_states=True,
            ).hidden_states[self.cut]
            out.append(hidden[0].numpy().astype(np.float16))
        return out

    def upper(self, states: Sequence[np.ndarray]) -> list[torch.Tensor]:
        """The tuned layers over a padded batch of lower states: each question's final states
        (1, L_i, 384)."""
        width = max(s.shape[0] for s in states)
        hidden = torch.zeros(len(states), width, states[0].shape[1])
        mask = torch.zeros(len(states), width, dtype=torch.long)
        for i, s in enumerate(states):
            hidden[i, : s.shape[0]] = torch.from_numpy(s.astype(np.float32))
            mask[i, : s.shape[0]] = 1
        ext, _ = self.bert._create_attention_masks(mask, None, hidden, None, None)
        for layer in self.bert.encoder.layer[self.cut :]:
            out = layer(hidden, attention_mask=ext)
            hidden = out[0] if isinstance(out, tuple) else out
        return [hidden[i : i + 1, : s.shape[0]] for i, s in enumerate(states)]

    def save(self, folder: Path) -> None:
        """The whole encoder (config.json + model.safetensors), for the ONNX export."""
        folder.mkdir(parents=True, exist_ok=True)
        self.bert.save_pretrained(str(folder), safe_serialization=True)


def export(tower: QuestionTower, work: Path) -> Path:
    """The tuned encoder as the served graph: fp32 ONNX (``last_hidden_state``), then int8 as the window
    encoder is (``rulesage.embed``'s export and dynamic quantisation)."""
    from rulesage.embed import _export

    weights = work / "question-tower"
    tower.save(weights)
    for stale in work.glob("question-*.onnx"):
        stale.unlink()
    return _export(weights, work, lambda v: f"question-{v}.onnx", "int8")
