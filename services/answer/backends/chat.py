"""What the language-model backends share: schema-constrained turns over the rendered prompt.

A subclass implements ``complete(prompt, schema) -> str`` (the model's JSON text, constrained by ``schema``);
the first turn's schema carries ``lookup_rules`` when the tool is offered, the final turn's never does.
"""

from __future__ import annotations

import json
from typing import Any

from services.answer.citations import MalformedAnswer, RawAnswer, answer_schema, parse_answer
from services.answer.loop import Prompt, ToolRequest


class ChatBackend:
    identity = "chat"

    async def complete(self, prompt: Prompt, schema: dict[str, Any]) -> str:
        raise NotImplementedError

    async def open_turn(self, prompt: Prompt) -> RawAnswer | ToolRequest:
        schema = answer_schema([p.id for p in prompt.passages], with_lookup=prompt.tool_offered)
        text = await self.complete(prompt, schema)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MalformedAnswer(f"not JSON: {exc.msg}") from None
        if prompt.tool_offered and isinstance(obj, dict):
            wanted = obj.get("lookup_rules") or []
            if isinstance(wanted, list) and any(isinstance(r, str) and r.strip() for r in wanted):
                return ToolRequest(tuple(r for r in wanted if isinstance(r, str) and r.strip()))
        return parse_answer(obj)

    async def final_turn(self, prompt: Prompt) -> RawAnswer:
        schema = answer_schema([p.id for p in prompt.passages], with_lookup=False)
        return parse_answer(await self.complete(prompt, schema))

    async def close(self) -> None:
        return None
