"""A trainer run that survives interruption: resumed from the work folder's newest checkpoint, each step's
loss logged, and the wall time kept over every run of one training (wall.json), for the card."""

from __future__ import annotations

import json
import logging
import time
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
