"""The answer service's settings, read once at start-up (a bad value names its variable)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import model_validator

from rulesage.config import CommonSettings

if TYPE_CHECKING:
    from services.answer.selector import Answerer

# Below the best-sentence score this file names, the extractive backend abstains. It is written by
# training/answerer/calibrate.py from the training questions through the real road, never from an evaluation.
CALIBRATION = Path(__file__).resolve().parent / "calibration.json"


def calibrated_threshold(path: Path = CALIBRATION) -> tuple[float, str]:
    """The shipped threshold and a line saying where it was calibrated (a missing or broken file is a
    packaging error, reported at start)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        value = float(data["threshold"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"the answerer's calibration {path} is missing or unreadable: {exc}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"the answerer's calibration {path} holds threshold {value}, outside [0, 1]")
    return value, f"{data.get('calibrated_on', '?')}, {data.get('when', '?')}"


class AnswerSettings(CommonSettings):
    rulesage_answer_backend: Literal["extractive", "llama-cpp", "openai"] = "extractive"
    # Seconds one backend turn may take before the ruling is UNAVAILABLE.
    rulesage_answer_timeout_s: float = 60.0
    rulesage_answer_max_tokens: int = 512
    # Answers worked on at once, and answers allowed to wait for a turn before RESOURCE_EXHAUSTED.
    rulesage_answer_concurrency: int = 2
    rulesage_answer_max_queue: int = 6
    # Characters of surrounding section text shown around the passages, shared between them ("read big").
    rulesage_answer_context_chars: int = 6000
    # extractive: how the quote is chosen and when it abstains. "trained": the quote selector and the
    # answerability model of model/answerer.json (abstain under its calibrated threshold); "cosine": the
    # MiniLM cosine blend, abstaining under calibration.json's threshold (the design it replaced, kept to
    # measure one against the other in one mesh).
    rulesage_answer_selector: Literal["trained", "cosine"] = "trained"
    # the trained selector's model file (answerer.json): "" = the shipped model/answerer.json, else a path
    # (a candidate measured through the mesh without replacing the shipped file)
    rulesage_answer_model: str = ""
    # extractive: the encoder of the sentence vectors and the question's (rulesage.embed): "minilm" (MiniLM
    # off the shelf, the cosines the quote selector and the answerability model were trained on) or "tuned"
    # (the search encoder); "" = whichever RULESAGE_ENCODER names.
    rulesage_answer_encoder: Literal["", "tuned", "minilm"] = "minilm"
    # the sentence reader (services/answer/sentences.py) over the quote selector's best sentences: "" = the
    # shipped model/sentences when there is one, "off" = the selector's order alone, else a folder holding one
    rulesage_answer_sentence_reader: str = ""
    # extractive: abstain when the answer's confidence (in [0, 1]) is below this; unset: the selector's
    # calibrated threshold.
    rulesage_extractive_threshold: float | None = None
    # llama-cpp: a local GGUF instruct model.
    rulesage_llama_model_path: str = ""
    rulesage_llama_ctx: int = 8192
    rulesage_llama_threads: int = 0
    # openai: any OpenAI-compatible server (base URL including /v1).
    rulesage_openai_base_url: str = ""
    rulesage_openai_model: str = ""
    rulesage_openai_api_key: str = ""

    @model_validator(mode="after")
    def _backend_needs(self) -> AnswerSettings:
        if self.rulesage_answer_backend == "llama-cpp":
            path = self.rulesage_llama_model_path
            if not path or not Path(path).is_file():
                raise ValueError(f"RULESAGE_LLAMA_MODEL_PATH must name a GGUF file (got {path!r})")
        if self.rulesage_answer_backend == "openai" and not (
            self.rulesage_openai_base_url and self.rulesage_openai_model
        ):
            raise ValueError("the openai backend needs RULESAGE_OPENAI_BASE_URL and RULESAGE_OPENAI_MODEL")
        if self.rulesage_answer_concurrency < 1 or self.rulesage_answer_max_queue < 0:
            raise ValueError("RULESAGE_ANSWER_CONCURRENCY must be >= 1 and RULESAGE_ANSWER_MAX_QUEUE >= 0")
        threshold = self.rulesage_extractive_threshold
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ValueError("RULESAGE_EXTRACTIVE_THRESHOLD must be in [0, 1]")
        self.sentence_reader_folder()  # fail at start on a folder that holds no reader
        if self.rulesage_answer_backend == "extractive":
            self.extractive_threshold()  # fail at start when the shipped calibration is unreadable
        return self

    def extractive_threshold(self) -> tuple[float, str]:
        """The threshold the extractive backend abstains under, and where it comes from."""
        if self.rulesage_extractive_threshold is not None:
            return self.rulesage_extractive_threshold, "RULESAGE_EXTRACTIVE_THRESHOLD"
        if self.rulesage_answer_selector == "trained":
            answerer = self.answerer()
            return answerer.threshold, f"{answerer.calibrated_on}, {answerer.identity}"
        return calibrated_threshold()

    def answerer(self) -> Answerer:
        """The trained selector's models (``RULESAGE_ANSWER_MODEL``, else the shipped file); an unreadable
        file is an error naming the variable."""
        from services.answer.selector import MODEL, load

        path = Path(self.rulesage_answer_model) if self.rulesage_answer_model else MODEL
        try:
            return load(path)
        except ValueError as exc:
            if self.rulesage_answer_model:
                raise ValueError(f"RULESAGE_ANSWER_MODEL={self.rulesage_answer_model!r}: {exc}") from None
            raise

    def sentence_reader_folder(self) -> Path | None:
        """The sentence reader's folder, or None (off, or none shipped); a named folder that holds no
        reader is an error naming the variable."""
        from rulesage.pairs import is_pair_reader
        from services.answer.sentences import SENTENCES_DIR

        value = self.rulesage_answer_sentence_reader
        if value == "off":
            return None
        if not value:
            return SENTENCES_DIR if is_pair_reader(SENTENCES_DIR) else None
        if not is_pair_reader(Path(value)):
            raise ValueError(
                f"RULESAGE_ANSWER_SENTENCE_READER={value!r} is not a sentence reader's folder"
                " (model.safetensors and reader.json with its score layer), nor '' or 'off'"
            )
        return Path(value)


def answer_embedder(bulk: bool = False):  # type: ignore[no-untyped-def]
    """The embedder of the answer's sentence vectors and questions (``RULESAGE_ANSWER_ENCODER``): the search's
    shared one when it is the same encoder, else one of the answer's own (``bulk``: for index-time work)."""
    from rulesage.config import load
    from rulesage.embed import Embedder, bulk_embedder, configured_encoder, shared_embedder

    wanted = load(AnswerSettings).rulesage_answer_encoder
    if not wanted or wanted == configured_encoder():
        return bulk_embedder() if bulk else shared_embedder()
    return Embedder(encoder=wanted, bulk=bulk)
