"""Reciprocal-rank fusion (pure).

fused(p) = sum over voting lists L of 1 / (k + rank_L(p)), ranks 1-based (rank 1 is worth 1/(k+1)).
Scores in the arms' own currencies are thrown away; only positions vote. The highest reachable score is
len(voted lists) / (k + 1): derived from the lists that actually voted, never a constant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

K = 60
LIMIT = 80
# Fused scores cross the wire rounded to six decimals: 1/61 + 1/61 prints as 0.032787 > 2/61.
WIRE_DECIMALS = 6
CEILING_TOLERANCE = 5e-6


@dataclass
class Fused:
    passage_id: int
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)

    @property
    def best_rank(self) -> int:
        return min(self.ranks.values())


def ceiling(voted: int, k: int = K) -> float:
    """The highest fused score a passage can reach: rank 1 on every voting list, voted/(k+1)."""
    return voted / (k + 1) if voted > 0 else 0.0


def ceiling_formula(voted: int, k: int = K) -> str:
    return f"{voted}/({k}+1) = {ceiling(voted, k):.5f}"


def fuse(lists: Mapping[str, Sequence[int]], k: int = K, limit: int = LIMIT) -> list[Fused]:
    """Fuse ranked passage-id lists (best first, one per voting list) and cut to ``limit``.

    A list that names a passage twice votes once, at its best rank. Ties are broken by the best single rank,
    then by passage id, so the result does not depend on the order of the lists.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    table: dict[int, Fused] = {}
    for name, ids in lists.items():
        seen: set[int] = set()
        for rank, pid in enumerate(ids, 1):
            if pid in seen:
                continue
            seen.add(pid)
            entry = table.setdefault(pid, Fused(pid))
            entry.ranks[name] = rank
    for entry in table.values():
        # sum in a fixed order so the float result does not depend on the lists' order
        entry.score = sum(1.0 / (k + r) for _, r in sorted(entry.ranks.items()))
    ordered = sorted(table.values(), key=lambda f: (-f.score, f.best_rank, f.passage_id))
    return ordered[:limit]


def echoes(lists: Mapping[str, Sequence[int]], slack: int = 2) -> dict[str, str]:
    """Lists that only repeat another list: {echo: the list it repeats}.

    A list repeats another when every one of its passages stands in the other's first ``len + slack``
    places, in the same order: it brings no candidate and no ordering of its own (the aisle over a one-book
    family re-ranks the dense arm's own top candidates, for one). Such a list is not a second opinion and
    should not cast a second ballot. Of two lists that repeat each other, the later one is the echo.
    """
    out: dict[str, str] = {}
    unique = {name: list(dict.fromkeys(ids)) for name, ids in lists.items()}
    order = list(unique)
    for b, ids in unique.items():
        if not ids:
            continue
        wanted = set(ids)
        for a, other in unique.items():
            if a == b or a in out:
                continue
            head = other[: len(ids) + slack]
            if not wanted <= set(head) or [i for i in head if i in wanted] != ids:
                continue
            if len(other) == len(ids) and order.index(a) > order.index(b):
                continue  # identical lists: the earlier one keeps its ballot
            out[b] = a
            break
    return out
