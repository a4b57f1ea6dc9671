"""The reranker's settings: read once at start, each range checked by its field (a bad value is a startup
error naming the variable). Shared by the servicer and the index-time drawer of window states."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rulesage.config import CommonSettings


class RerankSettings(CommonSettings):
    # "cuda" uses onnxruntime-gpu's CUDA provider when one is present (CPU otherwise, with a warning).
    rulesage_rerank_device: Literal["cpu", "cuda"] = "cpu"
    # ONNX Runtime intra-op threads; 0 = every core.
    rulesage_rerank_threads: int = Field(0, ge=0)
    # "" = the shipped cross reader (model/reader/), else the shipped head (model/reranker-int8.onnx), else
    # the interim cosine; "head" = the shipped head; "interim" = the bi-encoder cosine of the window; a path
    # = a head's ONNX file or a cross reader's folder.
    rulesage_rerank_model: str = ""
    # Word pieces of a window the model reads ([CLS]/[SEP] included); the window is cut head+tail to fit.
    # MiniLM reads at most 512.
    rulesage_rerank_max_tokens: int = Field(256, ge=16, le=512)
    rulesage_rerank_batch: int = Field(16, ge=1)
    # Word pieces of the question the model reads ([CLS]/[SEP] included); 0: the model's own
    # (reranker.json). A longer post is cut head + tail.
    rulesage_rerank_question_tokens: int = Field(0, ge=0, le=512)
    # Share of the head's score read from the post's asking sentences alone (the rest from the whole post);
    # unset: the model's own (reranker.json's asked_weight); 0: the whole post only.
    rulesage_rerank_asked_weight: float | None = Field(None, ge=0.0, le=1.0)
    # Requests scoring at once, and requests allowed to wait for a slot before RESOURCE_EXHAUSTED.
    rulesage_rerank_concurrency: int = Field(1, ge=1)
    rulesage_rerank_max_queue: int = Field(4, ge=0)
    rulesage_rerank_max_candidates: int = Field(200, ge=1)
    # Read windows' encoder states drawn at ingest from the database (and store the ones drawn here);
    # off: every window is encoded per request.
    rulesage_rerank_stored_states: bool = True
    # Draw every ruled passage's states at ingest (index time). Off: a passage's states are drawn the first
    # time a rerank reads it, and written back, so a large shelf stores states only for what players ask
    # about (43 KB of states a passage, 74 KB on disk; k8s/README.md has the sizing).
    rulesage_rerank_states_at_ingest: bool = True
    # Seconds a request waits for stored states before encoding the windows itself.
    rulesage_rerank_states_timeout_s: float = Field(1.0, gt=0)
