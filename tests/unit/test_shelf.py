"""The shelf manifest: parsing, validation messages that name the entry, --game selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from rulesage.config import shared_dir
from rulesage.ingest.shelf import ShelfError, load_shelf, parse_shelf

SHARED_SHELF = shared_dir() / "corpus" / "shelf.toml"


def _write(tmp_path: Path, body: str, files: tuple[str, ...] = ("a.md", "b.md", "g.md", "e.md")) -> Path:
    for f in files:
        (tmp_path / f).write_text("# x\n\ntext\n")
    path = tmp_path / "shelf.toml"
    path.write_text(body)
    return path


BASE = """
[[game]]
slug = "alpha"
name = "Alpha"
family = "fam"

[[game]]
slug = "beta"
name = "Beta"
family = "fam"

[[game]]
slug = "other"
name = "Other"
family = "solo"

[[document]]
game = "alpha"
key = "alpha-rules"
title = "Alpha rules"
kind = "rulebook"
path = "a.md"
licence = "CC0"
version = "1"

[[document]]
game = "beta"
key = "beta-rules"
title = "Beta rules"
kind = "rulebook"
path = "b.md"

[[document]]
family = "fam"
key = "glossary"
title = "Glossary"
kind = "reference"
path = "g.md"

[[document]]
game = "other"
key = "other-errata"
title = "Errata"
kind = "errata"
path = "e.md"
amends = "alpha-rules"
"""


def test_parses_games_and_documents(tmp_path: Path) -> None:
    shelf = load_shelf(_write(tmp_path, BASE))
    assert [g.slug for g in shelf.games] == ["alpha", "beta", "other"]
    assert [d.key for d in shelf.documents] == ["alpha-rules", "beta-rules", "glossary", "other-errata"]
    alpha = shelf.documents[0]
    assert alpha.path == (tmp_path / "a.md").resolve() and alpha.version == "1" and alpha.licence == "CC0"
    glossary = shelf.documents[2]
    assert glossary.game is None and glossary.family == "fam"
    assert shelf.documents[3].amends == "alpha-rules"


def test_family_document_belongs_to_every_game_of_the_family(tmp_path: Path) -> None:
    shelf = load_shelf(_write(tmp_path, BASE))
    assert [d.key for d in shelf.documents_of("alpha")] == ["alpha-rules", "glossary"]
    assert [d.key for d in shelf.documents_of("beta")] == ["beta-rules", "glossary"]
    assert [d.key for d in shelf.documents_of("other")] == ["other-errata"]


def test_select_keeps_own_and_family_documents(tmp_path: Path) -> None:
    shelf = load_shelf(_write(tmp_path, BASE)).select(["beta"])
    assert [g.slug for g in shelf.games] == ["beta"]
    assert [d.key for d in shelf.documents] == ["beta-rules", "glossary"]
    assert load_shelf(_write(tmp_path, BASE)).select(None).documents[0].key == "alpha-rules"


def test_select_unknown_game_names_it(tmp_path: Path) -> None:
    with pytest.raises(ShelfError, match="unknown game 'gamma'"):
        load_shelf(_write(tmp_path, BASE)).select(["gamma"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('game = "beta"\nkey = "beta-rules"', 'game = "zeta"\nkey = "beta-rules"'),
            "'beta-rules'.*unknown game 'zeta'",
        ),
        (('kind = "reference"', 'kind = "manual"'), "'glossary'.*bad kind 'manual'"),
        (('path = "b.md"', 'path = "missing.md"'), "'beta-rules'.*missing file 'missing.md'"),
        (
            ('family = "fam"\nkey = "glossary"', 'family = "nope"\nkey = "glossary"'),
            "'glossary'.*unknown family",
        ),
        (('amends = "alpha-rules"', 'amends = "ghost"'), "'other-errata'.*amends unknown key 'ghost'"),
        (('title = "Beta rules"\n', ""), "'beta-rules'.*missing or empty 'title'"),
        (('game = "beta"\nkey', 'game = "beta"\nfamily = "fam"\nkey'), "'beta-rules'.*not both"),
    ],
)
def test_validation_errors_name_the_entry(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    assert change[0] in BASE
    with pytest.raises(ShelfError, match=message):
        load_shelf(_write(tmp_path, BASE.replace(change[0], change[1], 1)))


def _release(path: str, version: str) -> str:
    return (
        f'\n[[document]]\ngame = "alpha"\nkey = "alpha-rules"\ntitle = "t"\nkind = "rulebook"\n'
        f'path = "{path}"\nversion = "{version}"\n'
    )


def test_duplicate_release_and_duplicate_game(tmp_path: Path) -> None:
    again = BASE + _release("a.md", "1")
    with pytest.raises(ShelfError, match="'alpha-rules' version '1': duplicate key"):
        load_shelf(_write(tmp_path, again))
    twice = BASE + '\n[[game]]\nslug = "alpha"\nname = "A"\nfamily = "fam"\n'
    with pytest.raises(ShelfError, match="game 'alpha': duplicate slug"):
        load_shelf(_write(tmp_path, twice))


def test_releases_and_last_release(tmp_path: Path) -> None:
    body = BASE + _release("b.md", "2")
    shelf = load_shelf(_write(tmp_path, body))
    first, second = (d for d in shelf.documents if d.key == "alpha-rules")
    assert not shelf.is_last_release(first) and shelf.is_last_release(second)
    assert second.label == "alpha-rules@2"


def test_bad_toml_and_missing_manifest(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[game]\nslug=")
    with pytest.raises(ShelfError, match="not valid TOML"):
        load_shelf(bad)
    with pytest.raises(ShelfError, match="not found"):
        load_shelf(tmp_path / "nope.toml")


def test_parse_shelf_without_file_checks() -> None:
    data = {
        "game": [{"slug": "g", "name": "G", "family": "f"}],
        "document": [{"game": "g", "key": "k", "title": "T", "kind": "faq", "path": "nowhere.md"}],
    }
    shelf = parse_shelf(data, Path("/tmp"), check_files=False)
    assert shelf.documents[0].path == Path("/tmp/nowhere.md")


@pytest.mark.skipif(not SHARED_SHELF.exists(), reason="shared corpus not mounted")
def test_the_shared_shelf_is_valid() -> None:
    shelf = load_shelf(SHARED_SHELF)
    assert len(shelf.games) >= 10
    mtg = shelf.select(["mtg"])
    assert [d.label for d in mtg.documents] == [
        "mtg-cr@2022-02-18",
        "mtg-cr@2022-04-29",
        "mtg-cr-changes-2022-04",
    ]
    klondike = shelf.select(["solitaire-klondike"])
    assert {d.key for d in klondike.documents} == {"solitaire-klondike-rules", "aisleriot-glossary"}
