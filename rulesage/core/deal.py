"""Deal the kept passages ends-first, against "lost in the middle".

Readers of a long context are sharpest at its two ends, so the strongest passages go to the ends and the
weakest to the middle: odd ranks forward from the front, even ranks backward from the end. With five:
1st, 3rd, 5th, 4th, 2nd; with eight: 1st, 3rd, 5th, 7th, 8th, 6th, 4th, 2nd.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

# Passages the careful reader keeps for the answering model (and the fused order keeps when it is missing).
KEEP = 8


def deal(ranked: Sequence[T]) -> list[T]:
    """``ranked`` best first -> the dealt order."""
    return [*ranked[0::2], *reversed(ranked[1::2])]


def dealt_positions(n: int) -> list[int]:
    """The 0-based ranks in dealt order for ``n`` passages (``deal(range(n))``)."""
    return deal(list(range(n)))
