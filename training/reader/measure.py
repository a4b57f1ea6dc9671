"""The cross reader's order on held-out questions: the val rows' pools (the stand-in election's top 40,
labelled by which passages hold the quote), read by the served graph (the fp32 ONNX export), at each read
depth and fused prior. The depth and the prior shipped are chosen here, never on an evaluation set."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

DEPTHS = (16, 24, 32, 40)
PRIORS = (0.0, 0.5, 1.0, 2.0)


def order_figures(scores: list[np.ndarray], labels: list[list[int]]) -> dict[str, float]:
    r8 = mrr = 0.0
    for s, lab in zip(scores, labels, strict=True):
        order = sorted(range(len(s)), key=lambda i: (-float(s[i]), i))
        hits = [k for k, i in enumerate(order) if lab[i]]
        first = hits[0] if hits else len(order)
        r8 += first < 8
        mrr += 1.0 / (first + 1) if first < 10 else 0.0
    n = max(len(scores), 1)
    return {"recall_at_8": round(r8 / n, 3), "mrr_at_10": round(mrr / n, 3)}


def measure(model: Path, val: Path, limit: int, threads: int = 2) -> dict[str, Any]:
    """Figures of the fused order and of the reader at every (depth, prior); ``limit`` val rows at most."""
    import tempfile

    from services.rerank.cross import CrossScorer
    from services.rerank.scorer import RuntimeOptions

    rows = [json.loads(line) for line in val.read_text().splitlines() if line.strip()][:limit]
    rows = [r for r in rows if any(r["labels"])]
    with tempfile.TemporaryDirectory() as tmp:
        scorer = CrossScorer(model, RuntimeOptions(threads=threads, batch=16), Path(tmp))
        read = [scorer.read(r["question"], r["pool"][: max(DEPTHS)]) for r in rows]
    labels = [r["labels"] for r in rows]
    fused = [-np.arange(len(r["pool"]), dtype=np.float32) for r in rows]
    out: dict[str, Any] = {"questions": len(rows), "fused": order_figures(fused, labels), "reader": {}}
    for depth in DEPTHS:
        for prior in PRIORS:
            scores = []
            for r, logits in zip(rows, read, strict=True):
                top = [float(x) - prior * math.log1p(i) for i, x in enumerate(logits[:depth])]
                floor = min(top) - 100.0
                tail = [floor - i - prior * math.log1p(depth + i) for i in range(len(r["pool"]) - depth)]
                scores.append(np.asarray(top + tail, dtype=np.float32))
            out["reader"][f"top{depth}/prior{prior:g}"] = order_figures(scores, labels)
    return out


TOLERANCE = 0.005  # MRR@10 a shallower depth may give up: each candidate read costs a forward pass


def choose(figures: dict[str, Any]) -> tuple[int, float]:
    """The shallowest read depth whose best prior comes within ``TOLERANCE`` of the best MRR@10 (recall@8
    breaks ties between priors), with that prior."""
    cells = {
        (int(key.split("/")[0][3:]), float(key.split("/")[1][5:])): fig
        for key, fig in figures["reader"].items()
    }
    best = max(fig["mrr_at_10"] for fig in cells.values())
    for depth in sorted({d for d, _ in cells}):
        here = {p: f for (d, p), f in cells.items() if d == depth}
        prior, fig = max(here.items(), key=lambda kv: (kv[1]["mrr_at_10"], kv[1]["recall_at_8"], -kv[0]))
        if fig["mrr_at_10"] >= best - TOLERANCE:
            return depth, prior
    raise ValueError("no reader figures")
