"""A game's card table into the database: every card's Oracle text and official rulings, and every name a
question may call it by (rulesage.core.cards reads them).

The table is the gzip JSON-lines file the shelf names on the game (``cards = "..."``), one card a line:
``name``, ``type``, ``mana_cost``, ``oracle``, ``pt``, ``loyalty``, ``other_face``, ``rulings`` (a list of
texts). Reviewed nicknames come from ``nicknames/<slug>.toml`` beside this module.

Loading is idempotent: an unchanged table (and nickname file) is not read again; a changed one updates in
place: a card whose line changed is rewritten, a card no longer listed is deleted, the names are rebuilt.
A file that cannot be read, or a line that is not a card, fails the table alone with a message naming the
line; the table stored before stays in force.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import tomllib
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from rulesage.core.cards import name_key

NICKNAMES = Path(__file__).resolve().parent / "nicknames"
# Raise when the rule that marks a name plain changes: a stored table is then re-read.
PLAIN_RULE_VERSION = "1"
# A one-word name at least this common in English (wordfreq's Zipf scale: 3 is once per million words,
# "melee", "shackles") is an ordinary word; rarer words ("tarmogoyf" 0, "incinerate") are names.
ORDINARY_ZIPF = 3.0
# Cards of side formats whose names are characters and places a question names for other reasons
# ("Mishra" the Vanguard card): counted only where the question marks them.
SIDE_TYPES = ("Vanguard", "Plane ", "Plane\u2014", "Scheme", "Phenomenon")
_BOOK_PHRASE_WORDS = 4


class CardTableError(ValueError):
    """The table or its nickname file is unreadable or malformed; the message says where."""


@dataclass(frozen=True)
class Card:
    name: str
    type_line: str = ""
    mana_cost: str = ""
    oracle: str = ""
    pt: str = ""
    loyalty: str = ""
    other_face: str = ""
    rulings: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.__dict__, sort_keys=True, default=list).encode()).hexdigest()


@dataclass
class CardLoad:
    cards: int = 0
    rulings: int = 0
    written: int = 0  # cards inserted or rewritten in this run
    deleted: int = 0
    names: int = 0
    unchanged: bool = False
    nicknames: list[str] = field(default_factory=list)


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise CardTableError(f"{where}: {key!r} must be text, not {type(value).__name__}")
    return value.strip()


def read_table(path: Path) -> list[Card]:
    """Every card of the table; CardTableError names the file and line of anything wrong."""
    cards: list[Card] = []
    seen: set[str] = set()
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path.name} line {n}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CardTableError(f"{where}: not JSON ({exc.msg})") from None
                if not isinstance(row, dict):
                    raise CardTableError(f"{where}: not an object")
                name = _text(row, "name", where)
                if not name:
                    raise CardTableError(f"{where}: no name")
                if name in seen:
                    raise CardTableError(f"{where}: a second card named {name!r}")
                seen.add(name)
                rulings = row.get("rulings") or []
                if not isinstance(rulings, list) or not all(isinstance(r, str) for r in rulings):
                    raise CardTableError(f"{where}: 'rulings' must be a list of texts")
                cards.append(
                    Card(
                        name=name,
                        type_line=_text(row, "type", where),
                        mana_cost=_text(row, "mana_cost", where),
                        oracle=_text(row, "oracle", where),
                        pt=_text(row, "pt", where),
                        loyalty=_text(row, "loyalty", where),
                        other_face=_text(row, "other_face", where),
                        rulings=tuple(r.strip() for r in rulings if r.strip()),
                    )
                )
    except FileNotFoundError:
        raise CardTableError(f"card table not found: {path}") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise CardTableError(f"{path.name}: not a readable gzip JSON-lines file: {exc}") from None
    if not cards:
        raise CardTableError(f"{path.name}: holds no card")
    return cards


def read_nicknames(slug: str, folder: Path = NICKNAMES) -> tuple[dict[str, str], bytes]:
    """The game's reviewed nicknames (``nickname = "Card Name"``) and the file's bytes ({} when none)."""
    path = folder / f"{slug}.toml"
    if not path.is_file():
        return {}, b""
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CardTableError(f"{path.name}: not valid TOML: {exc}") from None
    table = data.get("nicknames", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise CardTableError(f"{path.name}: [nicknames] must map each nickname to a card's name")
    return {str(k): v for k, v in table.items()}, raw


def lower_runs(text: str) -> list[list[str]]:
    """The runs of lower-case words in ``text``, split at every capitalised word or punctuation mark."""
    runs: list[list[str]] = [[]]
    for m in re.finditer(r"[A-Za-z]+(?:['\u2019][A-Za-z]+)*|[^\sA-Za-z]", text):
        w = m.group(0)
        if w[0].islower():
            runs[-1].append(name_key(w))
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if r]


def book_vocabulary(texts: Iterable[str]) -> set[str]:
    """Every run of 1..4 words the book writes in lower case inside one clause, seen at least twice."""
    counts: Counter[str] = Counter()
    for text in texts:
        for run in lower_runs(text):
            for n in range(1, _BOOK_PHRASE_WORDS + 1):
                for i in range(len(run) - n + 1):
                    counts[" ".join(run[i : i + n])] += 1
    return {k for k, c in counts.items() if c >= 2}


def is_plain(key: str, book: set[str], zipf: Any) -> bool:
    """Whether a name must be marked in a question to count: a rules phrase of the book, an ordinary
    English word, or too short to tell."""
    words = key.split()
    if not words or len(key) < 3 or key in book:
        return True
    return len(words) == 1 and zipf(key, "en") >= ORDINARY_ZIPF


def names_of(
    cards: list[Card], ids: dict[str, int], nicknames: dict[str, str], book: set[str]
) -> tuple[list[tuple[str, int, str, bool]], list[str]]:
    """(key, card id, kind, plain) for every name, and the nicknames whose card is not in the table."""
    from wordfreq import zipf_frequency

    rows: dict[tuple[str, int], tuple[str, int, str, bool]] = {}

    def add(key: str, card_id: int, kind: str, plain: bool) -> None:
        if key and (key, card_id) not in rows:
            rows[(key, card_id)] = (key, card_id, kind, plain)

    full = {name_key(c.name) for c in cards}
    shorts: Counter[str] = Counter()
    for c in cards:
        if ", " in c.name:
            shorts[name_key(c.name.split(", ", 1)[0])] += 1
    for c in cards:
        cid = ids[c.name]
        side = c.type_line.startswith(SIDE_TYPES) or c.type_line in ("Plane", "Vanguard")
        key = name_key(c.name)
        add(key, cid, "name", side or is_plain(key, book, zipf_frequency))
        if c.other_face and name_key(c.other_face) not in full:
            fk = name_key(c.other_face)
            add(fk, cid, "face", side or is_plain(fk, book, zipf_frequency))
        if ", " in c.name:
            sk = name_key(c.name.split(", ", 1)[0])
            if shorts[sk] == 1 and sk not in full:
                add(sk, cid, "short", side or is_plain(sk, book, zipf_frequency))
    unknown = []
    for nick, target in nicknames.items():
        if target not in ids:
            unknown.append(f"{nick} -> {target}")
            continue
        nk = name_key(nick)
        if nk not in full:
            add(nk, ids[target], "nickname", is_plain(nk, book, zipf_frequency))
    return list(rows.values()), unknown


def load(
    conn: psycopg.Connection, game_id: int, slug: str, path: Path, family_id: int, nicknames: Path = NICKNAMES
) -> CardLoad:
    """Load (or refresh) one game's card table. Runs in the caller's transaction."""
    nick, nick_raw = read_nicknames(slug, nicknames)
    digest = hashlib.sha256()
    try:
        digest.update(path.read_bytes())
    except OSError as exc:
        raise CardTableError(f"card table not readable: {path}: {exc}") from None
    digest.update(nick_raw)
    digest.update(PLAIN_RULE_VERSION.encode())
    sha = digest.hexdigest()
    stored = conn.execute(
        "SELECT sha256, cards, rulings FROM card_tables WHERE game_id = %s", (game_id,)
    ).fetchone()
    if stored is not None and stored[0] == sha:
        return CardLoad(cards=stored[1], rulings=stored[2], unchanged=True)
    cards = read_table(path)
    out = CardLoad(cards=len(cards), rulings=sum(len(c.rulings) for c in cards))
    old = {
        r[0]: (int(r[1]), r[2])
        for r in conn.execute("SELECT name, id, digest FROM cards WHERE game_id = %s", (game_id,))
    }
    listed = {c.name for c in cards}
    gone = [old[n][0] for n in old if n not in listed]
    if gone:
        conn.execute("DELETE FROM cards WHERE id = ANY(%s)", (gone,))
        out.deleted = len(gone)
    changed = [c for c in cards if c.name not in old or old[c.name][1] != c.digest]
    conn.execute(
        "CREATE TEMP TABLE incoming (name text, name_key text, type_line text, mana_cost text, oracle text,"
        " pt text, loyalty text, other_face text, digest text) ON COMMIT DROP"
    )
    with conn.cursor().copy(
        "COPY incoming (name, name_key, type_line, mana_cost, oracle, pt, loyalty, other_face, digest)"
        " FROM STDIN"
    ) as copy:
        for c in changed:
            copy.write_row(
                (
                    c.name,
                    name_key(c.name),
                    c.type_line,
                    c.mana_cost,
                    c.oracle,
                    c.pt,
                    c.loyalty,
                    c.other_face,
                    c.digest,
                )
            )
    conn.execute(
        """
        INSERT INTO cards (game_id, name, name_key, type_line, mana_cost, oracle, pt, loyalty, other_face,
                           digest)
        SELECT %s, name, name_key, type_line, mana_cost, oracle, pt, loyalty, other_face, digest FROM incoming
        ON CONFLICT (game_id, name) DO UPDATE SET
            name_key = EXCLUDED.name_key, type_line = EXCLUDED.type_line, mana_cost = EXCLUDED.mana_cost,
            oracle = EXCLUDED.oracle, pt = EXCLUDED.pt, loyalty = EXCLUDED.loyalty,
            other_face = EXCLUDED.other_face, digest = EXCLUDED.digest
        """,
        (game_id,),
    )
    conn.execute("DROP TABLE incoming")
    out.written = len(changed)
    ids = {r[0]: int(r[1]) for r in conn.execute("SELECT name, id FROM cards WHERE game_id = %s", (game_id,))}
    changed_ids = [ids[c.name] for c in changed]
    conn.execute("DELETE FROM card_rulings WHERE card_id = ANY(%s)", (changed_ids,))
    with conn.cursor().copy("COPY card_rulings (card_id, ord, text) FROM STDIN") as copy:
        for c in changed:
            for i, text in enumerate(c.rulings):
                copy.write_row((ids[c.name], i, text))
    texts = (
        r[0]
        for r in conn.execute(
            "SELECT p.text FROM live_passages p JOIN documents d ON d.id = p.document_id"
            " WHERE p.family_id = %s AND d.kind IN ('rulebook', 'reference')",
            (family_id,),
        )
    )
    names, unknown = names_of(cards, ids, nick, book_vocabulary(texts))
    if unknown:
        raise CardTableError(
            f"nicknames/{slug}.toml names cards the table does not hold: {', '.join(unknown)}"
        )
    conn.execute("DELETE FROM card_names WHERE game_id = %s", (game_id,))
    with conn.cursor().copy("COPY card_names (game_id, key, card_id, kind, plain) FROM STDIN") as copy:
        for key, cid, kind, plain in names:
            copy.write_row((game_id, key, cid, kind, plain))
    out.names = len(names)
    out.nicknames = sorted(nick)
    conn.execute(
        """
        INSERT INTO card_tables (game_id, source, sha256, cards, rulings) VALUES (%s, %s, %s, %s, %s)
        ON CONFLICT (game_id) DO UPDATE SET source = EXCLUDED.source, sha256 = EXCLUDED.sha256,
            cards = EXCLUDED.cards, rulings = EXCLUDED.rulings, loaded_at = now()
        """,
        (game_id, str(path), sha, out.cards, out.rulings),
    )
    return out
