"""The gateway's side of the ask road (rulesage.road, owned by the lead): search, answer, ask.

The road is imported lazily so the pages work (wall, permalinks, queue) in an install without it; asking then
answers 503 with a plain message. ``found_passages`` turns a SearchOutcome's passages into what the page shows
while the answer is still being written.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class AskUnavailable(RuntimeError):
    """The ask road is not installed in this build."""


def road_module() -> ModuleType:
    try:
        return importlib.import_module("rulesage.road")
    except ModuleNotFoundError as exc:
        if exc.name in ("rulesage.road",):
            raise AskUnavailable("Asking is not switched on in this install yet.") from None
        raise


def bad_question_type() -> type[BaseException] | None:
    try:
        return getattr(road_module(), "BadQuestion", None)
    except AskUnavailable:
        return None


class RoadHandle:
    """The gateway's own Road (rulesage.road.Road) on the gateway's database, made on first use inside the
    serving event loop (its pool and channels belong to that loop) and closed with the app."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._road: Any = None

    def get(self) -> Any:
        if self._road is None:
            self._road = road_module().Road(self.database_url)
        return self._road

    async def close(self) -> None:
        if self._road is not None:
            await self._road.close()
            self._road = None


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def found_passages(outcome: Any, limit: int = 8, excerpt_chars: int = 320) -> list[dict[str, Any]]:
    """The passages a search found (dicts or protobuf Passages), trimmed for the waiting page."""
    out = []
    for p in list(_get(outcome, "passages", None) or [])[:limit]:
        text = str(_get(p, "text", "") or "")
        heading = list(_get(p, "heading_path", None) or [])
        out.append(
            {
                "id": _get(p, "id"),
                "doc_title": str(_get(p, "doc_title", "") or _get(p, "doc_key", "") or ""),
                "page_start": int(_get(p, "page_start", 0) or 0),
                "page_end": int(_get(p, "page_end", 0) or 0),
                "heading": " › ".join(str(h) for h in heading),
                "excerpt": text if len(text) <= excerpt_chars else text[: excerpt_chars - 1].rstrip() + "…",
            }
        )
    return out


def search_span_ms(outcome: Any) -> float | None:
    wrench = _get(outcome, "wrench", None) or {}
    value = _get(wrench, "search_span_ms", None)
    return float(value) if isinstance(value, int | float) else None
