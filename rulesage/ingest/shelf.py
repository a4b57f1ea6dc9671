"""The shelf manifest (``shelf.toml``): which games exist, in which family, and which documents they own.

Format (see ../shared/corpus/shelf.toml)::

    [[game]]      slug, name, family, optional categories (the game's category map, a TOML file relative
                  to the manifest: question categories -> the book's sections; rulesage.core.categories),
                  optional cards (the game's card table, gzip JSON lines relative to the manifest:
                  every card's text and official rulings; rulesage.ingest.cards)
    [[document]]  game | family, key, title, kind, path (relative to the manifest), licence,
                  optional version (a later release of the same key replaces the earlier one) and
                  amends (key of the book an errata/faq document corrects)

A family-level document belongs to every game of its family. Validation errors name the entry.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

KINDS = ("rulebook", "expansion", "errata", "faq", "reference")


class ShelfError(ValueError):
    """The manifest is unreadable or an entry is invalid; the message names the entry."""


@dataclass(frozen=True)
class GameEntry:
    slug: str
    name: str
    family: str
    categories: Path | None = None  # absolute path of the game's category map, if it has one
    cards: Path | None = None  # absolute path of the game's card table, if it has one


@dataclass(frozen=True)
class DocumentEntry:
    key: str
    title: str
    kind: str
    path: Path  # absolute
    family: str
    game: str | None = None  # None: a family-level document
    licence: str = ""
    version: str = ""
    amends: str | None = None
    index: int = 0  # position in the manifest (0-based among documents)

    @property
    def label(self) -> str:
        return f"{self.key}@{self.version}" if self.version else self.key


@dataclass
class Shelf:
    path: Path
    games: list[GameEntry] = field(default_factory=list)
    documents: list[DocumentEntry] = field(default_factory=list)

    def families(self) -> list[str]:
        return list(dict.fromkeys(g.family for g in self.games))

    def documents_of(self, slug: str) -> list[DocumentEntry]:
        """A game's own documents plus its family's documents, in manifest order."""
        game = self.game(slug)
        return [d for d in self.documents if d.game == slug or (d.game is None and d.family == game.family)]

    def game(self, slug: str) -> GameEntry:
        for g in self.games:
            if g.slug == slug:
                return g
        raise ShelfError(f"unknown game {slug!r} (the shelf {self.path} has {len(self.games)} games)")

    def is_last_release(self, doc: DocumentEntry) -> bool:
        """True when no later entry of the manifest carries the same key."""
        return not any(d.key == doc.key and d.index > doc.index for d in self.documents)

    def select(self, slugs: list[str] | None) -> Shelf:
        """Keep the named games, their own documents and their families' documents (all when None/empty)."""
        if not slugs:
            return self
        games = [self.game(s) for s in dict.fromkeys(slugs)]
        families = {g.family for g in games}
        wanted = {g.slug for g in games}
        docs = [d for d in self.documents if (d.game in wanted) or (d.game is None and d.family in families)]
        return replace(self, games=games, documents=docs)


def _req(entry: dict[str, object], name: str, what: str) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ShelfError(f"{what}: missing or empty {name!r}")
    return value.strip()


def _opt(entry: dict[str, object], name: str, what: str) -> str | None:
    value = entry.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ShelfError(f"{what}: {name!r} must be a string, not {type(value).__name__}")
    return value.strip() or None


def _file(entry: dict[str, object], name: str, label: str, base: Path, what: str, check: bool) -> Path | None:
    """An optional file an entry names (relative to the manifest), absolute; None when it names none."""
    rel = _opt(entry, name, what)
    if rel is None:
        return None
    path = (base / rel).resolve()
    if check and not path.is_file():
        raise ShelfError(f"{what}: missing {label} {rel!r} (looked for {path})")
    return path


def parse_shelf(
    data: dict[str, object], base: Path, source: str = "shelf.toml", check_files: bool = True
) -> Shelf:
    """Validate a decoded manifest. ``base`` is the folder document paths are relative to."""
    raw_games = data.get("game", [])
    raw_docs = data.get("document", [])
    if not isinstance(raw_games, list) or not isinstance(raw_docs, list):
        raise ShelfError(f"{source}: [[game]] and [[document]] must be arrays of tables")
    games: list[GameEntry] = []
    seen_games: set[str] = set()
    for i, g in enumerate(raw_games):
        what = f"{source}: game #{i + 1}"
        if not isinstance(g, dict):
            raise ShelfError(f"{what}: not a table")
        slug = _req(g, "slug", what)
        what = f"{source}: game {slug!r}"
        if slug in seen_games:
            raise ShelfError(f"{what}: duplicate slug")
        seen_games.add(slug)
        categories = _file(g, "categories", "category map", base, what, check_files)
        cards = _file(g, "cards", "card table", base, what, check_files)
        games.append(
            GameEntry(
                slug=slug,
                name=_req(g, "name", what),
                family=_req(g, "family", what),
                categories=categories,
                cards=cards,
            )
        )
    by_slug = {g.slug: g for g in games}
    families = {g.family for g in games}

    docs: list[DocumentEntry] = []
    releases: dict[str, DocumentEntry] = {}
    for i, d in enumerate(raw_docs):
        what = f"{source}: document #{i + 1}"
        if not isinstance(d, dict):
            raise ShelfError(f"{what}: not a table")
        key = _req(d, "key", what)
        version = _opt(d, "version", what) or ""
        what = f"{source}: document {key!r}" + (f" version {version!r}" if version else "")
        game = _opt(d, "game", what)
        family = _opt(d, "family", what)
        if game and family:
            raise ShelfError(f"{what}: give either 'game' or 'family', not both")
        if game:
            if game not in by_slug:
                raise ShelfError(f"{what}: unknown game {game!r}")
            family = by_slug[game].family
        elif family:
            if family not in families:
                raise ShelfError(f"{what}: unknown family {family!r} (no game of the shelf is in it)")
        else:
            raise ShelfError(f"{what}: needs 'game' or 'family'")
        kind = _req(d, "kind", what)
        if kind not in KINDS:
            raise ShelfError(f"{what}: bad kind {kind!r} (expected one of {', '.join(KINDS)})")
        rel = _req(d, "path", what)
        path = (base / rel).resolve()
        if check_files and not path.is_file():
            raise ShelfError(f"{what}: missing file {rel!r} (looked for {path})")
        amends = _opt(d, "amends", what)
        if amends == key:
            raise ShelfError(f"{what}: a document cannot amend itself")
        entry = DocumentEntry(
            key=key,
            title=_req(d, "title", what),
            kind=kind,
            path=path,
            family=family,
            game=game,
            licence=_opt(d, "licence", what) or "",
            version=version,
            amends=amends,
            index=len(docs),
        )
        earlier = releases.get(key)
        if earlier is not None:
            if earlier.version == version:
                raise ShelfError(f"{what}: duplicate key (same version {version!r} as an earlier entry)")
            if (earlier.game, earlier.family) != (game, family):
                raise ShelfError(f"{what}: a release must stay with the game/family of {earlier.label}")
        releases[key] = entry
        docs.append(entry)
    keys = set(releases)
    for doc in docs:
        if doc.amends is not None and doc.amends not in keys:
            raise ShelfError(f"{source}: document {doc.label!r}: amends unknown key {doc.amends!r}")
    return Shelf(path=base / source, games=games, documents=docs)


def load_shelf(path: Path, check_files: bool = True) -> Shelf:
    """Read and validate a manifest file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShelfError(f"shelf manifest not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ShelfError(f"{path}: not valid TOML: {exc}") from None
    shelf = parse_shelf(data, path.resolve().parent, source=path.name, check_files=check_files)
    shelf.path = path.resolve()
    return shelf
