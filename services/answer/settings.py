"""The answer service's settings, read once at start-up (a bad value names its variable)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import model_validator

from rulesage.config import CommonSettings

# Below this best-sentence score the extractive backend abstains (rulesage.core.metrics.calibrate_threshold
# fits one from scored questions).
DEFAULT_EXTRACTIVE_THRESHOLD = 0.45


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
    # extractive: abstain when the best sentence's relevance (in [0, 1]) is below this.
    rulesage_extractive_threshold: float = DEFAULT_EXTRACTIVE_THRESHOLD
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
        if not 0.0 <= self.rulesage_extractive_threshold <= 1.0:
            raise ValueError("RULESAGE_EXTRACTIVE_THRESHOLD must be in [0, 1]")
        return self
