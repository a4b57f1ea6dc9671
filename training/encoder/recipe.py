"""Tune MiniLM-L6 (the packaged all-MiniLM-L6-v2) on our books: both towers, in-batch negatives.

sentence-transformers' ``MultipleNegativesRankingLoss`` over (question, answering passage, hard negative)
rows: every other row's passages in a batch are negatives too, so a step costs one encoding per question and
per passage, which two CPU cores can afford (docs/CPU-TRAINING.md measured it). ``NO_DUPLICATES`` keeps a
passage from being its own batch-mate's negative. Seeds are fixed; a checkpoint is written every
``save_steps`` steps to the work folder and a rerun resumes from the newest one.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training.runs import train_resumably, trainer_arguments, weighted_rows, write_run

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recipe:
    seed: int = 12
    epochs: float = 1.0
    batch: int = 32
    lr: float = 3e-5
    warmup: float = 0.05
    max_tokens: int = 256
    threads: int = 2
    save_steps: int = 10
    max_steps: int = -1  # > 0: stop there (a timing run)
    # the model tuned: "" is MiniLM off the shelf (the package's); a sentence-transformers folder continues
    # from it (a second round from an earlier run's ``final``)
    base: str = ""
    public_repeat: int = 1  # each real player's post is seen this many times an epoch (written rows once)


def train(data: Path, work: Path, recipe: Recipe) -> tuple[Path, dict[str, Any]]:
    """Train on data/train.jsonl; returns the final model folder and the run's log (steps, losses, time)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from datasets import load_dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers

    from rulesage.embed import package_model_dir

    torch.set_num_threads(recipe.threads)
    torch.manual_seed(recipe.seed)
    model = SentenceTransformer(recipe.base or str(package_model_dir()), device="cpu")
    model.max_seq_length = recipe.max_tokens
    rows = weighted_rows(
        load_dataset("json", data_files=str(data / "train.jsonl"), split="train"),
        recipe.public_repeat,
        recipe.seed,
    )
    loss = MultipleNegativesRankingLoss(model)
    args = SentenceTransformerTrainingArguments(
        **trainer_arguments(recipe, work),
        warmup_ratio=recipe.warmup,
        batch_sampler=BatchSamplers.NO_DUPLICATES,
        logging_steps=1,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=rows, loss=loss)
    record = train_resumably(trainer, work)
    final = work / "final"
    model.save(str(final))
    return final, write_run(work, recipe, len(rows), record)
