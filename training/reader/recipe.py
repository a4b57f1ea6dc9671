"""Train the cross reader: the tuned encoder's first ``layers`` layers with a one-logit head, reading the
question and a window together (a true cross-encoder).

sentence-transformers' ``CrossEncoderTrainer`` with its cross-encoder ``MultipleNegativesRankingLoss``: each
question is scored against its answering window, its hard negatives and ``in_batch`` other questions'
windows, and the loss is the cross-entropy of the answering one. A truncated encoder keeps a step (16
questions, 8 pairs each, 256 word pieces) near 7 s on two CPU cores. With a teacher (``Recipe.teacher``) the
rows are ``distil.build``'s instead and the loss is the cross-encoder ``ListNetLoss`` over each question's
candidates, whose labels are the shipped head's scores. Seeds are fixed; a checkpoint is written
every ``save_steps`` steps and a rerun resumes from the newest one.
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
    batch: int = 16
    lr: float = 4e-5
    warmup: float = 0.1
    max_tokens: int = 256
    layers: int = 3
    in_batch: int = 2  # other questions' positives added as negatives
    threads: int = 2
    save_steps: int = 25
    max_steps: int = -1  # > 0: stop there (a timing run)
    base: str = ""  # a transformers folder with the encoder to start from; "" is the shipped tuned encoder
    public_repeat: int = 1  # each real player's post is seen this many times an epoch (written rows once)
    # Distillation: a served pools file (``rulesage train reranker-pools``'). Set, the reader learns the
    # shipped head's order over those candidates (``distil.build``: ``teacher_docs`` of each question's first
    # ``teacher_depth``, labelled by the head's score plus ``teacher_bonus`` on the answer) through
    # ``ListNetLoss``, on every real post of the trained split and ``teacher_written`` written questions.
    teacher: str = ""
    teacher_depth: int = 24
    teacher_docs: int = 8
    teacher_bonus: float = 4.0
    teacher_written: int = 2400
    teacher_temperature: float = 2.0


def base_folder(work: Path, recipe: Recipe) -> Path:
    """The starting point as a transformers folder: the encoder's first ``layers`` layers (fp32) and
    MiniLM's tokenizer, with an untrained one-logit head added by the cross-encoder."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from rulesage.embed import TUNED_DIR, package_model_dir

    folder = work / "base"
    if (folder / "config.json").is_file():
        return folder
    model = AutoModel.from_pretrained(recipe.base or str(TUNED_DIR), torch_dtype=torch.float32)
    model.encoder.layer = model.encoder.layer[: recipe.layers]
    model.config.num_hidden_layers = recipe.layers
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(package_model_dir())).save_pretrained(str(folder))
    return folder


def reader_model(base: Path, max_tokens: int) -> Any:
    """The cross-encoder: the encoder over the pair, its token states mean-pooled, one linear score.

    Mean pooling, not BERT's [CLS] pooler: the search encoder was tuned through mean pooling, and its
    [CLS] state barely varies between inputs (std 0.0014 against 0.51 for a word's state), so a [CLS]
    classifier starts blind. A run with one stayed at the loss of a uniform guess (ln 8) for 59 steps;
    over the mean, the score starts from what the bi-encoder already knows."""
    import torch
    from sentence_transformers.base.modules import Dense, Transformer
    from sentence_transformers.cross_encoder import CrossEncoder
    from sentence_transformers.sentence_transformer.modules import Pooling

    encoder = Transformer(str(base), transformer_task="feature-extraction", max_seq_length=max_tokens)
    pooling = Pooling(encoder.get_embedding_dimension(), "mean")
    score = Dense(
        encoder.get_embedding_dimension(),
        1,
        activation_function=torch.nn.Identity(),
        module_output_name="scores",
    )
    return CrossEncoder(modules=[encoder, pooling, score], device="cpu")


def train(data: Path, work: Path, recipe: Recipe) -> tuple[Path, dict[str, Any]]:
    """Train on data/train.jsonl (data/distil.jsonl with a teacher); returns the final model folder and the
    run's log (steps, losses, time)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from datasets import load_dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import ListNetLoss, MultipleNegativesRankingLoss

    torch.set_num_threads(recipe.threads)
    torch.manual_seed(recipe.seed)
    model = reader_model(base_folder(work, recipe), recipe.max_tokens)
    rows_file = "distil.jsonl" if recipe.teacher else "train.jsonl"
    rows = weighted_rows(
        load_dataset("json", data_files=str(data / rows_file), split="train"),
        recipe.public_repeat,
        recipe.seed,
    )
    loss: Any = (
        ListNetLoss(model)
        if recipe.teacher
        else MultipleNegativesRankingLoss(model, num_negatives=recipe.in_batch)
    )
    args = CrossEncoderTrainingArguments(
        **trainer_arguments(recipe, work), warmup_ratio=recipe.warmup, logging_steps=1
    )
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=rows, loss=loss)
    record = train_resumably(trainer, work)
    final = work / "final"
    model.save_pretrained(str(final))
    return final, write_run(work, recipe, len(rows), record)
