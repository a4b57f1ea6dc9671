"""The gateway's side of the ask road (rulesage.road): its own Road on the gateway's pool, and what the
waiting page shows of a search before the answer is written."""

from __future__ import annotations

from typing import Any

from rulesage.road import Road, SearchOutcome


class RoadHandle:
    """The gateway's own Road on the gateway's database, made on first use inside the serving event loop
    (its pool and channels belong to that loop) and closed with the app."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._road: Road | None = None

    def get(self) -> Road:
        if self._road is None:
            self._road = Road(self.database_url)
        return self._road

    async def close(self) -> None:
        if self._road is not None:
            await self._road.close()
            self._road = None


def found_passages(outcome: SearchOutcome, limit: int = 8, excerpt_chars: int = 320) -> list[dict[str, Any]]:
    """The passages a search kept, trimmed for the waiting page."""
    out = []
    for p in outcome.passages[:limit]:
        text = p.text
        out.append(
            {
                "id": p.id,
                "doc_title": p.doc_title or p.doc_key,
                "page_start": p.page_start,
                "page_end": p.page_end,
                "heading": " › ".join(p.heading_path),
                "excerpt": text if len(text) <= excerpt_chars else text[: excerpt_chars - 1].rstrip() + "…",
            }
        )
    return out


def search_span_ms(outcome: SearchOutcome) -> float | None:
    value = outcome.wrench.get("search_span_ms")
    return float(value) if isinstance(value, int | float) else None
