"""Ship a trained question tower beside the passage tower it reads against (``rulesage/encoder/query/``, or
the card tower's ``rulesage/encoder/query-cards/``): fp16 weights and config, run.json (the recipe, the
data, the held-out measure, the passage tower's sha256, which serving checks) and a model card written
from the run and rulesage/eval/figures.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rulesage.eval import figures
from training.encoder import ship as encoder_ship

TABLES = {"query-tower": "query-card", "card-tower": "card-tower-card"}  # the figures table each card shows


def write_card(out: Path, run: dict[str, Any], figures_path: Path = figures.FIGURES) -> Path:
    card = out / "MODEL_CARD.md"
    card.write_text(card_text(run, figures_path))
    return card


def _figs(f: dict[str, Any]) -> str:
    return f"{f['recall_at_8']:.3f} / {f['mrr_at_10']:.3f} / {f['recall_at_80']:.3f}"


def _row(name: str, f: dict[str, Any]) -> str:
    return f"| {name} | {_figs(f['all'])} | {_figs(f['real_posts'])} |"


def card_text(run: dict[str, Any], figures_path: Path = figures.FIGURES) -> str:
    data = figures.load(figures_path)
    r, d, held = run["recipe"], run["data"], run["held_out"]
    other = {k: v for k, v in d["outcomes"].items() if k != "dropped-eval-overlap"}
    cards = kind(run) == "card-tower"
    what = (
        [
            "# rulesage/search-encoder, card tower",
            "",
            "The shipped search encoder tuned again to read a player's question, on the card lanes",
            "too, against the passage vectors its passage tower stored (which stay as they are). It",
            'reads one lane: "dense.cards", a question naming cards followed by what the cards say,',
            "through `Embed`; the question tower reads the question's other lanes. Written by the run",
            "that trained it; the figures come from rulesage/eval/figures.json.",
            "`RULESAGE_CARD_TOWER=shared` lets the question tower read the card lane again (the before).",
        ]
        if cards
        else [
            "# rulesage/search-encoder, question tower",
            "",
            "The shipped search encoder tuned again to read a player's question, against the passage vectors",
            "its passage tower stored (which stay as they are): the dense arm's and the aisle's question"
            " lanes,",
            "through `Embed`. Written by the run that trained it; the figures come from",
            "rulesage/eval/figures.json.",
            "`RULESAGE_QUERY_ENCODER=shared` lets the passage tower read the question again (the before).",
        ]
    )
    lines = [
        *what,
        "",
        f"- Rebuild: `{run['command']}`",
        f"- Weights: model.safetensors, fp16, sha256 `{run['sha256']}` ({run['bytes'] / 1e6:.1f} MB),"
        " exported to an fp32 ONNX graph at first use.",
        f"- Reads against: the passage tower `rulesage/encoder/model.safetensors`, sha256"
        f" `{run['passage_tower_sha256'][:16]}…` (serving refuses a tower trained against other weights);"
        f" the vectors of the embedding space `{d['space']}`.",
        "- Loss: the softmax of the question's cosines (scale"
        f" {r['scale']}) over every stored passage vector of its family, the answering passage the target and"
        " the question's other answering passages masked; sentence-transformers' trainer, batches of"
        f" {r['batch']}, lr {r['lr']}, warm-up {r['warmup']:.0%}, linear decay, {r['epochs']} epoch(s),"
        f" {r['max_tokens']} word pieces, seed {r['seed']}, {r['threads']} CPU threads.",
        f"- Steps: {run['steps']}, final training loss {run['train_loss']:.4f}; wall time"
        f" {run['wall_minutes']:.1f} min on {run['machine']}.",
        "",
        "## Data",
        "",
        f"- Questions read: {d['questions_read']} (data/questions/questions-*.jsonl; each row's source is a"
        " URL or `written`).",
        f"- Rows: {d['rows']['train']} train ({d['public_rows']['train']} real posts, each seen"
        f" {r['public_repeat']} time(s) an epoch), {d['rows']['val']} held out"
        f" ({d['public_rows']['val']} real posts; split by quote).",
        *(
            [
                f"- Of them card lanes (a question naming cards, followed by what they say, as the dense arm"
                f" searches it): {lanes['train']} train, {lanes['val']} held out."
            ]
            if (lanes := d.get("card_lane_rows"))
            else []
        ),
        "- Dropped by the evaluation guard (every evaluation question, quote, rule and source, and"
        f" eval/reserved.py's reserved questions): {d['outcomes'].get('dropped-eval-overlap', 0)}.",
        f"- Other outcomes: {json.dumps(other)}",
        f"- Bank: {d['bank']['passages']} passages of {d['bank']['families']} families; data sha256: bank"
        f" {d['sha256']['bank'][:16]}, train {d['sha256']['train'][:16]}, val {d['sha256']['val'][:16]}.",
        "",
        "## Held out (the dense arm alone, R@8 / MRR@10 / R@80)",
        "",
        "| question read by | held-out rows | the real posts among them |",
        "|---|---|---|",
        _row("the passage tower (before)", held["before"]),
        _row("this tower", held["after"]),
        *(
            [
                "",
                "The card lanes of the held-out questions that name cards"
                f" ({held['after']['cards_lane']['questions']} rows), R@8 / MRR@10 / R@80: the passage tower"
                f" {_figs(held['before']['cards_lane'])}, this tower {_figs(held['after']['cards_lane'])}.",
            ]
            if "cards_lane" in held["after"]
            else []
        ),
        "",
        *figures.card_section(data, TABLES[kind(run)]),
    ]
    return "\n".join(lines).rstrip() + "\n"


def kind(run: dict[str, Any]) -> str:
    """Which tower a run trained: "card-tower" or "query-tower", read from the command that rebuilds it."""
    return "card-tower" if run["command"].startswith("rulesage train card-tower") else "query-tower"


def ship(final: Path, out: Path, run: dict[str, Any]) -> dict[str, Any]:
    return encoder_ship.ship(final, out, run, card=write_card)
