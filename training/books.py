"""Plain text of the shelf's books, page by page, for writing and checking training questions.

``python -m training.books dump OUT`` writes one text file per document page (or one per
document for unpaged sources) under OUT, for a writer to read and copy quotes from.
``python -m training.books check FILE.jsonl ...`` checks every row of a training file: the
game and document exist, the quote (8-40 words) stands verbatim on the named page under the gold matching
rule (rulesage.core.text.normalise), MTG rows name a rule number that exists, and ``source`` is a URL or
``written``; a row with ``answerable: false`` (the book is silent) carries no quote. It prints one line
per bad row and a count, and exits 1 when any row is bad.

PDF pages come from ``pdftotext`` in reading order (poppler-utils); the Basic Fantasy text splits on form
feeds and reads its side-by-side columns left first; HTML, Markdown and XML are read whole with the
standard library.
"""

from __future__ import annotations

import html.parser
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rulesage.config import shared_dir
from rulesage.core.text import normalise
from rulesage.ingest.extract.layout_text import column_order
from rulesage.ingest.shelf import load_shelf

SHELF = shared_dir() / "corpus" / "shelf.toml"
MTG_RULE = re.compile(r"^\s*(\d{3}\.\d+[a-z]?)\.?\s", re.M)
FORUM_MIN_WORDS = 30  # real posts: median 40 words, the situation first
STYLES = {"casual", "alias", "scenario", "exact", "table", "negation", "forum"}


@dataclass(frozen=True)
class Doc:
    key: str
    game: str  # a game slug, or the family slug for a family-wide document
    path: Path
    licence: str


@dataclass(frozen=True)
class Shelf:
    docs: dict[str, Doc]  # the latest release of each document key, as ingest keeps it
    games: frozenset[str]
    families: frozenset[str]


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        if tag in ("p", "div", "li", "br", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


@cache
def shelf(path: Path = SHELF) -> Shelf:
    """The shelf as the product reads it (rulesage.ingest.shelf); a later release of a key replaces the
    earlier one."""
    s = load_shelf(path)
    docs = {d.key: Doc(d.key, d.game or d.family, d.path, d.licence) for d in s.documents}
    return Shelf(docs, frozenset(g.slug for g in s.games), frozenset(g.family for g in s.games))


@cache
def pages(key: str) -> list[str]:
    """The document's text as a list of pages (one element for an unpaged source)."""
    doc = shelf().docs[key]
    suffix = doc.path.suffix.lower()
    if suffix == ".pdf":
        out = subprocess.run(["pdftotext", str(doc.path), "-"], capture_output=True, check=True)
        return out.stdout.decode("utf-8", "replace").split("\f")
    raw = doc.path.read_text(encoding="utf-8-sig", errors="replace")
    if suffix == ".txt" and "\f" in raw:
        # side-by-side columns read left column first, as ingest reads them
        return ["\n".join(column_order(page.split("\n"))) for page in raw.split("\f")]
    if suffix in (".html", ".htm"):
        parser = _Text()
        parser.feed(raw)
        return ["".join(parser.parts)]
    if suffix == ".xml":
        return ["\n".join(t.strip() for t in ET.fromstring(raw.encode()).itertext() if t.strip())]
    if suffix == ".md":
        return [re.sub(r"[*_`#>]+", "", raw)]
    return [raw]


def dump(out: Path) -> None:
    for key, doc in shelf().docs.items():
        target = out / doc.game / key
        target.mkdir(parents=True, exist_ok=True)
        texts = pages(key)
        for i, text in enumerate(texts, 1):
            name = f"page-{i:03d}.txt" if len(texts) > 1 else "all.txt"
            (target / name).write_text(text)
        print(f"{doc.game}/{key}: {len(texts)} page(s)")


@cache
def mtg_rules() -> frozenset[str]:
    return frozenset(MTG_RULE.findall(pages("mtg-cr")[0]))


def problems(row: dict) -> list[str]:
    bad = []
    known = shelf()
    for field in ("game", "doc", "question", "source", "style"):
        if not row.get(field):
            bad.append(f"missing {field}")
    if bad:
        return bad
    if row["game"] not in known.games and row["game"] not in known.families:
        bad.append(f"unknown game {row['game']!r}")
    doc = known.docs.get(row["doc"])
    if doc is None:
        return [*bad, f"unknown doc {row['doc']!r}"]
    if row["style"] not in STYLES:
        bad.append(f"style {row['style']!r} not in {sorted(STYLES)}")
    words = len(str(row["question"]).split())
    if row["style"] == "forum" and words < FORUM_MIN_WORDS and row.get("source") == "written":
        bad.append(
            f"a forum post needs at least {FORUM_MIN_WORDS} words (this has {words}): write the situation"
            " first, names, then the question(s) as a real post does; or give the row a short style"
        )
    src = row["source"]
    if src != "written" and not re.match(r"^https?://\S+$", src):
        bad.append("source must be 'written' or a URL")
    if doc.licence == "eval-only":
        # the book's text may not be copied into the project: the row names the rule, not its words
        if row.get("quote"):
            bad.append("eval-only book: give 'rule', not 'quote'")
        if row.get("rule") not in mtg_rules() and doc.key == "mtg-cr":
            bad.append(f"rule {row.get('rule')!r} is not in the Comprehensive Rules")
        return bad
    if row.get("answerable") is False:
        # a silent-book question: on topic, and the book does not answer it; 'near' names the closest page
        if row.get("quote"):
            bad.append("a silent-book row carries no quote")
        return bad
    quote = row.get("quote") or ""
    n = len(normalise(quote).split())
    if not 8 <= n <= 40:
        bad.append(f"quote has {n} words (8-40)")
    texts = pages(row["doc"])
    page = row.get("page")
    if len(texts) > 1:
        if not isinstance(page, int) or not 1 <= page <= len(texts):
            return [*bad, f"page {page!r} out of range 1..{len(texts)}"]
        hay = normalise(texts[page - 1])
    else:
        hay = normalise(texts[0])
    if normalise(quote) not in hay:
        bad.append("quote is not verbatim on that page")
    return bad


def check(files: list[str]) -> int:
    total = failed = 0
    for name in files:
        for n, line in enumerate(Path(name).read_text().splitlines(), 1):
            if not line.strip():
                continue
            total += 1
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                failed += 1
                print(f"{name}:{n}: not JSON ({exc})")
                continue
            bad = problems(row)
            if bad:
                failed += 1
                print(f"{name}:{n}: {'; '.join(bad)}")
    print(f"{total} rows, {failed} bad")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "dump":
        dump(Path(argv[1]))
        return 0
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
