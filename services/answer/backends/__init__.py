"""The answering backends behind one interface (``loop.Backend``), chosen by RULESAGE_ANSWER_BACKEND."""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.answer.loop import Backend
from services.answer.settings import AnswerSettings

if TYPE_CHECKING:
    from services.answer.backends.extractive import Reader


def make_reader(settings: AnswerSettings) -> Reader:
    """The trained quote selector's reader, shared by every backend (loads MiniLM and the model file)."""
    from services.answer.backends.extractive import Reader

    threshold, source = settings.extractive_threshold()
    folder = settings.sentence_reader_folder()
    sentences = None
    if folder is not None:
        from services.answer.sentences import SentenceReader

        sentences = SentenceReader(folder)
    return Reader(settings.answerer(), threshold, source, sentences=sentences)


def make_backend(settings: AnswerSettings, reader: Reader | None = None) -> Backend:
    """Build the configured backend (loads its model: call it before the service says SERVING). The
    extractive one quotes through ``reader``, the service's trained selector, when there is one."""
    kind = settings.rulesage_answer_backend
    if kind == "llama-cpp":
        from services.answer.backends.llama import LlamaBackend

        return LlamaBackend(
            settings.rulesage_llama_model_path,
            n_ctx=settings.rulesage_llama_ctx,
            threads=settings.rulesage_llama_threads,
            max_tokens=settings.rulesage_answer_max_tokens,
            timeout_s=settings.rulesage_answer_timeout_s,
        )
    if kind == "openai":
        from services.answer.backends.openai import OpenAIBackend

        return OpenAIBackend(
            settings.rulesage_openai_base_url,
            settings.rulesage_openai_model,
            api_key=settings.rulesage_openai_api_key,
            max_tokens=settings.rulesage_answer_max_tokens,
            timeout_s=settings.rulesage_answer_timeout_s,
        )
    from services.answer.backends.extractive import ExtractiveBackend

    threshold, source = settings.extractive_threshold()
    return ExtractiveBackend(threshold, threshold_source=source, reader=reader)
