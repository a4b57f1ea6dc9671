"""MTG Comprehensive Rules: a change article supersedes the old wording of the rules it changes; the next
release replaces the old one, re-embedding only the changed rules, and nothing of it stays hidden.

Reads the books from ../shared (eval-only licence: never copied into the project)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rulesage.config import shared_dir
from rulesage.core.text import normalise
from rulesage.db import connect
from rulesage.ingest.pipeline import ingest_shelf
from tests.support.throwaway_db import throwaway_database

pytestmark = pytest.mark.integration

MTG = shared_dir() / "corpus" / "mtg"
OLD = MTG / "MagicCompRules_20220218.txt"
NEW = MTG / "MagicCompRules_20220429.txt"
CHANGES = MTG / "comprehensive-rules-changes-2022-04-20.md"

if not (OLD.exists() and NEW.exists() and CHANGES.exists()):
    pytest.skip("the shared MTG corpus is not mounted", allow_module_level=True)
pytest.importorskip("rulesage.ingest.numbered")
pytest.importorskip("rulesage.ingest.extract.markup")


def manifest(tmp: Path, *releases: tuple[Path, str]) -> Path:
    parts = ['[[game]]\nslug = "mtg"\nname = "Magic: The Gathering"\nfamily = "mtg"\n']
    for path, version in releases:
        parts.append(
            f'[[document]]\ngame = "mtg"\nkey = "mtg-cr"\ntitle = "Comprehensive Rules"\nkind = "rulebook"\n'
            f'path = "{path}"\nlicence = "eval-only"\nversion = "{version}"\n'
        )
    parts.append(
        '[[document]]\ngame = "mtg"\nkey = "mtg-cr-changes-2022-04"\ntitle = "Rules changes"\n'
        f'kind = "errata"\npath = "{CHANGES}"\nlicence = "eval-only"\namends = "mtg-cr"\n'
    )
    out = tmp / "shelf.toml"
    out.write_text("\n".join(parts))
    return out


@pytest.fixture(scope="module")
def db() -> Iterator[str]:
    with throwaway_database("ingest_mtg_") as url:
        yield url


def q(url: str, sql: str, args: tuple = ()) -> list[tuple]:
    with connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def book_passages(url: str) -> list[tuple]:
    return q(
        url,
        "SELECT p.id, p.rule_id, p.kind, p.text, p.superseded, p.searchable FROM passages p"
        " JOIN documents d ON d.id = p.document_id WHERE d.key = 'mtg-cr' AND p.retired_at IS NULL"
        " ORDER BY p.ord",
    )


def test_change_article_supersedes_then_new_release_replaces(
    db: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("mtg")
    first = ingest_shelf(db, manifest(tmp, (OLD, "2022-02-18")), progress=False)
    assert first.failed == [] and first.documents == 2

    rows = book_passages(db)
    hidden = [r for r in rows if r[4]]
    hidden_rules = {r[1] for r in hidden}
    # the rules the article rewords are hidden in the February release ...
    assert {"702.75a", "612.7"} <= hidden_rules
    # ... but not rules it merely adds under a number the old book used for something else (122.1c loyalty)
    assert "122.1c" not in hidden_rules
    assert len(hidden) <= 12
    # the old wording never surfaces in a live passage any arm can see
    visible = [normalise(r[3]) for r in rows if r[5] and not r[4]]
    for _, rule_id, _, text, _, _ in hidden:
        body = normalise(text)
        assert not any(body in v for v in visible), f"old wording of {rule_id} still visible"
    methods = q(db, "SELECT DISTINCT method FROM supersessions")
    assert ("rule-number",) in methods

    changed_rule_rows = q(db, "SELECT count(*) FROM passages WHERE rule_id = '702.75' AND searchable")[0][0]
    assert changed_rule_rows >= 1

    # the April release replaces February's: only the changed rules are embedded again
    second = ingest_shelf(db, manifest(tmp, (OLD, "2022-02-18"), (NEW, "2022-04-29")), progress=False)
    assert second.failed == []
    assert second.documents == 1 and second.skipped_unchanged == 2
    assert 0 < second.reembedded_changed <= 150, second.to_dict()
    assert second.retired > 0
    (release,) = q(
        db,
        "SELECT r.passages_kept, r.passages_added, r.passages_retired FROM document_releases r"
        " JOIN documents d ON d.id = r.document_id WHERE d.key = 'mtg-cr' AND r.version = '2022-04-29'",
    )
    kept, added, _ = release
    assert kept > 10 * added

    rows = book_passages(db)
    assert [r[1] for r in rows if r[4]] == []  # nothing of the new release is left superseded
    hideaway = [r for r in rows if r[1] == "702.75a"]
    assert hideaway and '"Hideaway N" means' in hideaway[0][3]
    # the February wording is retired, not deleted (old rulings cite it)
    retired = q(
        db,
        "SELECT count(*) FROM passages WHERE rule_id = '702.75a' AND retired_at IS NOT NULL AND superseded",
    )
    assert retired == [(1,)]

    # and the same manifest again is a fast no-op
    third = ingest_shelf(db, manifest(tmp, (OLD, "2022-02-18"), (NEW, "2022-04-29")), progress=False)
    assert third.documents == 0 and third.skipped_unchanged == 3 and third.seconds < 10
