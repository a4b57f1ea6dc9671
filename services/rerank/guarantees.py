"""Keep the best ``keep`` candidates by score, with two guarantees that override the scores.

- ``rulebook-top``: the best-scored candidate from the asked game's own rulebook (doc_kind 'rulebook' and
  game == the asked game) keeps a place.
- ``errata-top``: the best-scored candidate from a matched correction document (doc_kind 'errata' or 'faq'
  among the candidates) is never dropped: a fix the publisher shipped outranks any ranker's opinion of it.

A guarantee is reported as fired only when it changed the kept set. A guaranteed candidate displaces the
lowest-scored kept candidate that is not itself guaranteed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rulesage.core.deal import KEEP

RULEBOOK_TOP = "rulebook-top"
ERRATA_TOP = "errata-top"
CORRECTION_KINDS = frozenset({"errata", "faq"})


@dataclass(frozen=True)
class Candidate:
    """What the guarantees need to know about a candidate."""

    doc_kind: str
    game: str


@dataclass(frozen=True)
class Selection:
    """Indices of the kept candidates, best score first, and the guarantees that changed the set."""

    kept: list[int]
    fired: list[str]


def ranked(scores: Sequence[float]) -> list[int]:
    """Candidate indices by score, best first; ties keep the candidates' (fused) order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def _top(order: list[int], candidates: Sequence[Candidate], wanted) -> int | None:  # type: ignore[no-untyped-def]
    return next((i for i in order if wanted(candidates[i])), None)


def select(
    candidates: Sequence[Candidate], scores: Sequence[float], game: str, keep: int = KEEP
) -> Selection:
    """The kept set (best first) after the two guarantees."""
    if len(candidates) != len(scores):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    keep = keep if keep > 0 else KEEP
    order = ranked(scores)
    kept = order[:keep]
    guaranteed: list[tuple[str, int]] = []
    errata = _top(order, candidates, lambda c: c.doc_kind in CORRECTION_KINDS)
    if errata is not None:
        guaranteed.append((ERRATA_TOP, errata))
    if game:
        book = _top(order, candidates, lambda c: c.doc_kind == "rulebook" and c.game == game)
        if book is not None:
            guaranteed.append((RULEBOOK_TOP, book))
    protected = {i for _, i in guaranteed}
    fired: list[str] = []
    for name, idx in guaranteed:
        if idx in kept:
            continue
        victims = [i for i in kept if i not in protected]
        if not victims:  # keep is smaller than the number of guarantees: the earlier guarantee holds
            continue
        kept.remove(max(victims, key=lambda i: (-scores[i], i)))
        kept.append(idx)
        fired.append(name)
    kept.sort(key=lambda i: (-scores[i], i))
    return Selection(kept=kept, fired=fired)
