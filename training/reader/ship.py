"""Ship a trained cross reader: fp16 weights, config and reader.json (read depth, fused prior, word pieces)
beside the rerank service, and a model card written from the run (recipe, data counts, guards, the held-out
choice, sha256, wall time, the command) and from the project's figures file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rulesage.eval import figures
from rulesage.ingest.store import sha256_file

FIGURES = figures.FIGURES
TABLE = "reader"  # the figures file's table the card shows (the README shows it too)


def stage(final: Path, staged: Path, max_tokens: int) -> Path:
    """The trained cross-encoder in its shipped form: the encoder's weights as fp16 safetensors with its
    config, and reader.json holding the score layer (384 weights and a bias) and the word pieces read."""
    import torch
    from safetensors.torch import save_file
    from sentence_transformers.cross_encoder import CrossEncoder

    model = CrossEncoder(str(final), device="cpu")
    bert, linear = model[0].auto_model, model[2].linear
    staged.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in bert.state_dict().items()}
    save_file(state, str(staged / "model.safetensors"), metadata={"format": "pt"})
    (staged / "model.safetensors").chmod(0o644)  # read by the image's unprivileged user
    config = bert.config.to_dict()
    config["torch_dtype"] = "float16"
    (staged / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    reader = {
        "max_tokens": max_tokens,
        "score": {
            "weight": [round(float(x), 7) for x in linear.weight.detach()[0]],
            "bias": round(float(linear.bias.detach()[0]), 7),
        },
    }
    (staged / "reader.json").write_text(json.dumps(reader) + "\n")
    return staged


def write_card(out: Path, run: dict[str, Any], figures_path: Path = FIGURES) -> Path:
    card = out / "MODEL_CARD.md"
    card.write_text(card_text(run, figures_path))
    return card


def card_text(run: dict[str, Any], figures_path: Path = FIGURES) -> str:
    data = figures.load(figures_path)
    r, d, held = run["recipe"], run["data"], run["held_out"]
    dropped = d["outcomes"].get("dropped-eval-overlap", 0)
    other = {k: v for k, v in d["outcomes"].items() if k != "dropped-eval-overlap"}
    share = float(run.get("head_share", 0.0))
    chosen = f"top{run['depth']}/prior{run['fused_prior']:g}" + (f"/head{share:g}" if share else "")
    public = held.get("public", {"questions": 0, "figures": {}})
    rows = [
        f"| order | R@8 | MRR@10 | real posts ({public['questions']}): R@8 | MRR@10 |",
        "|---|---|---|---|---|",
    ]

    def row(name: str, key: str, fig: dict[str, float]) -> None:
        mark = "**" if key == chosen else ""
        pub = public["figures"].get(key)
        tail = f"{pub['recall_at_8']:.3f} | {pub['mrr_at_10']:.3f}" if pub else "– | –"
        rows.append(f"| {mark}{name}{mark} | {fig['recall_at_8']:.3f} | {fig['mrr_at_10']:.3f} | {tail} |")

    row("fused (the stand-in election)", "fused", held["fused"])
    if "head" in held:
        row("the head (services/rerank/model/reranker-int8.onnx)", "head", held["head"])
    for key, fig in held["reader"].items():
        row(f"reader, {key.replace('/', ', ')}", key, fig)
    at = f"top{run['depth']}/prior{run['fused_prior']:g}/"
    for key, fig in held.get("blend", {}).items():  # the blends at the chosen depth and prior
        if key.startswith(at):
            row(f"reader, {key.replace('/', ', ')} (RRF with the head's order)", key, fig)
    mb = run["bytes"] / 1e6
    lines = [
        "# the cross reader",
        "",
        "A true cross-encoder: the question and a candidate (its two nearest headings, then its",
        f"1,200-character window) read together by the tuned search encoder's first {r['layers']} layers,",
        f"one logit out. It reads the fused order's first {run['depth']} candidates; its order is",
        f"`logit - {run['fused_prior']:g} · ln(1 + fused position)`, the rest keeping the fused order below.",
        (
            f"The service fuses that order with the head's by rank (RRF, k = 60, the head's share {share:g};"
            " services/rerank/blend.py) and serves the head's scores re-dealt to the blended order."
            if share
            else "The service serves that order alone."
        ),
        "Written by the run that trained it; the whole-shelf figures come from rulesage/eval/figures.json.",
        "",
        f"- Rebuild: `{run['command']}`",
        f"- Weights: model.safetensors, fp16, sha256 `{run['sha256']}` ({mb:.1f} MB), exported to an fp32",
        "  ONNX graph in the models folder at first use (fp32: a pair's score does not depend on its batch",
        "  mates).",
        f"- Base: the shipped search encoder (rulesage/encoder), its first {r['layers']} layers, and",
        "  MiniLM's tokenizer; the one-logit head starts untrained.",
        *loss_lines(r, d),
        f"  CrossEncoderTrainer, batches of {r['batch']} questions, lr {r['lr']}, warm-up {r['warmup']:.0%},",
        f"  linear decay, {r['max_tokens']} word pieces cut longest-first, seed {r['seed']},"
        f" {r['threads']} CPU threads.",
        f"- Real players' posts: {d['outcomes'].get('provenance-public-qa', 0)} of the questions read, each"
        f" row of one seen {r.get('public_repeat', 1)} time(s) an epoch (written rows once).",
        f"- Steps: {run['steps']} ({run['steps'] * r['batch']} rows of {run['rows']}), final training loss"
        f" {run['train_loss']:.4f}; wall time {run['wall_minutes']:.1f} min on {run['machine']}.",
        "",
        "## Data",
        "",
        f"- Questions read: {d['questions_read']} (data/questions/questions-*.jsonl; each row's source is a",
        "  URL or `written`).",
        f"- Rows: {d['rows'].get('train', 0)} train, {d['rows'].get('val', 0)} held out (split by quote).",
        "- Dropped by the evaluation guard (every evaluation question, quote, rule and source, and",
        f"  eval/reserved.py's reserved questions): {dropped}"
        + ("." if dropped else " (such rows are deleted from data/questions: none were left to drop)."),
        f"- Other outcomes: {json.dumps(other)}",
        "- Hard negatives from the election (full text + dense, RRF) in the space",
        f"  `{d.get('space', '?')}`: {d['negatives_per_row']} drawn among the first"
        f" {d['negative_depth']} passages that do not hold the quote.",
        f"- Data sha256: train {d['sha256']['train'][:16]}, val {d['sha256']['val'][:16]}.",
        "",
        "## The read depth and the prior, chosen on held-out questions",
        "",
        f"{held['questions']} held-out training questions (never an evaluation set), the stand-in election's",
        f"top 40, read by the served graph ({held['seconds']:.0f} s); chosen by MRR@10 over all of them, the",
        f"shallowest depth within half a point of the best: **{chosen}**. Real players' posts among them are",
        "reported apart; the choice does not look at them alone.",
        "",
        *rows,
        "",
        *figures.card_section(data, TABLE),
    ]
    return "\n".join(lines).rstrip() + "\n"


def loss_lines(r: dict[str, Any], d: dict[str, Any]) -> list[str]:
    """The card's loss lines: the answering window against hard negatives, or the head distilled."""
    if not r.get("teacher"):
        return [
            "- Loss: sentence-transformers' cross-encoder MultipleNegativesRankingLoss (the answering",
            f"  window against {d['negatives_per_row']} hard negatives and {r['in_batch']} other questions'"
            " windows),",
        ]
    t = d["distil"]
    return [
        "- Loss: sentence-transformers' cross-encoder ListNetLoss, distilling the shipped head",
        f"  (`{t['teacher']}`) over the served candidates of `{t['pools']}`: {t['docs']} of each question's",
        f"  first {t['depth']} (the answer's holders, the head's best others, a seeded draw), labelled by",
        f"  the head's score plus {t['bonus']:g} on the answer, divided by {t['temperature']:g}; rows"
        f" {json.dumps(t['rows'])}, sha256 {t['sha256'][:16]},",
    ]


def ship(
    staged: Path,
    out: Path,
    run: dict[str, Any],
    served: dict[str, Any],
    card: Callable[[dict[str, Any]], str],
) -> dict[str, Any]:
    """Copy the staged fp16 weights and config to ``out`` with reader.json (``served``, what the service
    reads beside the score layer), run.json and the card ``card`` writes from the run."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json"):
        shutil.copyfile(staged / name, out / name)
    weights = out / "model.safetensors"
    reader = {**served, **json.loads((staged / "reader.json").read_text())}
    (out / "reader.json").write_text(json.dumps(reader) + "\n")
    run = {**run, "sha256": sha256_file(weights), "bytes": weights.stat().st_size}
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    (out / "MODEL_CARD.md").write_text(card(run))
    return run
