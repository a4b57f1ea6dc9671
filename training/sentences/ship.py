"""Ship a trained sentence reader: fp16 weights, config and reader.json (read depth, weight, word pieces,
score layer) beside the answer service, and a model card written from the run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rulesage.ingest.store import sha256_file


def card_text(run: dict[str, Any]) -> str:
    r, d, held = run["recipe"], run["data"], run["held_out"]
    c = d["counts"]
    chosen = f"top{run['top']}/w{run['weight']:g}"
    rows = [
        f"| order | leads with the answer | quotes it | exact | real posts ({held['public_asks']}): leads"
        " | quotes |",
        "|---|---|---|---|---|---|",
    ]

    def row(name: str, key: str, fig: dict[str, float]) -> None:
        mark = "**" if key == chosen else ""
        pub = held["public"].get(key)
        tail = f"{pub['lead']:.3f} | {pub['quoted']:.3f}" if pub else "– | –"
        rows.append(
            f"| {mark}{name}{mark} | {fig['lead']:.3f} | {fig['quoted']:.3f} | {fig['exact']:.3f} | {tail} |"
        )

    row("the quote selector alone (model/answerer.json)", "selector", held["selector"])
    for key, fig in held["reader"].items():
        top, w = key.split("/w")
        name = f"reader over the selector's {top[3:]} best, " + (
            "its order alone" if float(w) >= 100 else f"weight {w}"
        )
        row(name, key, fig)
    mb = run["bytes"] / 1e6
    lines = [
        "# the sentence reader",
        "",
        "A cross-encoder reading the question and one shown sentence together (the sentence's nearest",
        f"heading, then the sentence): the tuned search encoder's first {r['layers']} layers, mean-pooled,",
        f"one logit out. It reads the quote selector's {run['top']} best sentences of an ask; the served",
        f"order is the selector's log-odds plus {run['weight']:g} times its logit (relative to the best",
        "read), the rest below in the selector's order. The answerability model still reads the selector's",
        "own scores.",
        "",
        f"- Rebuild: `{run['command']}`",
        f"- Weights: model.safetensors, fp16, sha256 `{run['sha256']}` ({mb:.1f} MB), exported to an fp32",
        "  ONNX graph in the models folder at first use.",
        "- Loss: sentence-transformers' cross-encoder MultipleNegativesRankingLoss (the answering sentence",
        f"  against {d['negatives_per_row']} hard negatives and {r['in_batch']} other questions' sentences),",
        f"  CrossEncoderTrainer, batches of {r['batch']} questions, lr {r['lr']}, warm-up {r['warmup']:.0%},",
        f"  {r['max_tokens']} word pieces cut longest-first, seed {r['seed']}, {r['threads']} CPU threads.",
        f"- Steps: {run['steps']} ({run['steps'] * r['batch']} rows of {run['rows']} a pass, real posts seen"
        f" {r['public_repeat']} times a pass), mean training loss of the last run"
        f" {run['train_loss']:.4f};",
        f"  wall time {run['wall_minutes']:.1f} min on {run['machine']}.",
        *(
            [
                "- Resumed: this run continued from a checkpoint of an earlier, shorter schedule of the",
                "  same recipe (the scheduler picked up at the longer schedule's step); a rebuild from",
                "  nothing runs one schedule over every step, so its weights differ from these.",
            ]
            if run.get("resumed")
            else []
        ),
        "",
        "## Data",
        "",
        f"- From `{d['asks']}`, written by `rulesage train answerer-asks --out {d['asks']}"
        " --train-share 1.0`",
        "  against the mesh on the whole shelf: the training questions of data/questions walked through the",
        "  real road, every row's source a URL or `written`, the evaluation guard applied there and again",
        "  here.",
        f"- Rows: {c.get('train', 0)} train ({c.get('train-public', 0)} real posts),"
        f" {c.get('val', 0)} held-out asks; dropped by the evaluation guard:"
        f" {c.get('dropped-eval-overlap', 0)}; silent asks (no quote): {c.get('silent', 0)};"
        f" no answering sentence shown: {c.get('no-answering-sentence-shown', 0)}.",
        "- A row: the answering sentence (the highest-cosine one holding the quote, or in the passage",
        f"  printing the rule) and the {d['negatives_per_row']} highest-cosine shown sentences holding",
        "  nothing, never the neighbour of an answering one.",
        f"- Data sha256: train {d['sha256']['train'][:16]}, val {d['sha256']['val'][:16]}.",
        "",
        "## The read depth and weight, chosen on held-out asks",
        "",
        f"{held['asks']} held-out asks whose shown passages hold an answering sentence (the careful",
        f'reader\'s held-out split, read by the served graph in {held["seconds"]:.0f} s). "Leads": the first',
        "sentence's passage holds the answer (what the evaluation counts as answered correctly); \"quotes",
        'it": it or the second sentence the ruling cites beside it does; "exact": the first sentence',
        "itself holds the quote. Chosen: the most often leading with the answer's passage and its very",
        "sentence (lead + exact), never quoting the answer's passage less often than the selector alone,",
        f"the shallowest and lightest within half a point of the best: **{chosen}**.",
        "",
        *rows,
    ]
    return "\n".join(lines).rstrip() + "\n"


def ship(staged: Path, out: Path, run: dict[str, Any]) -> dict[str, Any]:
    """Copy the staged fp16 weights and config to ``out`` with reader.json, run.json and the card."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("model.safetensors", "config.json"):
        shutil.copyfile(staged / name, out / name)
    weights = out / "model.safetensors"
    reader = {"top": run["top"], "weight": run["weight"], **json.loads((staged / "reader.json").read_text())}
    (out / "reader.json").write_text(json.dumps(reader) + "\n")
    run = {**run, "sha256": sha256_file(weights), "bytes": weights.stat().st_size}
    (out / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    (out / "MODEL_CARD.md").write_text(card_text(run))
    return run
