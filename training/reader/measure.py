"""The cross reader's order on held-out questions: the val rows' pools (the stand-in election's top 40,
labelled by which passages hold the quote), read by the served graph (the fp32 ONNX export), at each read
depth and fused prior, beside the shipped head's order and their blends at each head share. The depth, the
prior and the share shipped are chosen here, never on an evaluation set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

DEPTHS = (16, 24, 32, 40)
PRIORS = (0.0, 0.5, 1.0, 2.0)
# the head order's weight in a blend with the reader's (services/rerank/blend.py)
HEAD_SHARES = (0.25, 0.5, 0.75)


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


def _head_orders(head: Path, rows: list[dict[str, Any]], threads: int) -> list[np.ndarray]:
    """The head's served order over each pool's windows (its score less its own fused prior)."""
    from services.rerank.scorer import RuntimeOptions, TrainedScorer, with_prior

    scorer = TrainedScorer(head, RuntimeOptions(threads=threads))
    return [with_prior(scorer.score(r["question"], r["pool_windows"]), scorer.prior) for r in rows]


def measure(model: Path, val: Path, limit: int, threads: int = 2, head: Path | None = None) -> dict[str, Any]:
    """Figures of the fused order, of the reader at every (depth, prior) and, given the head's model, of
    the head and of their blends at every head share; ``limit`` val rows at most. Rows that are real
    players' posts are also reported apart (``public``)."""
    import tempfile

    from services.rerank.blend import blend
    from services.rerank.cross import CrossScorer, below_depth
    from services.rerank.scorer import RuntimeOptions, with_prior

    rows = [json.loads(line) for line in val.read_text().splitlines() if line.strip()][:limit]
    rows = [r for r in rows if any(r["labels"])]
    with tempfile.TemporaryDirectory() as tmp:
        scorer = CrossScorer(model, RuntimeOptions(threads=threads, batch=16), Path(tmp))
        read = [scorer.read(r["question"], r["pool"][: max(DEPTHS)]) for r in rows]
    heads = _head_orders(head, rows, threads) if head and all("pool_windows" in r for r in rows) else None
    labels = [r["labels"] for r in rows]
    public = [i for i, r in enumerate(rows) if r.get("public")]
    cells: dict[str, list[np.ndarray]] = {
        "fused": [-np.arange(len(r["pool"]), dtype=np.float32) for r in rows]
    }
    if heads is not None:
        cells["head"] = heads
    for depth in DEPTHS:
        for prior in PRIORS:
            # the reader's served order: its first ``depth`` logits, the rest below in the fused order
            orders = [
                with_prior(below_depth(x[:depth], len(r["pool"])), prior)
                for r, x in zip(rows, read, strict=True)
            ]
            cells[f"top{depth}/prior{prior:g}"] = orders
            for share in HEAD_SHARES if heads is not None else ():
                cells[f"top{depth}/prior{prior:g}/head{share:g}"] = [
                    blend(h, o, share) for h, o in zip(heads or [], orders, strict=True)
                ]
    figures = {key: order_figures(orders, labels) for key, orders in cells.items()}
    on_public = {
        key: order_figures([orders[i] for i in public], [labels[i] for i in public])
        for key, orders in cells.items()
    }
    reader = {k: v for k, v in figures.items() if k.count("/") == 1}
    out: dict[str, Any] = {"questions": len(rows), "fused": figures["fused"], "reader": reader}
    if heads is not None:
        out["head"] = figures["head"]
        out["blend"] = {k: v for k, v in figures.items() if k.count("/") == 2}
    out["public"] = {"questions": len(public), "figures": on_public}
    return out


TOLERANCE = 0.005  # MRR@10 a shallower depth may give up: each candidate read costs a forward pass


def choose(figures: dict[str, Any]) -> tuple[int, float, float]:
    """The shallowest read depth whose best (prior, head share) comes within ``TOLERANCE`` of the best
    MRR@10, with that prior and head share (recall@8 breaks ties, then the smaller prior and share).
    Head share 0 is the reader alone."""
    cells: dict[tuple[int, float, float], dict[str, float]] = {}
    for key, fig in {**figures["reader"], **figures.get("blend", {})}.items():
        parts = key.split("/")
        share = float(parts[2][4:]) if len(parts) > 2 else 0.0
        cells[(int(parts[0][3:]), float(parts[1][5:]), share)] = fig
    if not cells:
        raise ValueError("no reader figures")
    best = max(fig["mrr_at_10"] for fig in cells.values())
    for depth in sorted({d for d, _, _ in cells}):
        here = {(p, h): f for (d, p, h), f in cells.items() if d == depth}
        (prior, share), fig = max(
            here.items(),
            key=lambda kv: (kv[1]["mrr_at_10"], kv[1]["recall_at_8"], -kv[0][0], -kv[0][1]),
        )
        if fig["mrr_at_10"] >= best - TOLERANCE:
            return depth, prior, share
    raise AssertionError("unreachable: the best cell's depth qualifies")


def beats_head(figures: dict[str, Any], chosen: dict[str, float]) -> bool:
    """Whether the chosen cell orders the held-out questions better than the shipped head alone (MRR@10,
    then recall@8); True when the head was not measured."""
    head = figures.get("head")
    if not head:
        return True
    return (chosen["mrr_at_10"], chosen["recall_at_8"]) > (head["mrr_at_10"], head["recall_at_8"])
