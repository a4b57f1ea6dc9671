"""The ingest pipeline on a real Postgres: a fresh database per test (CREATE DATABASE, migrate, DROP)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from rulesage.db import connect
from rulesage.embed import identity
from rulesage.ingest.model import ParsedDocument, PassageDraft, SectionDraft
from rulesage.ingest.pipeline import ingest_shelf
from tests.support.throwaway_db import throwaway_database

pytestmark = pytest.mark.integration


@pytest.fixture
def db() -> Iterator[str]:
    with throwaway_database("ingest_test_") as url:
        yield url


def q(url: str, sql: str, args: tuple = ()) -> list[tuple]:
    with connect(url) as conn:
        return conn.execute(sql, args).fetchall()


# -- a tiny markdown reader for tests of the store logic (the real extractors are tested on their own) ----
def md_parser(path: Path, *, key: str, kind: str) -> ParsedDocument:
    text = Path(path).read_text()
    sections: list[SectionDraft] = []
    top = ""
    for block in re.split(r"\n(?=## )", text):
        lines = block.strip().splitlines()
        if lines and lines[0].startswith("# "):
            top, lines = lines[0][2:], lines[1:]
        if not lines:
            continue
        head = (top, lines[0].removeprefix("## "))
        paras = [p.strip() for p in "\n".join(lines[1:]).split("\n\n") if p.strip()]
        drafts = [PassageDraft(p, head, None, None) for p in paras]
        sections.append(SectionDraft(head, "\n\n".join(paras), None, None, drafts))
    return ParsedDocument(pages=[], sections=sections)


SHELF = """
[[game]]
slug = "pawns"
name = "Pawns"
family = "pawnish"

[[game]]
slug = "pawns-deluxe"
name = "Pawns Deluxe"
family = "pawnish"

[[document]]
game = "pawns"
key = "pawns-rules"
title = "Pawns rules"
kind = "rulebook"
path = "rules.md"
version = "{version}"

[[document]]
family = "pawnish"
key = "pawns-glossary"
title = "Glossary"
kind = "reference"
path = "glossary.md"

[[document]]
game = "pawns"
key = "pawns-errata"
title = "Errata"
kind = "errata"
path = "errata.md"
amends = "pawns-rules"
"""

RULES_V1 = """# Rules

## Moving

A pawn moves two squares forward on its first move.

A Warlord is a type of Hero.

## Fighting

Heroes roll two dice when they fight. The higher roll wins the fight.

## Winning

The first player to cross the board wins.
"""

RULES_V2 = """# Rules

## Moving

A pawn moves one square forward.

A Warlord is a type of Hero.

## Fighting

Heroes roll two dice when they fight. The higher roll wins the fight.
"""

GLOSSARY = """# Glossary

## Slot

See Pile.

## Pile

A row of squares where pawns wait.
"""

ERRATA = """# Errata

## Moving

The rule used to read "A pawn moves two squares forward on its first move." It now reads "A pawn moves one
square forward."
"""


def make_shelf(tmp: Path, rules: str = RULES_V1, version: str = "1") -> Path:
    (tmp / "rules.md").write_text(rules)
    (tmp / "glossary.md").write_text(GLOSSARY)
    (tmp / "errata.md").write_text(ERRATA)
    path = tmp / "shelf.toml"
    path.write_text(SHELF.format(version=version))
    return path


def live(url: str, key: str) -> dict[str, tuple]:
    rows = q(
        url,
        "SELECT p.text, p.id, p.superseded, p.embedding FROM passages p"
        " JOIN documents d ON d.id = p.document_id WHERE d.key = %s AND p.retired_at IS NULL ORDER BY p.ord",
        (key,),
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_store_errata_aliases_and_idempotent_rerun(db: str, tmp_path: Path) -> None:
    shelf = make_shelf(tmp_path)
    first = ingest_shelf(db, shelf, progress=False, parser=md_parser)
    assert first.failed == []
    assert first.documents == 3 and first.passages == 7 and first.embedded == 7
    assert q(db, "SELECT slug FROM games ORDER BY slug") == [("pawns",), ("pawns-deluxe",)]
    # family-level document: no game, the family's id
    assert q(db, "SELECT game_id IS NULL FROM documents WHERE key = 'pawns-glossary'") == [(True,)]

    # the errata quotes the old wording: that passage is hidden, the link says how it was found
    rules = live(db, "pawns-rules")
    old_id, superseded, _ = rules["A pawn moves two squares forward on its first move."]
    assert superseded
    assert sum(1 for v in rules.values() if v[1]) == 1
    (link,) = q(db, "SELECT old_passage_id, method, evidence FROM supersessions")
    assert link[0] == old_id and link[1] == "section-name" and "old wording" in link[2]

    # aliases from the books, each with verbatim evidence from its passage
    aliases = q(
        db,
        "SELECT a.alias, a.term, a.source, a.evidence, p.text FROM aliases a"
        " JOIN passages p ON p.id = a.passage_id",
    )
    assert {(a, t, s) for a, t, s, _, _ in aliases} == {
        ("warlord", "hero", "definition"),
        ("slot", "pile", "see"),
    }
    assert all(ev in text for _, _, _, ev, text in aliases)

    # tsvector, doc_len and BM25 postings agree exactly
    bad = q(
        db,
        "SELECT p.id FROM passages p LEFT JOIN"
        " (SELECT passage_id, sum(tf) AS n, count(*) AS lexemes FROM postings GROUP BY passage_id) s"
        " ON s.passage_id = p.id"
        " WHERE coalesce(s.n, 0) <> p.doc_len OR coalesce(s.lexemes, 0) <> length(p.tsv)",
    )
    assert bad == []
    assert (
        q(db, "SELECT count(*) FROM passages WHERE tsv @@ to_tsquery('english', 'moving')")[0][0] >= 1
    )  # heading

    # the planner counts what was written: a family left out of its statistics had its BM25 query planned
    # for one posting and run for seconds
    assert q(db, "SELECT reltuples::bigint FROM pg_class WHERE relname = 'postings'") == q(
        db, "SELECT count(*) FROM postings"
    )

    # one active embedding space, recording the model identity
    (space,) = q(db, "SELECT model, dim, max_tokens FROM embedding_space WHERE active")
    assert space[0] == identity().model and space[1:] == (384, 256)

    again = ingest_shelf(db, shelf, progress=False, parser=md_parser)
    assert again.skipped_unchanged == 3 and again.documents == 0 and again.embedded == 0
    assert again.seconds < 5


def test_new_release_keeps_unchanged_passages_and_releases_errata(db: str, tmp_path: Path) -> None:
    ingest_shelf(db, make_shelf(tmp_path), progress=False, parser=md_parser)
    before = live(db, "pawns-rules")
    summary = ingest_shelf(db, make_shelf(tmp_path, RULES_V2, version="2"), progress=False, parser=md_parser)
    assert summary.documents == 1 and summary.skipped_unchanged == 2
    after = live(db, "pawns-rules")

    kept = "Heroes roll two dice when they fight. The higher roll wins the fight."
    assert after[kept][0] == before[kept][0]  # same id
    assert np.array_equal(
        after[kept][2].to_numpy(), before[kept][2].to_numpy()
    )  # same vector, not re-embedded
    assert summary.reembedded_changed == 1  # only "A pawn moves one square forward."
    assert summary.retired == 2
    retired = q(db, "SELECT text FROM passages WHERE retired_at IS NOT NULL ORDER BY ord")
    assert retired == [
        ("A pawn moves two squares forward on its first move.",),
        ("The first player to cross the board wins.",),
    ]
    assert q(
        db,
        "SELECT r.version, passages_kept, passages_added, passages_retired FROM document_releases"
        " r JOIN documents d ON d.id = r.document_id WHERE d.key = 'pawns-rules' ORDER BY r.id",
    ) == [
        ("1", 0, 4, 0),
        ("2", 2, 1, 2),
    ]
    # the new release already prints the errata's new wording: nothing live is hidden any more
    assert not any(v[1] for v in after.values())
    new_id = after["A pawn moves one square forward."][0]
    # the link is kept (the errata still talks about it), but the new wording is not hidden
    (evidence,) = q(db, "SELECT evidence FROM supersessions WHERE old_passage_id = %s", (new_id,))
    assert "new wording" in evidence[0]


def test_corrupt_pdf_fails_alone(db: str, tmp_path: Path) -> None:
    pytest.importorskip("rulesage.ingest.extract.pdf")
    shelf = make_shelf(tmp_path)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n" + secrets.token_bytes(3000))
    shelf.write_text(
        shelf.read_text()
        + '\n[[document]]\ngame = "pawns-deluxe"\nkey = "deluxe-rules"\ntitle = "Deluxe"\nkind = "rulebook"\n'
        'path = "broken.pdf"\n'
    )

    def parser(path: Path, *, key: str, kind: str) -> ParsedDocument:
        if path.suffix == ".pdf":
            from rulesage.ingest.parse import parse_document

            return parse_document(path, key=key, kind=kind)
        return md_parser(path, key=key, kind=kind)

    summary = ingest_shelf(db, shelf, progress=False, parser=parser)
    assert summary.documents == 3
    (failure,) = summary.failed
    assert failure[0] == "deluxe-rules" and failure[1].endswith("broken.pdf")
    assert "extraction failed" in failure[2] and "broken.pdf" in failure[2]
    assert q(db, "SELECT key, error FROM ingest_failures") == [("deluxe-rules", failure[2])]
    assert q(db, "SELECT count(*) FROM documents WHERE key = 'deluxe-rules'") == [(0,)]
    assert q(db, "SELECT count(*) FROM passages p JOIN documents d ON d.id = p.document_id") == [(7,)]


def test_a_failure_while_storing_leaves_nothing_half_written(db: str, tmp_path: Path) -> None:
    def bad_parser(path: Path, *, key: str, kind: str) -> ParsedDocument:
        parsed = md_parser(path, key=key, kind=kind)
        if key == "pawns-glossary":  # an impossible passage kind: the insert fails mid-document
            parsed.sections[-1].passages[-1].kind = "bogus"  # type: ignore[assignment]
        return parsed

    summary = ingest_shelf(db, make_shelf(tmp_path), progress=False, parser=bad_parser)
    assert [f[0] for f in summary.failed] == ["pawns-glossary"]
    assert "storing failed" in summary.failed[0][2]
    assert q(db, "SELECT count(*) FROM documents WHERE key = 'pawns-glossary'") == [(0,)]
    assert q(db, "SELECT count(*) FROM sections s JOIN documents d ON d.id = s.document_id") == [(4,)]
    assert q(db, "SELECT count(*) FROM pages") == [(0,)]
    # the rest continued, and the document goes in once it reads well
    assert summary.documents == 2
    fixed = ingest_shelf(db, make_shelf(tmp_path), progress=False, parser=md_parser)
    assert fixed.documents == 1 and fixed.failed == []
    assert q(db, "SELECT count(*) FROM ingest_failures") == [(0,)]


def test_game_selection(db: str, tmp_path: Path) -> None:
    summary = ingest_shelf(db, make_shelf(tmp_path), games=["pawns-deluxe"], progress=False, parser=md_parser)
    assert summary.documents == 1  # its family's glossary, not the other game's rulebook or errata
    assert q(db, "SELECT key FROM documents") == [("pawns-glossary",)]


def test_a_new_embedding_model_reembeds_everything(db: str, tmp_path: Path) -> None:
    from rulesage.embed import Embedder

    shelf = make_shelf(tmp_path)
    ingest_shelf(db, shelf, progress=False, parser=md_parser)
    (old_space,) = q(db, "SELECT id FROM embedding_space WHERE active")
    # the other encoder (the tuned one or MiniLM off the shelf, whichever is not configured)
    other = Embedder(encoder="minilm" if Embedder().encoder == "tuned" else "tuned", threads=1)
    summary = ingest_shelf(db, shelf, progress=False, parser=md_parser, embedder=other)
    assert summary.reembedded_space == 7 and summary.skipped_unchanged == 3
    (space,) = q(db, "SELECT id, model FROM embedding_space WHERE active")
    assert space[0] != old_space[0] and space[1] == other.identity.model
    assert q(
        db, "SELECT count(*) FROM passages WHERE searchable AND space_id IS DISTINCT FROM %s", (space[0],)
    ) == [(0,)]


def test_real_parser_small_md_and_xml_shelf(db: str, tmp_path: Path) -> None:
    (tmp_path / "rules.md").write_text(RULES_V1)
    (tmp_path / "glossary.xml").write_text(
        '<?xml version="1.0"?>\n<sect1><title>Glossary</title><variablelist>'
        "<varlistentry><term>Slot</term><listitem><para>See Pile.</para></listitem></varlistentry>"
        "<varlistentry><term>Pile</term><listitem><para>A row of squares where pawns wait.</para></listitem>"
        "</varlistentry></variablelist></sect1>\n"
    )
    shelf = tmp_path / "shelf.toml"
    shelf.write_text(
        '[[game]]\nslug = "pawns"\nname = "Pawns"\nfamily = "pawnish"\n\n'
        '[[document]]\ngame = "pawns"\nkey = "pawns-rules"\ntitle = "Rules"\nkind = "rulebook"\n'
        'path = "rules.md"\n\n'
        '[[document]]\nfamily = "pawnish"\nkey = "gloss"\ntitle = "Glossary"\nkind = "reference"\n'
        'path = "glossary.xml"\n'
    )
    first = ingest_shelf(db, shelf, progress=False)
    assert first.failed == [] and first.documents == 2 and first.passages >= 2
    assert q(db, "SELECT count(*) FROM passages WHERE text LIKE '%%Warlord is a type of Hero%%'")[0][0] >= 1
    again = ingest_shelf(db, shelf, progress=False)
    assert again.skipped_unchanged == 2 and again.documents == 0 and again.seconds < 5
