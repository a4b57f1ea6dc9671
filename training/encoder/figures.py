"""The encoder's measured figures as data: each condition's command and the figures `rulesage eval --json`
printed for it, kept in training/encoder/figures.json (the model card is written from it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.encoder.ship import FIGURES

# (column, the eval report's key): retrieval through the real mesh, then the ruling
COLUMNS = (
    ("R@8 reranked", "recall_at_8"),
    ("R@8 fused", "recall_at_8_fused"),
    ("R@80", "recall_at_80"),
    ("MRR@10 fused", "mrr_at_10"),
    ("MRR@10 reranked", "mrr_at_10_reranked"),
    ("answered correctly", "answered_correctly"),
)


def from_eval(report: dict[str, Any]) -> dict[str, Any]:
    """One set's row from an eval report: the columns, the dense arm's recall@8, and what fell back."""
    row: dict[str, Any] = {name: report.get(key) for name, key in COLUMNS}
    row["dense R@8"] = (report.get("per_arm") or {}).get("dense", {}).get("recall_at_8")
    degraded = report.get("degraded")
    row["degraded"] = sum(degraded.values()) if isinstance(degraded, dict) else degraded
    row["invalid citations"] = report.get("invalid_citations")
    return row


def record(name: str, command: str, reports: dict[str, Path], path: Path = FIGURES) -> dict[str, Any]:
    """Set condition ``name`` to ``command`` and the figures of its eval reports ({set name: report})."""
    data = json.loads(path.read_text()) if path.is_file() else {"conditions": {}}
    data["conditions"][name] = {
        "command": command,
        "figures": {s: from_eval(json.loads(Path(f).read_text())) for s, f in reports.items()},
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data
