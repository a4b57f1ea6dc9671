"""Pure, deterministic rules the doorman applies before any model: personal data, links, spam.

Each check returns the reason it would HOLD the question, or None. ``screen_rules`` runs them in a fixed order
and returns the first reason (or None when every rule is satisfied). No I/O, no models: unit-testable alone.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum


class Decision(StrEnum):
    CLEAR = "CLEAR"
    HOLD = "HOLD"


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    reason: str
    checks: list[str] = field(default_factory=list)

    @property
    def cleared(self) -> bool:
        return self.decision is Decision.CLEAR


DEFAULT_MAX_CHARS = 500

_EMAIL = re.compile(
    r"[A-Za-z0-9._%+-]+\s*(?:@|\(at\)|\[at\])\s*[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
# Nine or more digits, optionally led by "+", with single spaces, dots, dashes or parentheses between them.
_PHONE = re.compile(r"(?<![\w.])\+?\(?\d(?:[\s().-]{0,2}\d){8,}")
_URL_SCHEME = re.compile(r"\b(?:https?|ftp)://|\bwww\.[a-z0-9-]+\.", re.IGNORECASE)
_TLDS = (
    "com|net|org|io|co|info|biz|ru|cn|de|uk|fr|nl|xyz|top|app|dev|me|tv|ly|gg|us|ca|au|in|online|site|shop|"
    "store|club|link|click|live|pro|vip|fun|win|bet|casino|loan|porn|sex|cc|to|su|ws|tk|ml|ga|cf|gq"
)
_BARE_DOMAIN = re.compile(rf"\b[a-z0-9](?:[a-z0-9-]{{0,61}}[a-z0-9])?\.(?:{_TLDS})\b(?!\.\w)", re.IGNORECASE)
_REPEATED_CHAR = re.compile(r"(\S)\1{5,}")  # the same visible character six or more times in a row
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


def check_length(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str | None:
    stripped = text.strip()
    if not stripped:
        return "empty question"
    if len(stripped) > max_chars:
        return f"very long ({len(stripped)} characters, limit {max_chars})"
    return None


def check_personal_data(text: str) -> str | None:
    if _EMAIL.search(text):
        return "contains an email address"
    for m in _PHONE.finditer(text):
        digits = sum(ch.isdigit() for ch in m.group(0))
        if digits >= 9:
            return "contains a phone number"
    return None


def check_links(text: str) -> str | None:
    if _URL_SCHEME.search(text):
        return "contains a link"
    m = _BARE_DOMAIN.search(text)
    if m and not _looks_like_abbreviation(text, m.start()):
        return f"contains a web address ({m.group(0)})"
    return None


def _looks_like_abbreviation(text: str, start: int) -> bool:
    # "e.g.", "i.e." and the like are not domains; a domain label needs at least two characters.
    label = text[start:].split(".", 1)[0]
    return len(label) < 2


def check_spam(text: str) -> str | None:
    m = _REPEATED_CHAR.search(text)
    if m:
        return f"repeated characters ({m.group(1)!r} x{len(m.group(0))})"
    words = [w.lower() for w in _WORD.findall(text)]
    run = 1
    for prev, cur in itertools.pairwise(words):
        run = run + 1 if cur == prev else 1
        if run >= 3:
            return f"repeated word ({cur!r} three times in a row)"
    long_words = [w for w in words if len(w) >= 3]
    if len(long_words) >= 8:
        word, count = Counter(long_words).most_common(1)[0]
        if count / len(long_words) > 0.4:
            return f"repeated word ({word!r} is {count} of {len(long_words)} words)"
    letters = [ch for ch in text if ch.isalpha()]
    if len(letters) >= 12:
        upper = sum(ch.isupper() for ch in letters)
        if upper / len(letters) >= 0.7:
            return "shouting (mostly capital letters)"
    return None


def rule_checks(max_chars: int = DEFAULT_MAX_CHARS) -> list[tuple[str, Callable[[str], str | None]]]:
    return [
        ("length", lambda t: check_length(t, max_chars)),
        ("personal-data", check_personal_data),
        ("links", check_links),
        ("spam", check_spam),
    ]


def screen_rules(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> str | None:
    """The first rule that holds the question, as its reason; None when all rules pass."""
    for _name, check in rule_checks(max_chars):
        reason = check(text)
        if reason:
            return reason
    return None
