"""The gateway's side of the ask road (rulesage.road): a Road on the gateway's own pool and catalog, and
what the waiting page shows of a search before the answer is written."""

from __future__ import annotations

from typing import Any

from rulesage.catalog import Catalog
from rulesage.road import Road, SearchOutcome


class RoadHandle:
    """The gateway's Road, on the gateway's pool and catalog, made on first use inside the serving event
    loop (its channels belong to that loop) and closed with the app (the pool is the app's to close)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.catalog = Catalog(pool)
        self._road: Road | None = None

    def get(self) -> Road:
        if self._road is None:
            self._road = Road(pool=self.pool, catalog=self.catalog)
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
    return outcome.wrench.search_span_ms
