"""`rulesage train sentences`: build the rows from the answerer's asks, train the sentence reader
(resumable), choose how many of the selector's best sentences it reads and how much its logit weighs on
held-out asks, ship it with its card.

Each step skips what is already done: the rows when the work folder holds them, the training when the work
folder holds the final model of this recipe (a rerun after an interruption resumes from the newest
checkpoint), the held-out measure when it is stored for these weights. ``--fresh`` starts over.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from training.reader.recipe import Recipe
from training.runs import (
    add_recipe_options,
    add_work_options,
    recipe_options,
    record,
    train_once,
    work_folders,
)

log = logging.getLogger("training.sentences")

# the cross reader's recipe, for pairs a third its length: a sentence and its heading beside the question
DEFAULTS = Recipe(max_tokens=160, lr=5e-5, public_repeat=2, save_steps=40)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="rulesage train sentences",
        description="Train the sentence reader (a truncated cross-encoder over question/sentence pairs).",
    )
    p.add_argument("--asks", required=True, help="what `rulesage train answerer-asks` wrote")
    add_work_options(
        p, "artifacts/sentences", "services/answer/model/sentences", questions=False, card_only=False
    )
    add_recipe_options(p, DEFAULTS)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from rulesage.ingest.store import sha256_file
    from services.answer.sentences import SENTENCES_DIR
    from training.reader import ship as reader_ship
    from training.sentences import ship

    out = Path(args.out) if args.out else SENTENCES_DIR
    recipe = replace(DEFAULTS, **recipe_options(args, Recipe))
    work, data_dir, run_dir = work_folders(args)
    from training.reader.recipe import train
    from training.runs import kept, measured
    from training.sentences.data import build
    from training.sentences.measure import choose, measure

    counts = kept(data_dir / "counts.json", lambda: build(Path(args.asks), data_dir))
    log.info("rows: %s", counts["counts"])
    final, trained = train_once(run_dir, recipe, lambda: train(data_dir, run_dir, recipe))
    # the shipped form (fp16 weights) is what the held-out measure reads, through the served graph
    staged = reader_ship.stage(final, work / "staged", recipe.max_tokens)
    weights = sha256_file(staged / "model.safetensors")

    def measure_held_out() -> dict[str, Any]:
        return measured(lambda: measure(staged, data_dir / "val.jsonl", recipe.threads), weights=weights)

    held = kept(
        work / "held-out.json", measure_held_out, still=lambda stored: stored.get("weights") == weights
    )
    top, weight = choose(held)
    log.info(
        "held out: selector %s; chosen top %d weight %g: %s",
        held["selector"],
        top,
        weight,
        held["reader"][f"top{top}/w{weight:g}"],
    )
    if args.no_ship:
        return 0
    if weight == 0:
        log.warning("the selector alone picks the held-out quotes at least as well: nothing shipped")
        return 0
    args_given = sys.argv[1:] if argv is None else argv
    run = record(trained, "sentences", args_given, data=counts, held_out=held, top=top, weight=weight)
    shipped = reader_ship.ship(staged, out, run, {"top": top, "weight": weight}, ship.card_text)
    log.info("shipped %s (sha256 %s)", out / "model.safetensors", shipped["sha256"][:16])
    return 0
