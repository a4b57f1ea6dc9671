"""A shelf mixing good books and hostile files, ingested into a real Postgres: the good books are kept, and
nothing of a bad one is (no document, page, section, passage or posting row) — only its failure, with why.

Bad files: a truncated PDF, a PDF whose page object is corrupt (opens, then fails page by page), an
encrypted PDF, a PDF without text, HTML nested thousands deep, and a Markdown file with a NUL byte past the
text-file sniff (kept, the NUL replaced). A parse result poisoned with a NUL byte fails in the store step,
inside the document's transaction, and leaves nothing either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rulesage.db import connect
from rulesage.ingest.model import ParsedDocument
from rulesage.ingest.pipeline import ingest_shelf
from tests.support.gateway_fixtures import throwaway_database

pytestmark = pytest.mark.integration
fpdf = pytest.importorskip("fpdf")

RULES = (
    "Setup. Each player takes five cards and the oldest player goes first. "
    "On your turn draw one card, then play one card or pass. The game ends when the deck is empty. "
)
GOOD_MD = (
    "# Hearthstones\n\n## Setup\n\n" + RULES + "\n\n## Winning\n\nThe player with the most stones wins.\n"
)


def _pdf(path: Path, *, encrypt: bool = False, text: bool = True) -> bytes:
    pdf = fpdf.FPDF()
    if encrypt:
        pdf.set_encryption(owner_password="o", user_password="u")
    pdf.set_font("helvetica", size=11)
    for _ in range(2):
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, RULES * 2)
        else:
            pdf.rect(20, 20, 80, 40)
    data = bytes(pdf.output())
    path.write_bytes(data)
    return data


def _broken_page_pdf(path: Path) -> None:
    """A PDF that opens (the cross-reference table is intact) but whose first page object is damaged."""
    data = bytearray(_pdf(path))
    k = data.index(b"/Kids [")
    data[k + 7] = 0  # the first page's reference in the page tree: the page count stands, the page is gone
    path.write_bytes(bytes(data))


BAD = {
    "cut": "cut.pdf",
    "broken-page": "broken-page.pdf",
    "locked": "locked.pdf",
    "no-text": "no-text.pdf",
    "deep": "deep.html",
}
GOOD = {"good-md", "good-pdf", "nul"}


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile-shelf")
    (d / "good.md").write_text(GOOD_MD)
    _pdf(d / "good.pdf")
    whole = _pdf(d / "cut.pdf")
    (d / "cut.pdf").write_bytes(whole[: len(whole) // 2])
    _broken_page_pdf(d / "broken-page.pdf")
    _pdf(d / "locked.pdf", encrypt=True)
    _pdf(d / "no-text.pdf", text=False)
    (d / "deep.html").write_text("<html><body>" + "<div>" * 5000 + "<p>" + RULES + "</p>" + "</div>" * 5000)
    # the NUL sits past the first 4 KiB, where the text-file sniff does not look
    (d / "nul.md").write_bytes(("# Nul\n\n" + RULES * 40).encode() + b"\n\nHidden\x00byte " + RULES.encode())
    docs = [("good-md", "good.md"), ("good-pdf", "good.pdf"), ("nul", "nul.md"), *BAD.items()]
    manifest = ['[[game]]\nslug = "hearthstones"\nname = "Hearthstones"\nfamily = "hearth"\n']
    for key, file in docs:
        manifest.append(
            f'[[document]]\ngame = "hearthstones"\nkey = "{key}"\ntitle = "{key}"\nkind = "rulebook"\n'
            f'path = "{file}"\n'
        )
    (d / "shelf.toml").write_text("\n".join(manifest))
    return d / "shelf.toml"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database() as u:
        yield u


def _rows(url: str, sql: str, args: tuple = ()) -> list[tuple]:
    with connect(url) as conn:
        return conn.execute(sql, args).fetchall()


def test_good_books_kept_bad_files_leave_nothing(url: str, shelf: Path) -> None:
    summary = ingest_shelf(url, shelf, progress=False)

    failed = {key: error for key, _, error in summary.failed}
    assert set(failed) == set(BAD), summary.failed
    assert "encrypted" in failed["locked"]
    assert "no text" in failed["no-text"]
    assert "corrupt" in failed["cut"] and "corrupt" in failed["broken-page"]
    assert "nested too deeply" in failed["deep"]
    for key, error in failed.items():  # a parser bug would say "parser error (SomeException)"
        assert "parser error" not in error, (key, error)
    assert summary.documents == len(GOOD)

    stored = dict(
        _rows(
            url, "SELECT key, (SELECT count(*) FROM passages p WHERE p.document_id = d.id) FROM documents d"
        )
    )
    assert set(stored) == GOOD and all(n > 0 for n in stored.values())
    # nothing of a bad file anywhere: every page, section, passage and posting belongs to a good document
    for table in ("pages", "sections", "passages"):
        orphans = _rows(
            url,
            f"SELECT count(*) FROM {table} t WHERE t.document_id NOT IN"
            " (SELECT id FROM documents WHERE key = ANY(%s))",
            (list(GOOD),),
        )
        assert orphans == [(0,)], table
    assert _rows(url, "SELECT count(*) FROM postings WHERE passage_id NOT IN (SELECT id FROM passages)") == [
        (0,)
    ]
    text = " ".join(r[0] for r in _rows(url, "SELECT text FROM passages"))
    assert "\x00" not in text and "Hidden\ufffdbyte" in text
    recorded = {r[0] for r in _rows(url, "SELECT key FROM ingest_failures")}
    assert recorded == set(BAD)
    # the good books are searchable: every passage has a vector
    assert _rows(url, "SELECT count(*) FROM passages WHERE embedding IS NULL AND searchable") == [(0,)]


def test_rerun_keeps_the_good_and_still_refuses_the_bad(url: str, shelf: Path) -> None:
    summary = ingest_shelf(url, shelf, progress=False)
    assert summary.skipped_unchanged == len(GOOD) and summary.documents == 0
    assert {key for key, _, _ in summary.failed} == set(BAD)
    assert {r[0] for r in _rows(url, "SELECT key FROM documents")} == GOOD


def test_a_write_failing_midway_is_rolled_back(url: str, shelf: Path, tmp_path: Path) -> None:
    """The parse succeeds but one passage carries a NUL byte, which Postgres refuses: the document row,
    its pages, sections and earlier passages were already written in that transaction and must vanish."""
    from rulesage.ingest.parse import parse_document

    (tmp_path / "poison.md").write_text(GOOD_MD.replace("Hearthstones", "Poison") * 3)
    (tmp_path / "shelf.toml").write_text(
        '[[game]]\nslug = "hearthstones"\nname = "Hearthstones"\nfamily = "hearth"\n\n'
        '[[document]]\ngame = "hearthstones"\nkey = "poison"\ntitle = "poison"\nkind = "rulebook"\n'
        'path = "poison.md"\n'
    )

    def poisoned(path: Path, *, key: str, kind: str) -> ParsedDocument:
        doc = parse_document(path, key=key, kind=kind)
        doc.passages[-1].text += "\x00"
        return doc

    before = {t: _rows(url, f"SELECT count(*) FROM {t}")[0][0] for t in ("pages", "sections", "passages")}
    summary = ingest_shelf(url, tmp_path / "shelf.toml", progress=False, parser=poisoned)
    assert [k for k, _, _ in summary.failed] == ["poison"] and "storing failed" in summary.failed[0][2]
    assert _rows(url, "SELECT count(*) FROM documents WHERE key = 'poison'") == [(0,)]
    after = {t: _rows(url, f"SELECT count(*) FROM {t}")[0][0] for t in ("pages", "sections", "passages")}
    assert after == before
