"""The one check every entry point applies to a player's question before any work is done (the gateway's
ask, the road, and each service that reads a question: the arms, fusion, the reader, the answer). Its
messages are fit to show the player."""

from __future__ import annotations

import re
import unicodedata

# C0/C1 control characters other than tab and newline; they never belong in a question.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class BadQuestion(ValueError):
    """The question cannot be asked as it stands; the message is fit to show the player."""


# Real forum posts run to a median of 40 words and sometimes past 150 (the situation told first, then the
# questions): the cap refuses only what no player writes.
MAX_QUESTION_CHARS = 1500


def clean_question(raw: str, max_chars: int = MAX_QUESTION_CHARS) -> str:
    """Strip control characters and outer white space; refuse an empty or over-long question."""
    text = unicodedata.normalize("NFC", _CONTROL.sub(" ", raw or "")).strip()
    if not any(unicodedata.category(ch)[0] not in "CZ" for ch in text):  # only invisible characters
        raise BadQuestion("The question is empty: please type a question about the game's rules.")
    if len(text) > max_chars:
        raise BadQuestion(
            f"Your question is {len(text):,} characters long; the limit is {max_chars:,}. Please shorten it."
        )
    return text


def check_slug(slug: str) -> str:
    slug = (slug or "").strip()
    if not slug:
        raise BadQuestion("no game given: pick a game from the shelf")
    if len(slug) > 100 or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", slug):
        raise BadQuestion(f"{slug[:100]!r} is not a game slug")
    return slug
