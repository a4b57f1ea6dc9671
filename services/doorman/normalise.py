"""Undo the usual disguises before the rules read a question: fullwidth and accented letters, zero-width
characters, look-alike Cyrillic and Greek letters, leetspeak digits and symbols, letters spaced or dotted
apart ("f u c k", "i.g.n.o.r.e") and stretched ones ("fuuuck").

Pure functions. ``plain`` keeps the text's words (for phrase rules); ``unmasked`` also maps leetspeak and
joins spaced-out letters (for word lists and injection phrases typed to dodge them); ``squeeze`` collapses
doubled letters, so "fuuuck" and "fuck" compare equal.
"""

from __future__ import annotations

import re
import unicodedata

_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]"
)
# Letters that look Latin but are not: the usual homoglyph swaps (Cyrillic and Greek).
_HOMOGLYPHS = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
        "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "к": "k", "м": "m", "т": "t", "в": "b", "н": "h",
        "α": "a", "ε": "e", "ο": "o", "ρ": "p", "ι": "i", "κ": "k", "ν": "v", "τ": "t", "υ": "u", "χ": "x",
    }
)  # fmt: skip
# Leetspeak inside a word: only applied to tokens that also hold a letter ("3d6" stays a die).
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "@": "a",
                       "$": "s", "!": "i", "|": "i", "€": "e", "£": "l", "+": "t", "9": "g",
                       "6": "b"})  # fmt: skip
_TOKEN = re.compile(r"\S+")
# Three or more single characters, each followed by the same kind of separator: "f u c k", "s.h.i.t", "i-g-n".
_SPACED = re.compile(
    r"(?<![\w*])((?:[\w*@$!](?P<sep>[ .\-_/~,·•|]{1,2}))(?:[\w*@$!](?P=sep)){1,}[\w*@$!])(?![\w*])"
)
_STRETCH = re.compile(r"([^\W\d_])\1+")


def plain(text: str, lookalikes: bool = True) -> str:
    """NFKC, invisible characters removed, accents (and, unless told not to, look-alike letters) folded, lower
    case. Keep ``lookalikes=False`` for rules written in Cyrillic or Greek."""
    text = unicodedata.normalize("NFKC", text)
    text = _INVISIBLE.sub("", text)
    text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    text = unicodedata.normalize("NFC", text).casefold()
    return text.translate(_HOMOGLYPHS) if lookalikes else text


def _join_spaced(text: str, keep_articles: bool = False) -> str:
    def join(m: re.Match[str]) -> str:
        run = m.group(1)
        sep = m.group("sep")
        parts = run.split(sep) if sep else [run]
        if not all(len(p) == 1 for p in parts):
            return run
        if keep_articles and parts[0] in ("a", "i") and len(parts) >= 4:  # "such a c u n t move"
            return parts[0] + " " + "".join(parts[1:])
        return "".join(parts)

    return _SPACED.sub(join, text)


def _unleet(token: str) -> str:
    if not any(ch.isalpha() for ch in token):
        return token
    return token.translate(_LEET)


def unmasked(text: str, keep_articles: bool = False) -> str:
    """``plain``, spaced letters joined and leetspeak mapped: "F.U.C.K" -> "fuck", "1gn0r3" -> "ignore".
    ``keep_articles``: a spaced run led by "a" or "i" keeps that word apart ("a c u n t" -> "a cunt")."""
    text = _join_spaced(plain(text), keep_articles)
    return _TOKEN.sub(lambda m: _unleet(m.group(0)), text)


def squeeze(word: str) -> str:
    """Doubled letters collapsed: "fuuuck" -> "fuck", "asshole" -> "ashole" (compare like with like)."""
    return _STRETCH.sub(r"\1", word)
