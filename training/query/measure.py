"""The held-out split's measure: the dense arm's recall@8 and MRR@10 over the question's family, the stored
passage vectors read by a question tower (or by the passage tower itself, the before); a passage holding the
row's quote or rule counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def ranks(
    vectors: np.ndarray, rows: list[dict[str, Any]], bank: np.ndarray, families: np.ndarray
) -> list[int | None]:
    """Each row's 1-based rank of its first answering passage among its family's by cosine (None: past 80)."""
    out: list[int | None] = []
    for row, v in zip(rows, vectors, strict=True):
        same = np.flatnonzero(families == families[row["label"]])
        order = same[np.argsort(-(bank[same] @ v), kind="stable")][:80].tolist()
        good = {row["label"], *row["also"]}
        out.append(next((i for i, p in enumerate(order, 1) if p in good), None))
    return out


def figures(found: list[int | None]) -> dict[str, float | int]:
    n = max(len(found), 1)
    return {
        "questions": len(found),
        "recall_at_8": round(sum(1 for k in found if k and k <= 8) / n, 3),
        "mrr_at_10": round(sum(1 / k for k in found if k and k <= 10) / n, 3),
        "recall_at_80": round(sum(1 for k in found if k) / n, 3),
    }


def measure(model: Any, data: Path) -> dict[str, Any]:
    """Figures on data/val.jsonl: the questions as asked, the real posts among them, and the card lanes of
    those that name cards."""
    rows = [json.loads(line) for line in (data / "val.jsonl").read_text().splitlines()]
    bank = np.load(data / "bank.npy")
    bank /= np.maximum(np.linalg.norm(bank, axis=1, keepdims=True), 1e-12)
    families = np.array([o["family"] for o in json.loads((data / "bank.json").read_text())])
    vectors = model.encode([r["anchor"] for r in rows], batch_size=32, normalize_embeddings=True)
    return by_lane(ranks(np.asarray(vectors), rows, bank, families), rows)


def by_lane(found: list[int | None], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The questions as asked (all, and the real posts among them) apart from their card lanes."""
    lane = [r.get("lane", "dense") for r in rows]
    own = [(k, r) for k, r, ln in zip(found, rows, lane, strict=True) if ln == "dense"]
    out = {"all": figures([k for k, _ in own]), "real_posts": figures([k for k, r in own if r["public"]])}
    cards = [k for k, ln in zip(found, lane, strict=True) if ln == "dense.cards"]
    if cards:  # the same questions' card lanes, where they name cards
        out["cards_lane"] = figures(cards)
    return out
