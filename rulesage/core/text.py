"""Text normalisation shared by ingestion, evaluation and the citation check.

Two different jobs, kept apart on purpose:
- ``normalise`` is the gold matching rule of shared/eval/README.md (lossy: case, spacing, hyphenation).
- ``canonical_chars`` maps punctuation one character to one character, so offsets in the canonical text are
  offsets in the source text and a matched quote can be stored as the source's own span, byte-exact.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2032\u02bc"
_DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u2033"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
_SPACES = "\u00a0\u2007\u202f\u2009\u200a\u2002\u2003"

_CANON = str.maketrans(
    {
        **dict.fromkeys(_SINGLE_QUOTES, "'"),
        **dict.fromkeys(_DOUBLE_QUOTES, '"'),
        **dict.fromkeys(_DASHES, "-"),
        **dict.fromkeys(_SPACES, " "),
    }
)


def canonical_chars(text: str) -> str:
    """Curly quotes to straight, every dash to '-', no-break and thin spaces to ' '. Length is preserved."""
    return text.translate(_CANON)


def find_quote(passage: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` stands in ``passage`` after one-to-one canonicalisation, as source offsets; else None.

    Case, word order and line breaks must still match: a paraphrase is not found.
    """
    if not quote:
        return None
    at = canonical_chars(passage).find(canonical_chars(quote))
    if at < 0:
        return None
    return at, at + len(quote)


@functools.lru_cache(maxsize=65536)
def normalise(text: str) -> str:
    """The gold matching rule (shared/eval/README.md). Cached: evaluation matches the same passages often."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u00ad", "")
    text = re.sub(r"[\u2018\u2019\u201a\u201b\u2032]", "'", text)
    text = re.sub(r"[\u201c\u201d\u201e\u201f\u2033]", '"', text)
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    text = re.sub(r"-{2,}", "-", text)
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)
    return re.sub(r"\s+", " ", text).strip()


def supports(passage_text: str, quote: str, min_run: int = 8) -> bool:
    """A passage supports an evidence quote when it holds the whole normalised quote, or (for quotes of
    ``min_run`` words or more) any run of ``min_run`` consecutive words of it."""
    hay = normalise(passage_text)
    needle = normalise(quote)
    if needle in hay:
        return True
    words = needle.split(" ")
    if len(words) < min_run:
        return False
    return any(" ".join(words[i : i + min_run]) in hay for i in range(len(words) - min_run + 1))


def sentences_of(question: str) -> list[str]:
    """A question's sentences (split after . ! or ?)."""
    return [p for p in re.split(r"(?<=[.!?])\s+", question.strip()) if p]


def asked_sentence(question: str) -> str:
    """The question's last asked sentence: a forum post tells the situation first and asks last."""
    parts = sentences_of(question)
    asked = [p for p in parts if p.endswith("?")]
    return (asked or parts or [question])[-1]


def asked_apart(question: str) -> str | None:
    """The asked sentence, when the question is more than it (its sentences are then scored against it
    too); None when the question is that sentence."""
    asked = asked_sentence(question)
    return asked if asked != question.strip() else None


def asked_only(question: str) -> str | None:
    """Every sentence of the question that asks (ends with ``?``), joined: a post with its situation left
    out. None when nothing asks, or when the question is only its asking sentences."""
    asked = [p for p in sentences_of(question) if p.endswith("?")]
    joined = " ".join(asked)
    return joined if asked and joined != " ".join(sentences_of(question)) else None
