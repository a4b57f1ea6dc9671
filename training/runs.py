"""A trainer run that survives interruption: resumed from the work folder's newest checkpoint, each step's
loss logged, and the wall time kept over every run of one training (wall.json), for the card. Beside it,
what every recipe's command shares: a step's result kept in the work folder (``kept``) and the record of
a shipped run (``record``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shlex
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def checkpoints(work: Path) -> list[Path]:
    return sorted(work.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))


def train_resumably(trainer: Any, work: Path) -> dict[str, Any]:
    """Run a transformers (or sentence-transformers) trainer writing its checkpoints to ``work``, from the
    newest one when there is one; returns the run's record (steps, losses, times, whether it resumed)."""
    from transformers import TrainerCallback

    started = time.perf_counter()
    # wall time over every run of this training (a resumed run adds to what the earlier ones spent)
    wall_file = work / "wall.json"
    resume = bool(checkpoints(work))
    before = json.loads(wall_file.read_text())["seconds"] if resume and wall_file.is_file() else 0.0

    def wall() -> float:
        return before + time.perf_counter() - started

    class Timing(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                log.info(
                    "step %d/%d loss %.4f (%.1f s since start)",
                    state.global_step,
                    state.max_steps,
                    logs["loss"],
                    time.perf_counter() - started,
                )
            work.mkdir(parents=True, exist_ok=True)
            wall_file.write_text(json.dumps({"seconds": round(wall(), 1), "step": state.global_step}))

    trainer.add_callback(Timing())
    result = trainer.train(resume_from_checkpoint=True if resume else None)
    return {
        "steps": int(result.global_step),
        "train_loss": float(result.training_loss),
        "seconds_this_run": round(time.perf_counter() - started, 1),
        "wall_minutes": round(wall() / 60, 1),
        "resumed": resume,
        "losses": [{"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e],
    }


def kept(
    path: Path,
    make: Callable[[], dict[str, Any]],
    still: Callable[[dict[str, Any]], bool] = lambda stored: True,
) -> dict[str, Any]:
    """What ``path`` holds while ``still`` says it stands (a rerun skips the step); else ``make()``,
    written there first."""
    if path.is_file():
        stored: dict[str, Any] = json.loads(path.read_text())
        if still(stored):
            return stored
    made = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(made, indent=1) + "\n")
    return made


def measured(measure: Callable[[], dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A held-out measure's figures with the seconds it took and ``extra`` (the weights it read, say)."""
    started = time.perf_counter()
    figures = measure()
    figures["seconds"] = round(time.perf_counter() - started, 1)
    return {**figures, **extra}


def record(trained: dict[str, Any], model: str, argv: Sequence[str], **chosen: Any) -> dict[str, Any]:
    """A shipped run's record for its card: the training's (its losses thinned to about 20), what the
    command chose, the command that rebuilds it (``rulesage train MODEL ARGV``) and the machine."""
    return {
        **trained,
        "losses": trained["losses"][:: max(len(trained["losses"]) // 20, 1)],
        **chosen,
        "command": shlex.join(["rulesage", "train", model, *argv]),
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.python_implementation()}"
        f" {platform.python_version()}",
    }


def weighted_rows(rows: Any, public_repeat: int, seed: int) -> Any:
    """A training dataset's loss columns only (the ``public`` mark dropped), each real post repeated
    ``public_repeat`` times and the whole shuffled with ``seed``: real posts are what the product is measured
    on, and a few hundred of them sit among thousands of written questions."""
    from datasets import concatenate_datasets

    if "public" not in rows.column_names:
        return rows
    if public_repeat > 1:
        public = rows.filter(lambda r: bool(r["public"]))
        if len(public):
            rows = concatenate_datasets([rows] + [public] * (public_repeat - 1))
            rows = rows.shuffle(seed=seed)
    return rows.remove_columns("public")


def trainer_arguments(recipe: Any, work: Path) -> dict[str, Any]:
    """The trainer settings every recipe shares (sentence-transformers' and its cross-encoder's arguments
    alike): the recipe's schedule, linear decay, fixed seeds, a checkpoint every ``save_steps`` steps in
    ``work`` (the newest two kept), CPU only, no reporting. A recipe adds its warm-up, logging and sampler."""
    return {
        "output_dir": str(work),
        "num_train_epochs": recipe.epochs,
        "max_steps": recipe.max_steps,
        "per_device_train_batch_size": recipe.batch,
        "learning_rate": recipe.lr,
        "lr_scheduler_type": "linear",
        "seed": recipe.seed,
        "data_seed": recipe.seed,
        "save_strategy": "steps",
        "save_steps": recipe.save_steps,
        "save_total_limit": 2,
        "report_to": "none",
        "use_cpu": True,
        "dataloader_num_workers": 0,
    }


def write_run(work: Path, recipe: Any, rows: int, trained: dict[str, Any]) -> dict[str, Any]:
    """A finished training's log (its recipe, rows and ``train_resumably``'s record) as work/run.json."""
    run = {"recipe": asdict(recipe), "rows": rows, **trained}
    (work / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    return run


def train_once(
    work: Path, recipe: Any, train: Callable[[], tuple[Path, dict[str, Any]]]
) -> tuple[Path, dict[str, Any]]:
    """The final model of this recipe in ``work`` and its run's log: read back when ``work`` holds one
    trained with exactly this recipe, else ``train()`` (a changed recipe, more steps say, resumes from the
    newest checkpoint with its schedule extended)."""
    final, run = work / "final", work / "run.json"
    done = json.loads(run.read_text()) if run.is_file() else None
    if done and final.is_dir() and done["recipe"] == asdict(recipe):
        log.info("already trained: %d steps", done["steps"])
        return final, done
    return train()


def add_work_options(
    parser: argparse.ArgumentParser,
    work: str,
    out: str,
    *,
    questions: bool = True,
    card_only: bool = True,
    no_ship: str = "train and measure only",
) -> None:
    """The options every trainer command shares: the training questions (``questions``), ``--work`` (its
    data, checkpoints and run; default ``work``), ``--out`` (where it ships; ``out`` names the default),
    ``--fresh``, ``--no-ship`` and, for a model whose card is written from its run, ``--card-only``."""
    if questions:
        parser.add_argument(
            "--questions", default="data/questions/questions-*.jsonl", help="training questions (glob)"
        )
    parser.add_argument("--work", default=work, help="data, checkpoints and the run (git-ignored)")
    parser.add_argument("--out", default=None, help=f"where the weights and card go (default {out})")
    parser.add_argument(
        "--fresh", action="store_true", help="drop the work folder's data and checkpoints first"
    )
    parser.add_argument("--no-ship", action="store_true", help=no_ship)
    if card_only:
        parser.add_argument(
            "--card-only", action="store_true", help="rewrite the shipped card from its run and figures"
        )


def work_folders(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """``--work`` (emptied first with ``--fresh``), its data folder and its run folder."""
    work = Path(args.work)
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    return work, work / "data", work / "run"


def add_recipe_options(parser: argparse.ArgumentParser, defaults: Any) -> None:
    """One ``--option`` for each field of a recipe dataclass, typed and defaulted as in ``defaults`` (the
    recipe's own defaults, or a command's, as the sentence reader's)."""
    for f in fields(defaults):
        default = getattr(defaults, f.name)
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(default), default=default)


def recipe_options(args: argparse.Namespace, recipe: type) -> dict[str, Any]:
    """The recipe's fields as ``add_recipe_options`` parsed them."""
    return {f.name: getattr(args, f.name) for f in fields(recipe)}
