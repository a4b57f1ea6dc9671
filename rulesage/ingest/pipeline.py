"""The ingest pipeline: a shelf manifest -> Postgres (documents, pages, sections, passages, postings, vectors,
releases, errata links, aliases, category maps, card tables).

One transaction per document: a file that cannot be read fails alone (``ingest_failures`` and the summary
say why) and the rest continues. A document whose file is unchanged (sha256) is skipped, so re-running an
unchanged shelf takes seconds.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg
from tqdm import tqdm

from rulesage.core.cards import RULING_NEIGHBOURS
from rulesage.core.categories import MapError
from rulesage.core.nearest import nearest_ids
from rulesage.db import connect
from rulesage.ingest import cards as card_table
from rulesage.ingest import categories, store
from rulesage.ingest.aliases import store_document_aliases
from rulesage.ingest.errata import relink_amended
from rulesage.ingest.model import ExtractionError, ParsedDocument
from rulesage.ingest.shelf import DocumentEntry, Shelf, load_shelf

log = logging.getLogger(__name__)
_INGEST_LOCK = 724_114  # advisory lock: one ingest at a time per database
# The tables a family filters its searches by: analysed after an ingest that wrote to them.
ANALYSED = ("documents", "sections", "passages", "postings")
EMBED_BATCH = 256  # passages per embedder call (progress granularity)
RULINGS_BATCH = 2048  # rulings per embedder call: short texts, bucketed by length inside a call

Parser = Callable[..., ParsedDocument]


@dataclass
class IngestSummary:
    documents: int = 0  # documents written (new or new release)
    skipped_unchanged: int = 0
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (key, path, error)
    pages: int = 0
    sections: int = 0
    passages: int = 0
    embedded: int = 0  # vectors drawn in this run
    reembedded_changed: int = 0  # of which: passages new or changed in a new release of a stored book
    reembedded_space: int = 0  # of which: passages re-embedded because the embedding model changed
    retired: int = 0
    superseded: int = 0  # live passages hidden by errata after this run's relinks
    aliases: int = 0
    category_maps: int = 0  # games whose category map was loaded (rulesage.ingest.categories)
    category_passages: int = 0  # (category, passage) pairs those maps select
    card_tables: int = 0  # games whose card table was loaded or found unchanged (rulesage.ingest.cards)
    cards: int = 0  # cards those tables hold
    cards_written: int = 0  # of which: inserted or rewritten in this run
    rulings_embedded: int = 0  # official rulings whose vector was drawn in this run (new, changed, new model)
    rulings_neighboured: int = 0  # rulings whose nearest passages were drawn (their book or vector changed)
    seconds: float = 0.0
    parse_seconds: float = 0.0  # extraction (overlaps embedding: the next document is parsed meanwhile)
    embed_seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["failed"] = [{"key": k, "path": p, "error": e} for k, p, e in self.failed]
        for k in ("seconds", "parse_seconds", "embed_seconds"):
            d[k] = round(d[k], 2)
        return d

    def line(self) -> str:
        return (
            f"ingest: {self.documents} documents written, {self.skipped_unchanged} unchanged, "
            f"{len(self.failed)} failed; {self.pages} pages, {self.sections} sections, "
            f"{self.passages} passages, {self.embedded} embedded "
            f"({self.reembedded_changed} changed in new releases), {self.retired} retired, "
            f"{self.superseded} superseded, {self.aliases} aliases, {self.category_maps} category maps, "
            f"{self.cards} cards ({self.cards_written} written, {self.rulings_embedded} rulings embedded, "
            f"{self.rulings_neighboured} neighboured)"
            f" in {self.seconds:.1f}s"
        )


def _default_parser() -> Parser:
    from rulesage.ingest.parse import parse_document

    return parse_document


def ingest_shelf(
    url: str,
    shelf_path: Path,
    games: list[str] | None = None,
    progress: bool = True,
    *,
    embedder: object | None = None,
    parser: Parser | None = None,
    categories_dir: Path | None = None,
) -> IngestSummary:
    """Ingest the shelf (or the named games, with their families' documents) into the database at ``url``.

    ``categories_dir``: where to find ``<slug>.toml`` category maps for games the manifest names none for
    (a shelf one cannot edit); a map the manifest names wins.

    ``embedder`` defaults to ``rulesage.embed.bulk_embedder()`` and ``parser`` to
    ``rulesage.ingest.parse.parse_document``; both are loaded only when needed."""
    started = time.perf_counter()
    shelf = load_shelf(Path(shelf_path)).select(games)
    summary = IngestSummary()
    with connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_INGEST_LOCK,))
        try:
            run = _Run(conn, shelf, summary, embedder, parser, progress)
            run.shelf_rows()
            run.check_space()
            run.documents()
            run.category_maps(categories_dir)
            run.card_tables()
            if summary.documents or summary.retired or summary.superseded:
                # Fresh planner statistics for what was written. Left to autoanalyze, a newly ingested family
                # can go unseen: the embedded Postgres's change counters reset when it stops, so its
                # statistics stayed those taken before the family came, the planner then counted one posting
                # for it, and its BM25 query ran 20 s (3 ms once analysed).
                conn.execute(f"ANALYZE {', '.join(ANALYSED)}")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_INGEST_LOCK,))
    summary.seconds = time.perf_counter() - started
    if progress:
        print(summary.line(), file=sys.stderr)
        for key, path, error in summary.failed:
            print(f"  failed {key} ({path}): {error}", file=sys.stderr)
    return summary


class _Run:
    def __init__(
        self,
        conn: psycopg.Connection,
        shelf: Shelf,
        summary: IngestSummary,
        embedder: object | None,
        parser: Parser | None,
        progress: bool,
    ) -> None:
        self.conn = conn
        self.shelf = shelf
        self.summary = summary
        self._embedder = embedder
        self._parser = parser
        self.progress = progress
        self.family_ids: dict[str, int] = {}
        self.game_ids: dict[str, int] = {}
        self._space_id: int | None = None
        self._pool: ThreadPoolExecutor

    # -- lazily loaded parts ---------------------------------------------------------------------------
    @property
    def embedder(self):  # type: ignore[no-untyped-def]
        if self._embedder is None:
            from rulesage.embed import bulk_embedder

            self._embedder = bulk_embedder()
        return self._embedder

    @property
    def parser(self) -> Parser:
        if self._parser is None:
            self._parser = _default_parser()
        return self._parser

    @property
    def space_id(self) -> int:
        assert self._space_id is not None, "check_space() runs first"
        return self._space_id

    # -- steps -------------------------------------------------------------------------------------------
    def shelf_rows(self) -> None:
        with self.conn.transaction():
            for fam in self.shelf.families():
                self.family_ids[fam] = store.upsert_family(self.conn, fam)
            for g in self.shelf.games:
                self.game_ids[g.slug] = store.upsert_game(self.conn, g, self.family_ids[g.family])

    def check_space(self) -> None:
        """If the configured model differs from the active space, re-embed every passage (one transaction,
        so no reader ever sees vectors of two models mixed)."""
        identity = self.embedder.identity
        active = store.active_space(self.conn)
        if active is not None and active[1] == identity.model:
            self._space_id = active[0]
            return
        with self.conn.transaction():
            self._space_id = store.activate_space(self.conn, identity)
            n = self._embed(store.passages_to_embed(self.conn, self._space_id))
        self.summary.embedded += n
        self.summary.reembedded_space += n

    def documents(self) -> None:
        bar = tqdm(
            self.shelf.documents,
            desc="ingest",
            unit="doc",
            file=sys.stderr,
            disable=not self.progress,
            dynamic_ncols=True,
        )
        docs = self.shelf.documents
        # one parse thread: extractors (pdfium) are not thread-safe, so every parse runs there, in order
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parse") as pool:
            self._pool = pool
            ahead: dict[int, Future[ParsedDocument]] = {}
            for i, entry in enumerate(bar):
                bar.set_postfix_str(entry.label[:40])
                # parse the next document that needs it while this one embeds (the model releases the GIL)
                for nxt in docs[i + 1 : i + 3]:
                    if nxt.index not in ahead and self._needs_parse(nxt):
                        ahead[nxt.index] = pool.submit(self._parse, nxt)
                        break
                self.document(entry, ahead.pop(entry.index, None))
            for fut in ahead.values():
                fut.cancel()
        bar.close()

    def _needs_parse(self, entry: DocumentEntry) -> bool:
        try:
            sha = store.sha256_file(entry.path)
        except OSError:
            return False
        stored = store.stored_document(self.conn, entry.key)
        return stored is None or stored.sha256 != sha

    def _parse(self, entry: DocumentEntry) -> ParsedDocument:
        started = time.perf_counter()
        try:
            return self.parser(entry.path, key=entry.key, kind=entry.kind)
        finally:
            self.summary.parse_seconds += time.perf_counter() - started

    def _embed_texts(self, texts: list[str], as_queries: bool = False):  # type: ignore[no-untyped-def]
        """Vectors of passages (or, ``as_queries``, of texts read as a question is: a ruling, which the dense
        arm compares with the passages as it does a question), the time counted as embedding."""
        started = time.perf_counter()
        try:
            if as_queries:
                return self.embedder.embed_queries(texts, batch=64)
            return self.embedder.embed_passages(texts)
        finally:
            self.summary.embed_seconds += time.perf_counter() - started

    def document(self, entry: DocumentEntry, parsing: Future[ParsedDocument] | None = None) -> None:
        path = str(entry.path)
        try:
            sha = store.sha256_file(entry.path)
        except OSError as exc:
            self._fail(entry, f"cannot read file: {exc}")
            return
        stored = store.stored_document(self.conn, entry.key)
        if stored is not None:
            if stored.sha256 == sha:
                self.summary.skipped_unchanged += 1
                return
            earlier = not self.shelf.is_last_release(entry)
            if earlier and store.release_seen(self.conn, stored.id, entry.version, sha):
                self.summary.skipped_unchanged += 1  # an earlier release, already replaced by a later one
                return
        try:
            if parsing is None:
                parsing = self._pool.submit(self._parse, entry)
            parsed = parsing.result()
            if not parsed.passages:
                raise ExtractionError("no passages: the file holds no text")
        except ExtractionError as exc:
            self._fail(entry, f"extraction failed: {exc}")
            return
        except Exception as exc:  # a parser bug must not stop the shelf
            log.exception("parser crashed on %s", path)
            self._fail(entry, f"parser error ({type(exc).__name__}): {exc}")
            return
        try:
            with self.conn.transaction():
                self._write(entry, parsed, sha)
        except Exception as exc:
            log.exception("storing %s failed", entry.label)
            self._fail(entry, f"storing failed ({type(exc).__name__}): {exc}")

    def _write(self, entry: DocumentEntry, parsed: ParsedDocument, sha: str) -> None:
        family_id = self.family_ids[entry.family]
        game_id = self.game_ids.get(entry.game) if entry.game else None
        result = store.write_document(
            self.conn, entry, parsed, sha, family_id, game_id, self._embed_texts, self.space_id
        )
        # kept passages that became searchable without a vector of the active space
        n = result.embedded + self._embed(
            store.passages_to_embed(self.conn, self.space_id, result.document_id)
        )
        superseded = 0
        if entry.amends:
            superseded += relink_amended(self.conn, entry.amends).superseded
        if self.conn.execute("SELECT 1 FROM documents WHERE amends = %s LIMIT 1", (entry.key,)).fetchone():
            superseded += relink_amended(self.conn, entry.key).superseded
        aliases = store_document_aliases(self.conn, result.document_id)
        store.clear_failures(self.conn, entry.key, str(entry.path))
        s = self.summary
        s.documents += 1
        s.pages += len(parsed.pages)
        s.sections += len(parsed.sections)
        s.passages += len(parsed.passages)
        s.embedded += n
        if result.replaced:
            s.reembedded_changed += n
        s.retired += result.retired
        s.superseded += superseded
        s.aliases += aliases

    def _embed(self, rows: list[tuple]) -> int:
        if not rows:
            return 0
        done = 0
        for b in range(0, len(rows), EMBED_BATCH):
            batch = rows[b : b + EMBED_BATCH]
            texts = [store.embed_text(tuple(r[1]), r[2]) for r in batch]
            vectors = self._embed_texts(texts)
            store.store_vectors(self.conn, self.space_id, [int(r[0]) for r in batch], vectors)
            done += len(batch)
        return done

    def category_maps(self, folder: Path | None) -> None:
        """Load every game's category map; one that fails is reported and the stored one stays."""
        for g in self.shelf.games:
            path = g.categories
            if path is None and folder is not None and (Path(folder) / f"{g.slug}.toml").is_file():
                path = (Path(folder) / f"{g.slug}.toml").resolve()
            if path is None:
                continue
            key = f"{g.slug}:categories"
            try:
                loaded = categories.load(
                    self.conn,
                    self.game_ids[g.slug],
                    path,
                    g.slug,
                    self.space_id,
                    self.embedder.embed_queries,
                )
            except (MapError, OSError) as exc:
                self._record(key, str(path), f"category map rejected: {exc}")
                continue
            store.clear_failures(self.conn, key, str(path))
            self.summary.category_maps += 1
            self.summary.category_passages += loaded.passages

    def card_tables(self) -> None:
        """Load every game's card table (after its books: the book's own words decide which names are
        plain); one that fails is reported and the stored one stays."""
        for g in self.shelf.games:
            if g.cards is None:
                continue
            key = f"{g.slug}:cards"
            try:
                with self.conn.transaction():
                    loaded = card_table.load(
                        self.conn, self.game_ids[g.slug], g.slug, g.cards, self.family_ids[g.family]
                    )
            except card_table.CardTableError as exc:
                self._record(key, str(g.cards), f"card table rejected: {exc}")
                continue
            store.clear_failures(self.conn, key, str(g.cards))
            self.summary.card_tables += 1
            self.summary.cards += loaded.cards
            self.summary.cards_written += loaded.written
            self.summary.rulings_embedded += self._embed_rulings(self.game_ids[g.slug])
            self.summary.rulings_neighboured += self._ruling_neighbours(
                self.game_ids[g.slug], self.family_ids[g.family]
            )

    def _embed_rulings(self, game_id: int) -> int:
        """Draw the vectors of the game's rulings that have none of the active space (new or changed cards,
        or a new model), a batch at a time: an interrupted run leaves the rest to the next one."""
        rows = store.rulings_to_embed(self.conn, game_id, self.space_id)
        bar = tqdm(
            total=len(rows),
            desc="rulings",
            unit="ruling",
            file=sys.stderr,
            disable=not self.progress or not rows,
            dynamic_ncols=True,
        )
        with bar:
            for b in range(0, len(rows), RULINGS_BATCH):
                batch = rows[b : b + RULINGS_BATCH]
                vectors = self._embed_texts([r[2] for r in batch], as_queries=True)
                keys = [(int(r[0]), int(r[1])) for r in batch]
                store.store_ruling_vectors(self.conn, self.space_id, keys, vectors)
                bar.update(len(batch))
        return len(rows)

    def _ruling_neighbours(self, game_id: int, family_id: int) -> int:
        """Draw every ruling's nearest passages again when a ruling has none or the family's live passages
        (or the space) changed since they were drawn; the number of rulings drawn (0: all were current)."""
        stamp = store.family_stamp(self.conn, family_id, self.space_id)
        if store.ruling_neighbours_current(self.conn, game_id, stamp):
            return 0
        ids, vectors = store.family_vectors(self.conn, family_id)
        keys, rulings = store.game_ruling_vectors(self.conn, game_id, self.space_id)
        near = nearest_ids(rulings, vectors, ids, RULING_NEIGHBOURS)
        with self.conn.transaction():
            store.store_ruling_neighbours(self.conn, game_id, keys, near, stamp)
        return len(keys)

    def _fail(self, entry: DocumentEntry, error: str) -> None:
        self._record(entry.key, str(entry.path), error)
        log.warning("ingest of %s failed: %s", entry.label, error)

    def _record(self, key: str, path: str, error: str) -> None:
        with self.conn.transaction():
            store.record_failure(self.conn, key, path, error)
        self.summary.failed.append((key, path, error))
