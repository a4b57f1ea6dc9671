"""openai: any OpenAI-compatible chat server (vLLM, llama.cpp's servers, Ollama, OpenAI itself) over httpx,
with structured output (``response_format`` ``json_schema``) so the reply is the answer schema, never prose.

Servers that predate ``json_schema`` but take llama-cpp-python's ``{"type": "json_object", "schema": ...}``
are served by falling back to that form (for good), when the first form is refused with an error naming
``response_format``.
"""

from __future__ import annotations

from typing import Any

import httpx

from services.answer.backends.chat import ChatBackend
from services.answer.loop import Prompt
from services.answer.prompt import messages


class OpenAIBackend(ChatBackend):
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        max_tokens: int = 512,
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )
        self.model = model
        self.max_tokens = max_tokens
        self.identity = f"openai:{model}"
        self._schema_form = "json_schema"

    def _format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self._schema_form == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "ruling", "strict": True, "schema": schema},
            }
        return {"type": "json_object", "schema": schema}

    async def _post(self, prompt: Prompt, schema: dict[str, Any]) -> httpx.Response:
        body = {
            "model": self.model,
            "messages": messages(prompt),
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
            "response_format": self._format(schema),
        }
        return await self.client.post("/chat/completions", json=body)

    async def complete(self, prompt: Prompt, schema: dict[str, Any]) -> str:
        resp = await self._post(prompt, schema)
        if (
            resp.status_code
            in (400, 422, 500)  # llama-cpp-python's server answers its validation error with 500
            and self._schema_form == "json_schema"
            and "response_format" in resp.text
        ):
            self._schema_form = "json_object"
            resp = await self._post(prompt, schema)
        resp.raise_for_status()
        data = resp.json()
        return str(data["choices"][0]["message"]["content"] or "")

    async def close(self) -> None:
        await self.client.aclose()
