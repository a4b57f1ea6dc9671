"""Which cards a question names (pure: no I/O).

A card table gives each card its names (rulesage.ingest.cards writes them): its own, its other face's, the
short name of a legendary card ("Avacyn" for a single "Avacyn, ..."), and reviewed nicknames ("Goyf").
``CardIndex.find`` reads the question left to right and takes, at each word, the longest name that starts
there; then it looks for near spellings ("Cranial Platting", "Linvala, Keep of Silence") among the
capitalised runs that named nothing.

Many card names are ordinary words ("Shock", "Darkness", "Opt") or the rulebook's own terms ("Flash",
"Exile", "Deal Damage"), and players capitalise rules words as often as card names. Such a name is stored
*plain* and counts only where the question marks it as a card: ``[[Shock]]``, quotes around exactly the
name, or right after "card", "named" or "called" ("the card Vanishing"). Other names count however they are
written ("black lotus", "DeathReap Ritual").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

# How far a near spelling may be from a name (rapidfuzz ratio, 0..100, on the names' keys): 90 takes one
# wrong, missing or extra letter in ten ("Platting", "Keep" for "Keeper" in a longer name) and refuses
# different words of the same shape.
FUZZY_CUTOFF = 90.0
# Inside [[brackets]] the player says a card is meant: one wrong letter in a short name still finds it
# ("Tarmagoyf": 89).
BRACKET_CUTOFF = 80.0
FUZZY_MIN_CHARS = 7  # shorter runs are too close to too many names to guess from
MAX_NAME_WORDS = 9  # the longest names the table holds that a player writes out
KINDS = ("name", "face", "nickname", "short")  # which name wins when two cards share a key
_CONNECTORS = frozenset(
    ["of", "the", "a", "an", "and", "to", "from", "in", "on", "for", "with", "at", "by", "de", "o"]
)
_MARK_BEFORE = frozenset(("card", "cards", "named", "called"))
_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_APOSTROPHES = re.compile(r"['\u2019\u2018`]")
_NON_WORD = re.compile(r"[\W_]+")
# [[Card Name]], "Card Name", 'Card Name', “Card Name”: the spans where a question marks a card
_MARKED = re.compile(
    r"\[\[([^\[\]]{1,160})\]\]|\"([^\"]{1,160})\"|\u201c([^\u201d]{1,160})\u201d|(?<!\w)'([^']{1,160})'(?!\w)"
)


def name_key(text: str) -> str:
    """A name as the matcher compares it: NFKC, lower case, apostrophes dropped, every other run of
    punctuation or space one space ("Garruk, Unleashed" and "garruk unleashed" are one key)."""
    text = unicodedata.normalize("NFKC", text).lower()
    return _NON_WORD.sub(" ", _APOSTROPHES.sub("", text)).strip()


@dataclass(frozen=True)
class CardName:
    """One name of one card, as the table stores it."""

    key: str
    card_id: int
    kind: str = "name"  # one of KINDS
    plain: bool = False  # an ordinary word or a rules term: counts only where the question marks it


@dataclass(frozen=True)
class Mention:
    """A card the question names: where and how it was written, and how it was found."""

    card_id: int
    written: str
    start: int
    end: int
    how: str  # "name", "face", "nickname", "short" or "near" (a near spelling of a name)
    score: float = 100.0  # 100 for an exact key; the near spelling's similarity otherwise


@dataclass
class _Token:
    raw: str
    key: str
    start: int
    end: int
    bare: str = ""  # the key without a possessive or plural "s" ("Tarmogoyf's", "Goyfs")


@dataclass
class CardIndex:
    """Every name of one game's cards, ready to read questions with."""

    names: dict[str, list[CardName]] = field(default_factory=dict)
    _near: dict[str, tuple[list[str], list[int]]] = field(default_factory=dict)

    @classmethod
    def build(cls, names: Iterable[CardName]) -> CardIndex:
        index = cls()
        for n in names:
            if n.key:
                index.names.setdefault(n.key, []).append(n)
        near: dict[str, tuple[list[str], list[int]]] = {}
        for key, entries in index.names.items():
            chosen = _choose(entries)
            if chosen is None or chosen.plain or chosen.kind not in ("name", "face"):
                continue
            if len(key) < FUZZY_MIN_CHARS:
                continue
            keys, ids = near.setdefault(key[0], ([], []))
            keys.append(key)
            ids.append(chosen.card_id)
        index._near = near
        return index

    def find(self, question: str, most: int = 40) -> list[Mention]:
        """The cards ``question`` names, in the order it first names them, at most ``most``."""
        text = unicodedata.normalize("NFKC", question)
        tokens = _tokens(text)
        marked = _marked_spans(text)
        taken = [False] * len(tokens)
        found: list[Mention] = []
        i = 0
        while i < len(tokens):
            hit = self._longest(text, tokens, i, marked)
            if hit is None:
                i += 1
                continue
            length, entry = hit
            first, last = tokens[i], tokens[i + length - 1]
            found.append(
                Mention(entry.card_id, text[first.start : last.end], first.start, last.end, entry.kind)
            )
            for j in range(i, i + length):
                taken[j] = True
            i += length
        found.extend(self._near_spellings(text, tokens, taken, marked))
        seen: set[int] = set()
        out: list[Mention] = []
        for m in sorted(found, key=lambda m: m.start):
            if m.card_id not in seen:
                seen.add(m.card_id)
                out.append(m)
        return out[:most]

    def _longest(
        self, text: str, tokens: list[_Token], i: int, marked: list[tuple[int, int, str]]
    ) -> tuple[int, CardName] | None:
        for length in range(min(MAX_NAME_WORDS, len(tokens) - i), 0, -1):
            span = tokens[i : i + length]
            keys = [" ".join(t.key for t in span)]
            if span[-1].bare:
                keys.append(" ".join([*(t.key for t in span[:-1]), span[-1].bare]))
            for key in keys:
                entry = _choose(self.names.get(key, []))
                if entry is None:
                    continue
                if (entry.plain or len(key) < 3) and not _is_marked(text, tokens, i, i + length, marked):
                    continue
                return length, entry
        return None

    def _near_spellings(
        self, text: str, tokens: list[_Token], taken: list[bool], marked: list[tuple[int, int, str]]
    ) -> list[Mention]:
        """Near spellings of names among the capitalised runs (and marked spans) that named nothing."""
        out: list[Mention] = []
        for a, b, whole in _candidate_runs(text, tokens, taken, marked):
            bracketed = whole and text[tokens[a].start - 2 : tokens[a].start] == "[["
            cutoff = BRACKET_CUTOFF if bracketed else FUZZY_CUTOFF
            best: tuple[float, int, int, int] | None = None  # (score, card id, start token, end token)
            for length in range(b - a, 0 if not whole else b - a - 1, -1):
                for s in range(a, b - length + 1):
                    span = tokens[s : s + length]
                    if span[0].key in _CONNECTORS or span[-1].key in _CONNECTORS:
                        continue
                    key = " ".join(t.key for t in span)
                    if len(key) < FUZZY_MIN_CHARS or key in self.names:
                        continue
                    keys, ids = self._near.get(key[0], ([], []))
                    got = process.extractOne(key, keys, scorer=fuzz.ratio, score_cutoff=cutoff)
                    # one word near a name is most often another word ("Commander", "Displaced"):
                    # taken only inside [[brackets]], and never when it merely adds or drops an ending
                    if got is None or (length == 1 and (not bracketed or _inflected(key, got[0]))):
                        continue
                    if best is None or got[1] > best[0]:
                        best = (got[1], ids[got[2]], s, s + length)
                if best is not None:
                    break  # the longest span that spells a name wins over its parts
            if best is not None:
                score, card_id, s, e = best
                start, end = tokens[s].start, tokens[e - 1].end
                out.append(Mention(card_id, text[start:end], start, end, "near", round(score, 1)))
                for j in range(s, e):
                    taken[j] = True
        return out


def _choose(entries: list[CardName]) -> CardName | None:
    """The entry a key stands for: the best kind; None when two cards share the best kind (ambiguous)."""
    if not entries:
        return None
    best = min(KINDS.index(e.kind) for e in entries)
    top = {e.card_id: e for e in entries if KINDS.index(e.kind) == best}
    return next(iter(top.values())) if len(top) == 1 else None


def _tokens(text: str) -> list[_Token]:
    out = []
    for m in _WORD.finditer(text):
        raw = m.group(0)
        key = name_key(raw)
        bare = ""
        low = raw.lower()
        if low.endswith(("'s", "\u2019s")):
            bare = name_key(raw[:-2])
        elif low.endswith("s") and len(low) > 4:
            bare = key[:-1]
        out.append(_Token(raw, key, m.start(), m.end(), bare))
    return out


def _marked_spans(text: str) -> list[tuple[int, int, str]]:
    """Spans the question marks as a name (brackets, quotes): (start, end, key of what they hold)."""
    out = []
    for m in _MARKED.finditer(text):
        g = next(i for i in range(1, 5) if m.group(i) is not None)
        out.append((m.start(g), m.end(g), name_key(m.group(g))))
    return out


def _is_marked(text: str, tokens: list[_Token], a: int, b: int, marked: list[tuple[int, int, str]]) -> bool:
    start, end = tokens[a].start, tokens[b - 1].end
    key = " ".join(t.key for t in tokens[a:b])
    bare = " ".join([*(t.key for t in tokens[a : b - 1]), tokens[b - 1].bare]) if tokens[b - 1].bare else ""
    for s, e, k in marked:
        if s <= start and end <= e and k in (key, bare):
            return True
    return a > 0 and tokens[a - 1].key in _MARK_BEFORE


def _inflected(written: str, name: str) -> bool:
    """One word that only adds or drops an ending ("Displaced" and "Displace"): another word, not a typo."""
    return written.startswith(name) or name.startswith(written)


def _candidate_runs(
    text: str, tokens: list[_Token], taken: list[bool], marked: list[tuple[int, int, str]]
) -> list[tuple[int, int, bool]]:
    """Token ranges that may hold a misspelt name, and whether only the whole range may: runs of
    capitalised words (connectors allowed inside) that matched nothing, any part of which may be the name;
    and marked spans of a name's length, which hold one name whole."""
    runs: list[tuple[int, int, bool]] = []
    i = 0
    n = len(tokens)
    while i < n:
        if taken[i] or not _capitalised(tokens[i]):
            i += 1
            continue
        j = i + 1
        while j < n and not taken[j] and (_capitalised(tokens[j]) or tokens[j].key in _CONNECTORS):
            j += 1
        while j > i + 1 and tokens[j - 1].key in _CONNECTORS:
            j -= 1
        runs.append((i, j, False))
        i = j
    for s, e, _ in marked:
        inside = [k for k, t in enumerate(tokens) if s <= t.start and t.end <= e]
        if not inside or len(inside) > MAX_NAME_WORDS or any(taken[k] for k in inside):
            continue
        # brackets always mean a card; quotes may hold a rules word ("commander"): only a capitalised one
        if text[s - 2 : s] == "[[" or _capitalised(tokens[inside[0]]):
            runs.append((inside[0], inside[-1] + 1, True))
    return runs


def _capitalised(t: _Token) -> bool:
    return t.raw[:1].isupper() and t.raw != "I" and not t.raw.isdigit()


# How many of its family's passages the ingest keeps as each ruling's nearest (card_rulings.near): the most
# the dense arm's rulings lane reads of one ruling
RULING_NEIGHBOURS = 64
SEARCHED_CARDS = 4  # the first cards a question names join the search; the rest are shown, not searched
SEARCH_TEXT_CHARS = 900  # what the cards add to a query at most (the dense window is 256 word pieces)


def search_text(cards: Iterable[tuple[str, str, str]], most: int = SEARCHED_CARDS) -> str:
    """What the named cards add to the question for the search: each card's type line and Oracle text
    (``(name, type_line, oracle)``), its own name put as "this" (the book never prints it), the first
    ``most`` cards, cut at a word within SEARCH_TEXT_CHARS. (Their official rulings were tried too: no
    gain on either gold set's MTG questions.)"""
    parts = []
    for name, type_line, oracle in list(cards)[:most]:
        body = oracle.replace(name, "this").replace("\n", " ")
        parts.append(" ".join(p for p in (type_line + "." if type_line else "", body) if p))
    text = " ".join(parts)
    if len(text) > SEARCH_TEXT_CHARS:
        text = text[:SEARCH_TEXT_CHARS].rsplit(" ", 1)[0]
    return text
