"""The careful reader's towers: the encoder's top layers tuned beside the head, over cached lower states.

The head reads window states drawn once per passage (at ingest) and the question's states drawn per ask. A
tower is a copy of the encoder whose top ``layers`` layers train beside the head while the lower layers stay
frozen; their states are computed once per text (fp16), so a step runs only the top layers forwards and
back: "unfreeze the encoder's top layers over cached lower-layer states".

- The question side (``--question-layers``) changes nothing stored: it is served as a third graph,
  ``question-int8.onnx`` beside ``reranker-int8.onnx``, named in ``reranker.json``.
- The window side (``--window-layers``) becomes the merged graph's encoder half, so every stored window state
  is drawn again (the states' key is that half's sha256); the question then keeps the frozen encoder, served
  as ``question-int8.onnx``.

Either is exported whole and quantised to int8 as the window encoder is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

LAYERS = 6  # MiniLM-L6


def pad(rows: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token states (L_i, D) padded into (B, L, D) with a 0/1 mask, keeping their gradient (the torch
    twin of ``features.batch_states``)."""
    padded = torch.nn.utils.rnn.pad_sequence(list(rows), batch_first=True)
    lengths = torch.tensor([r.shape[0] for r in rows])
    mask = (torch.arange(padded.shape[1]) < lengths[:, None]).long()
    return padded, mask


class Tower(nn.Module):
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
        """Each row's states below the tuned layers, one row a pass as served (fp16, (L, 384))."""
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
        """The tuned layers over a padded batch of lower states: each row's final states (1, L_i, 384)."""
        hidden, mask = pad([torch.from_numpy(s.astype(np.float32)) for s in states])
        ext, _ = self.bert._create_attention_masks(mask, None, hidden, None, None)
        for layer in self.bert.encoder.layer[self.cut :]:
            out = layer(hidden, attention_mask=ext)
            hidden = out[0] if isinstance(out, tuple) else out
        return [hidden[i : i + 1, : s.shape[0]] for i, s in enumerate(states)]

    def save(self, folder: Path) -> None:
        """The whole encoder (config.json + model.safetensors), for the ONNX export."""
        folder.mkdir(parents=True, exist_ok=True)
        self.bert.save_pretrained(str(folder), safe_serialization=True)


SIDES = ("question", "window")


def export(tower: Tower, work: Path, side: str = "question") -> Path:
    """The tuned encoder as a served graph, ``{side}-int8.onnx``: fp32 ONNX (``last_hidden_state``), then int8
    as the window encoder is (``rulesage.embed``'s export and dynamic quantisation)."""
    from rulesage.embed import _export

    if side not in SIDES:
        raise ValueError(f"a tower reads one of {SIDES}, not {side!r}")
    weights = work / f"{side}-tower"
    tower.save(weights)
    for stale in work.glob(f"{side}-*.onnx"):
        stale.unlink()
    return _export(weights, work, lambda v: f"{side}-{v}.onnx", "int8")
