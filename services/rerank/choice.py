"""Which model the careful reader serves: RULESAGE_RERANK_MODEL resolved to the cross reader (alone or blended
with the head, as its reader.json says), the head or the interim cosine, and loaded."""

from __future__ import annotations

import logging
from pathlib import Path

from rulesage.pairs import is_pair_reader
from services.rerank.blend import BlendScorer
from services.rerank.cross import READER_DIR, CrossScorer
from services.rerank.scorer import MODEL_FILE, CosineScorer, RuntimeOptions, Scorer, TrainedScorer

log = logging.getLogger(__name__)


def chosen_model(model: str = "") -> Path | None:
    """What RULESAGE_RERANK_MODEL names: the shipped cross reader when it is there (else the shipped head)
    for "", the head's file for "head", a file (a head) or folder (a cross reader) for a path; None for
    "interim" or when nothing is shipped."""
    if model == "interim":
        return None
    if model == "head":
        return MODEL_FILE if MODEL_FILE.exists() else None
    if model:
        path = Path(model)
        if not path.exists():
            raise FileNotFoundError(f"RULESAGE_RERANK_MODEL={model!r}: no such file or folder")
        return path
    for path in (READER_DIR, MODEL_FILE):
        if is_pair_reader(path) or path.is_file():
            return path
    return None


def load_scorer(opts: RuntimeOptions, model: str = "") -> Scorer:
    """The model RULESAGE_RERANK_MODEL chooses (``chosen_model``); the interim cosine when it is 'interim' or
    no trained model has been shipped."""
    path = chosen_model(model)
    if path is None:
        if model != "interim":
            log.warning("no trained reranker shipped: scoring with the interim bi-encoder cosine")
        return CosineScorer(opts)
    if is_pair_reader(path):
        reader = CrossScorer(path, opts)
        if not reader.head_share:
            return reader
        if not MODEL_FILE.is_file():  # fail fast: a blend without its head is not the model measured
            raise FileNotFoundError(
                f"the cross reader in {path} blends with the head, and no head is shipped at {MODEL_FILE}"
            )
        return BlendScorer(TrainedScorer(MODEL_FILE, opts), reader, reader.head_share)
    return TrainedScorer(path, opts)
