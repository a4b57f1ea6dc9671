"""Optional judge model over an OpenAI-compatible chat server. It can only HOLD more: it is asked only about
questions the rules and the classifier cleared, and any error, timeout or unreadable reply is a HOLD."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx

SYSTEM_PROMPT = (
    "You screen questions before they appear on a public, family-friendly wall of board-game rules "
    "questions. "
    "Reply with exactly CLEAR if the text is a harmless question or remark about playing a game. Otherwise "
    "reply HOLD: followed by a short reason (abuse, harassment, hate, sexual content, personal data, "
    "advertising or spam, or anything else a public page should not show). Violence that is part of a game's "
    "rules (attacking, killing a monster) is fine. Reply with nothing else."
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class JudgeReply:
    hold: bool
    reason: str


def parse_reply(content: str) -> JudgeReply:
    """CLEAR only for a reply that starts with CLEAR; everything else (HOLD, empty, rambling) holds."""
    text = _THINK.sub("", content or "").strip().strip("*`\"' ")
    head = text.upper()
    if head.startswith("CLEAR") and not head.startswith("CLEARLY"):
        return JudgeReply(False, "clean")
    if head.startswith("HOLD"):
        reason = text[4:].lstrip(" :-—").strip().splitlines()[0] if text[4:].strip() else ""
        return JudgeReply(True, f"judge: {reason[:160]}" if reason else "judge held it")
    return JudgeReply(True, "judge gave no clear answer")


class Judge:
    def __init__(self, base_url: str, model: str, timeout_s: float = 10.0, api_key: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient | None = None

    async def start(self) -> None:
        self._client = httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def judge(self, question: str) -> JudgeReply:
        """Raises on transport errors; the caller turns any exception into HOLD."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        url = self.base_url + "/chat/completions"
        body = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": 64,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": question},
            ],
        }
        resp = await self._client.post(url, json=body)
        resp.raise_for_status()
        content = resp.json()["choices"][0]["message"]["content"]
        return parse_reply(str(content))
