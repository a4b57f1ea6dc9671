"""The 1,200-character window the careful reader reads of each candidate.

A passage of 1,200 characters or less is read whole; a longer one is read as its first 595 characters, a
5-character joiner and its last 600, so a rule that begins deep inside a long passage is still seen.
"""

from __future__ import annotations

from collections.abc import Sequence

WINDOW_CHARS = 1200
HEAD_CHARS = 595
JOINER = " ... "
TAIL_CHARS = WINDOW_CHARS - HEAD_CHARS - len(JOINER)  # 600


def window(text: str) -> str:
    """The text the reader scores: the whole passage, or its head + joiner + tail (exactly 1,200 chars)."""
    if len(text) <= WINDOW_CHARS:
        return text
    return text[:HEAD_CHARS] + JOINER + text[-TAIL_CHARS:]


def in_window(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is read whole by the window (inside the head or inside the tail)."""
    if not 0 <= start <= end <= len(text):
        raise ValueError(f"span {start}:{end} outside a text of {len(text)} characters")
    if len(text) <= WINDOW_CHARS:
        return True
    return end <= HEAD_CHARS or start >= len(text) - TAIL_CHARS


def reader_text(heading_path: Sequence[str], text: str) -> str:
    """What the cross reader reads of a candidate: its nearest two headings, then its window (the same on
    the training rows and at serving)."""
    head = " > ".join(h for h in heading_path[-2:] if h)
    return f"{head}\n{window(text)}" if head else window(text)
