"""Tune a question tower: the shipped encoder reads the question, the passages stay as the passage tower
stored them.

The loss is the softmax of the question's scaled cosines over its whole family's stored passage vectors
(the bank) with the answering passage as the target, the question's other answering passages masked out:
``MultipleNegativesRankingLoss`` over every passage of the family as a negative, where that loss would draw
its negatives from a batch and embed each one. With the passages frozen the bank costs a matrix product, so
a step costs one encoding per question (docs/CPU-TRAINING.md: the question tower alone is the cheap
route). It runs in sentence-transformers' trainer (the loss is a module over the model, as its own are);
seeds are fixed, a checkpoint is written every ``save_steps`` steps and a rerun resumes from the newest.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from training.runs import train_resumably, trainer_arguments, weighted_rows, write_run


@dataclass(frozen=True)
class Recipe:
    seed: int = 12
    epochs: float = 2.0
    batch: int = 32
    lr: float = 2e-5
    warmup: float = 0.05
    max_tokens: int = 256
    threads: int = 2
    save_steps: int = 40
    max_steps: int = -1  # > 0: stop there (a timing run)
    scale: float = 20.0  # the cosines' scale in the softmax (MultipleNegativesRankingLoss's default)
    public_repeat: int = 1  # each real player's post is seen this many times an epoch (written rows once)


def bank_loss(
    model: Any, bank: np.ndarray, families: np.ndarray, rows: list[dict[str, Any]], scale: float
) -> Any:
    """The loss module: ``labels`` are row numbers of ``rows`` (each with its bank ``label`` and ``also``)."""
    import torch
    import torch.nn.functional as F

    vectors = F.normalize(torch.from_numpy(bank), dim=-1)
    family = torch.from_numpy(families).long()
    target = torch.tensor([r["label"] for r in rows])

    class BankLoss(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, features: list[dict[str, Any]], labels: Any) -> Any:
            question = F.normalize(self.model(features[0])["sentence_embedding"], dim=-1)
            logits = scale * question @ vectors.T
            pos = target[labels.long()]
            masked = family[None, :] != family[pos][:, None]  # another family's passages are never searched
            for i, row in enumerate(labels.tolist()):
                if rows[row]["also"]:
                    masked[i, rows[row]["also"]] = True
            return F.cross_entropy(logits.masked_fill(masked, float("-inf")), pos)

    return BankLoss()


def base_model(max_tokens: int) -> Any:
    """The shipped search encoder (its fp16 weights computed in fp32) as a sentence-transformers model: the
    packaged MiniLM's tokenizer, mean pooling and normalisation, the tuned weights."""
    import torch
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer

    from rulesage.embed import package_model_dir, tuned_model_dir

    model = SentenceTransformer(str(package_model_dir()), device="cpu")
    weights = {
        k: v.to(torch.float32) for k, v in load_file(str(tuned_model_dir() / "model.safetensors")).items()
    }
    transformer: Any = model[0]
    transformer.auto_model.load_state_dict(weights)
    model.max_seq_length = max_tokens
    return model


def train(data: Path, work: Path, recipe: Recipe) -> tuple[Path, dict[str, Any]]:
    """Train on data/train.jsonl against data/bank.npy; returns the final model folder and the run's log."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    torch.set_num_threads(recipe.threads)
    torch.manual_seed(recipe.seed)
    model = base_model(recipe.max_tokens)
    rows = [json.loads(line) for line in (data / "train.jsonl").read_text().splitlines()]
    families = np.array([o["family"] for o in json.loads((data / "bank.json").read_text())], dtype=np.int64)
    loss = bank_loss(model, np.load(data / "bank.npy"), families, rows, recipe.scale)
    dataset = weighted_rows(
        Dataset.from_list(
            [{"anchor": r["anchor"], "label": i, "public": r["public"]} for i, r in enumerate(rows)]
        ),
        recipe.public_repeat,
        recipe.seed,
    ).shuffle(seed=recipe.seed)
    args = SentenceTransformerTrainingArguments(
        **trainer_arguments(recipe, work), warmup_steps=recipe.warmup, logging_steps=5
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
    record = train_resumably(trainer, work)
    final = work / "final"
    model.save(str(final))
    return final, write_run(work, recipe, len(dataset), record)
