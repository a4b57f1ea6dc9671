"""Writing one parsed document into Postgres: pages, sections, passages (tsvector, BM25 postings), releases.

Everything here runs inside the caller's transaction (one per document), so a failure leaves nothing behind.
A new release of a stored key keeps the ids (and vectors) of passages whose text is unchanged, inserts the
changed ones and retires the removed ones (``retired_at``; never deleted: old rulings cite them).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

from rulesage.db import vector_array
from rulesage.ingest.model import ParsedDocument, PassageDraft
from rulesage.ingest.shelf import DocumentEntry, GameEntry

# tsvector of a passage: its heading words and its text (Postgres' english configuration).
TSV_SQL = "to_tsvector('english', array_to_string({h}, ' ') || ' ' || {t})"
DOC_LEN_SQL = "(SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest({v}) u)"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed_text(heading_path: Sequence[str], text: str) -> str:
    """What the dense arm's vector of a passage is drawn from: its nearest headings, then its text."""
    head = " > ".join(h for h in heading_path[-2:] if h)
    return f"{head}\n{text}" if head else text


# -- the shelf --------------------------------------------------------------------------------------------
def upsert_family(conn: psycopg.Connection, slug: str) -> int:
    row = conn.execute(
        "INSERT INTO families (slug) VALUES (%s)"
        " ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id",
        (slug,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def mark_retrieval_only(conn: psycopg.Connection, family_id: int) -> None:
    """A family the arms search but the road never rules on (a BEIR corpus): ingest draws no reader or answer
    rows for it, and any drawn earlier are dropped."""
    conn.execute("UPDATE families SET ruled = false WHERE id = %s AND ruled", (family_id,))
    for table in ("window_states", "sentence_vectors"):
        conn.execute(
            f"DELETE FROM {table} t USING passages p WHERE p.id = t.passage_id AND p.family_id = %s",
            (family_id,),
        )


def upsert_game(conn: psycopg.Connection, game: GameEntry, family_id: int) -> int:
    row = conn.execute(
        "INSERT INTO games (slug, name, family_id) VALUES (%s, %s, %s) ON CONFLICT (slug) DO UPDATE"
        " SET name = EXCLUDED.name, family_id = EXCLUDED.family_id RETURNING id",
        (game.slug, game.name, family_id),
    ).fetchone()
    assert row is not None
    return int(row[0])


@dataclass(frozen=True)
class StoredDocument:
    id: int
    version: str
    sha256: str


def stored_document(conn: psycopg.Connection, key: str) -> StoredDocument | None:
    row = conn.execute("SELECT id, version, sha256 FROM documents WHERE key = %s", (key,)).fetchone()
    return StoredDocument(int(row[0]), row[1], row[2]) if row else None


def release_seen(conn: psycopg.Connection, document_id: int, version: str, sha256: str) -> bool:
    """Whether this exact release (version and file) was ingested before for the document."""
    row = conn.execute(
        "SELECT 1 FROM document_releases WHERE document_id = %s AND version = %s AND sha256 = %s LIMIT 1",
        (document_id, version, sha256),
    ).fetchone()
    return row is not None


def record_failure(conn: psycopg.Connection, key: str, path: str, error: str) -> None:
    conn.execute("INSERT INTO ingest_failures (key, path, error) VALUES (%s, %s, %s)", (key, path, error))


def clear_failures(conn: psycopg.Connection, key: str, path: str) -> None:
    conn.execute("DELETE FROM ingest_failures WHERE key = %s AND path = %s", (key, path))


# -- writing a document -----------------------------------------------------------------------------------
@dataclass
class WriteResult:
    document_id: int
    replaced: bool  # a release of a stored key was replaced
    kept: int
    added: int
    retired: int
    heading_changed: int  # kept passages whose heading changed (tsv recomputed)
    embedded: int = 0  # vectors drawn for new passages


@dataclass(frozen=True)
class _Old:
    id: int
    content_hash: str
    rule_id: str | None
    heading_path: tuple[str, ...]


def match_release(old: Iterable[_Old], new: Sequence[PassageDraft]) -> tuple[list[int | None], list[int]]:
    """Pair each new passage with an unchanged live passage of the previous release (same text and same rule
    id, or same text and same heading; then same text alone). Returns the kept id per new passage (None: new
    text) and the ids left over (to retire). Deterministic: earlier passages pair first."""
    pool_strict: dict[tuple[str, object], list[_Old]] = defaultdict(list)
    pool_text: dict[str, list[_Old]] = defaultdict(list)
    olds = list(old)
    for o in olds:
        pool_strict[(o.content_hash, o.rule_id or o.heading_path)].append(o)
        pool_text[o.content_hash].append(o)
    used: set[int] = set()
    kept: list[int | None] = [None] * len(new)
    hashes = [content_hash(p.text) for p in new]

    def take(candidates: list[_Old]) -> int | None:
        for o in candidates:
            if o.id not in used:
                used.add(o.id)
                return o.id
        return None

    for i, p in enumerate(new):
        kept[i] = take(pool_strict.get((hashes[i], p.rule_id or tuple(p.heading_path)), []))
    for i, _p in enumerate(new):
        if kept[i] is None:
            kept[i] = take(pool_text.get(hashes[i], []))
    retired = [o.id for o in olds if o.id not in used]
    return kept, retired


def write_document(
    conn: psycopg.Connection,
    entry: DocumentEntry,
    parsed: ParsedDocument,
    sha256: str,
    family_id: int,
    game_id: int | None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    space_id: int | None = None,
) -> WriteResult:
    """Store (or replace the release of) one document. Caller holds the transaction.

    ``embed`` draws the vectors of new searchable passages before they are inserted (one write per row: a
    later UPDATE would index every row twice); ``space_id`` is the active embedding space."""
    stored = stored_document(conn, entry.key)
    meta = (
        entry.version,
        entry.title,
        entry.kind,
        game_id,
        family_id,
        entry.amends,
        str(entry.path),
        entry.licence,
        sha256,
        len(parsed.pages),
    )
    if stored is None:
        row = conn.execute(
            "INSERT INTO documents (key, version, title, kind, game_id, family_id, amends, path, licence,"
            " sha256, pages) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (entry.key, *meta),
        ).fetchone()
        assert row is not None
        doc_id = int(row[0])
        old: list[_Old] = []
    else:
        doc_id = stored.id
        conn.execute(
            "UPDATE documents SET version = %s, title = %s, kind = %s, game_id = %s, family_id = %s,"
            " amends = %s, path = %s, licence = %s, sha256 = %s, pages = %s, ingested_at = now()"
            " WHERE id = %s",
            (*meta, doc_id),
        )
        old = [
            _Old(int(r[0]), r[1], r[2], tuple(r[3]))
            for r in conn.execute(
                "SELECT id, content_hash, rule_id, heading_path FROM current_passages"
                " WHERE document_id = %s ORDER BY ord",
                (doc_id,),
            )
        ]
        conn.execute("DELETE FROM pages WHERE document_id = %s", (doc_id,))
        conn.execute(
            "UPDATE sections SET retired_at = now() WHERE document_id = %s AND retired_at IS NULL", (doc_id,)
        )

    with conn.cursor().copy("COPY pages (document_id, page_no, text, method) FROM STDIN") as cp:
        for page in parsed.pages:
            cp.write_row((doc_id, page.number, page.text, page.method))
    section_ids = _insert_sections(conn, doc_id, parsed)

    drafts: list[PassageDraft] = []
    draft_section: list[int] = []
    for s_ord, section in enumerate(parsed.sections):
        for p in section.passages:
            drafts.append(p)
            draft_section.append(section_ids[s_ord])
    kept, retired = match_release(old, drafts)
    to_embed = [i for i, p in enumerate(drafts) if kept[i] is None and p.searchable] if embed else []
    vectors: dict[int, str] = {}
    if to_embed and embed is not None:
        drawn = embed([embed_text(drafts[i].heading_path, drafts[i].text) for i in to_embed])
        vectors = {i: vector_literal(v) for i, v in zip(to_embed, drawn, strict=True)}

    conn.execute(
        "CREATE TEMP TABLE stage_passages (ord int, section_id bigint, kind text, heading_path text[],"
        " text text, content_hash text, page_start int, page_end int, rule_id text, parent_rule text,"
        " searchable bool, keep_id bigint, embedding vector) ON COMMIT DROP"
    )
    with conn.cursor().copy(
        "COPY stage_passages (ord, section_id, kind, heading_path, text, content_hash, page_start, page_end,"
        " rule_id, parent_rule, searchable, keep_id, embedding) FROM STDIN"
    ) as cp:
        for i, p in enumerate(drafts):
            cp.write_row(
                (
                    i,
                    draft_section[i],
                    p.kind,
                    list(p.heading_path),
                    p.text,
                    content_hash(p.text),
                    p.page_start,
                    p.page_end,
                    p.rule_id,
                    p.parent_rule,
                    p.searchable,
                    kept[i],
                    vectors.get(i),
                )
            )
    heading_changed = 0
    if old:
        # kept passages: new place in the book, same text, id and vector; tsv again only if the heading moved
        changed_rows = conn.execute(
            "UPDATE passages p SET ord = s.ord, section_id = s.section_id, kind = s.kind,"
            " page_start = s.page_start, page_end = s.page_end, parent_rule = s.parent_rule,"
            " searchable = s.searchable, rule_id = s.rule_id, heading_path = s.heading_path"
            " FROM stage_passages s WHERE p.id = s.keep_id AND (p.ord, p.section_id, p.kind, p.page_start,"
            " p.page_end, p.parent_rule, p.searchable, p.rule_id, p.heading_path) IS DISTINCT FROM (s.ord,"
            " s.section_id, s.kind, s.page_start, s.page_end, s.parent_rule, s.searchable, s.rule_id,"
            " s.heading_path)"
            " RETURNING p.id, old.heading_path IS DISTINCT FROM new.heading_path"
        ).fetchall()
        moved = [int(r[0]) for r in changed_rows if r[1]]
        if moved:
            heading_changed = len(moved)
            conn.execute(
                "UPDATE passages SET tsv = "
                + TSV_SQL.format(h="heading_path", t="text")
                + " WHERE id = ANY(%s)",
                (moved,),
            )
            conn.execute(
                "UPDATE passages SET doc_len = " + DOC_LEN_SQL.format(v="tsv") + " WHERE id = ANY(%s)",
                (moved,),
            )
            conn.execute("DELETE FROM postings WHERE passage_id = ANY(%s)", (moved,))
            _insert_postings(conn, moved)
        if retired:
            conn.execute("UPDATE passages SET retired_at = now() WHERE id = ANY(%s)", (retired,))

    new_ids = [
        int(r[0])
        for r in conn.execute(
            "WITH src AS (SELECT s.*, " + TSV_SQL.format(h="s.heading_path", t="s.text") + " AS tsv"
            " FROM stage_passages s WHERE s.keep_id IS NULL)"
            " INSERT INTO passages (document_id, family_id, section_id, ord, kind, heading_path, text,"
            " content_hash, page_start, page_end, rule_id, parent_rule, searchable, tsv, doc_len, embedding,"
            " space_id)"
            " SELECT %s, %s, section_id, ord, kind, heading_path, text, content_hash, page_start, page_end,"
            " rule_id, parent_rule, searchable, tsv, "
            + DOC_LEN_SQL.format(v="src.tsv")
            + ", embedding, CASE WHEN embedding IS NULL THEN NULL ELSE %s::int END FROM src ORDER BY ord"
            " RETURNING id",
            (doc_id, family_id, space_id),
        )
    ]
    _insert_postings(conn, new_ids)
    n_kept = sum(1 for k in kept if k is not None)
    conn.execute(
        "INSERT INTO document_releases (document_id, version, sha256, passages_kept, passages_added,"
        " passages_retired) VALUES (%s, %s, %s, %s, %s, %s)",
        (doc_id, entry.version, sha256, n_kept, len(new_ids), len(retired)),
    )
    return WriteResult(
        doc_id, stored is not None, n_kept, len(new_ids), len(retired), heading_changed, len(vectors)
    )


def _insert_sections(conn: psycopg.Connection, doc_id: int, parsed: ParsedDocument) -> list[int]:
    if not parsed.sections:
        return []
    rows = conn.execute(
        "INSERT INTO sections (document_id, ord, heading_path, text, page_start, page_end)"
        " SELECT %s, o - 1, hp::text[], t, ps, pe FROM unnest(%s::text[], %s::text[], %s::int[], %s::int[])"
        " WITH ORDINALITY AS x(t, hp, ps, pe, o) ORDER BY o RETURNING id",
        (
            doc_id,
            [s.text for s in parsed.sections],
            [_pg_array(s.heading_path) for s in parsed.sections],
            [s.page_start for s in parsed.sections],
            [s.page_end for s in parsed.sections],
        ),
    ).fetchall()
    return [int(r[0]) for r in rows]


def _pg_array(items: Sequence[str]) -> str:
    """A text[] literal (sections' heading paths travel as text through unnest, which flattens arrays)."""
    quoted = ('"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' for s in items)
    return "{" + ",".join(quoted) + "}"


def _insert_postings(conn: psycopg.Connection, ids: list[int]) -> None:
    """BM25 postings from the tsvector: tf = number of positions of the lexeme in the passage."""
    if not ids:
        return
    conn.execute(
        "INSERT INTO postings (family_id, lexeme, passage_id, tf)"
        " SELECT p.family_id, u.lexeme, p.id, coalesce(array_length(u.positions, 1), 1)"
        " FROM passages p, unnest(p.tsv) u WHERE p.id = ANY(%s)",
        (ids,),
    )


def vector_literal(v: np.ndarray) -> str:
    """pgvector's text form, for COPY."""
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(v, dtype=np.float32).tolist()) + "]"


# -- vectors ----------------------------------------------------------------------------------------------
def active_space(conn: psycopg.Connection) -> tuple[int, str] | None:
    row = conn.execute("SELECT id, model FROM embedding_space WHERE active").fetchone()
    return (int(row[0]), row[1]) if row else None


def activate_space(conn: psycopg.Connection, identity: object) -> int:
    """Make the embedder's identity the active embedding space (creating its row); returns its id."""
    model = identity.model  # type: ignore[attr-defined]
    conn.execute("UPDATE embedding_space SET active = false WHERE active AND model <> %s", (model,))
    row = conn.execute(
        "INSERT INTO embedding_space (model, dim, query_prefix, passage_prefix, max_tokens, active)"
        " VALUES (%s, %s, %s, %s, %s, true) ON CONFLICT (model) DO UPDATE SET active = true,"
        " dim = EXCLUDED.dim, query_prefix = EXCLUDED.query_prefix, passage_prefix = EXCLUDED.passage_prefix,"
        " max_tokens = EXCLUDED.max_tokens RETURNING id",
        (
            model,
            identity.dim,  # type: ignore[attr-defined]
            identity.query_prefix,  # type: ignore[attr-defined]
            identity.passage_prefix,  # type: ignore[attr-defined]
            identity.max_tokens,  # type: ignore[attr-defined]
        ),
    ).fetchone()
    assert row is not None
    return int(row[0])


def passages_to_embed(conn: psycopg.Connection, space_id: int, document_id: int | None = None) -> list[tuple]:
    """Searchable passages without a vector of the active space (of one document, or all of them)."""
    sql = (
        "SELECT id, heading_path, text FROM passages WHERE searchable"
        " AND (embedding IS NULL OR space_id IS DISTINCT FROM %s)"
    )
    args: list[object] = [space_id]
    if document_id is not None:
        sql += " AND document_id = %s AND retired_at IS NULL"
        args.append(document_id)
    return conn.execute(sql + " ORDER BY id", args).fetchall()


def store_vectors(conn: psycopg.Connection, space_id: int, ids: list[int], vectors: np.ndarray) -> None:
    if not ids:
        return
    conn.execute(
        "UPDATE passages p SET embedding = v.e, space_id = %s"
        " FROM unnest(%s::bigint[], %s::vector[]) AS v(id, e) WHERE p.id = v.id",
        (space_id, ids, [np.asarray(v, dtype=np.float32) for v in vectors]),
    )


def rulings_to_embed(conn: psycopg.Connection, game_id: int, space_id: int) -> list[tuple[int, int, str]]:
    """The game's card rulings without a vector of the active space: (card id, ord, text)."""
    return conn.execute(
        "SELECT r.card_id, r.ord, r.text FROM card_rulings r JOIN cards c ON c.id = r.card_id"
        " WHERE c.game_id = %s AND (r.embedding IS NULL OR r.space_id IS DISTINCT FROM %s)"
        " ORDER BY r.card_id, r.ord",
        (game_id, space_id),
    ).fetchall()


def store_ruling_vectors(
    conn: psycopg.Connection, space_id: int, keys: list[tuple[int, int]], vectors: np.ndarray
) -> None:
    """Store rulings' vectors; their neighbours, drawn from the old ones, are cleared."""
    if not keys:
        return
    conn.execute(
        "UPDATE card_rulings r SET embedding = v.e, space_id = %s, near = NULL"
        " FROM unnest(%s::bigint[], %s::int[], %s::vector[]) AS v(card_id, ord, e)"
        " WHERE r.card_id = v.card_id AND r.ord = v.ord",
        (
            space_id,
            [k[0] for k in keys],
            [k[1] for k in keys],
            [np.asarray(v, dtype=np.float32) for v in vectors],
        ),
    )


def _matrix(rows: list[np.ndarray]) -> np.ndarray:
    """Vectors as rows of one matrix (none: an empty one, which ``nearest_ids`` reads as nothing to rank)."""
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack(rows).astype(np.float32, copy=False)


def family_stamp(conn: psycopg.Connection, family_id: int, space_id: int) -> str:
    """What a ruling's neighbours were drawn from: the space and the family's live passages with a vector."""
    row = conn.execute(
        "SELECT count(*), md5(coalesce(string_agg(id::text, ',' ORDER BY id), '')) FROM live_passages"
        " WHERE family_id = %s AND embedding IS NOT NULL",
        (family_id,),
    ).fetchone()
    assert row is not None
    return f"space {space_id}: {row[0]} passages {row[1]}"


def family_vectors(conn: psycopg.Connection, family_id: int) -> tuple[np.ndarray, np.ndarray]:
    """The family's live passages with a vector: ids (ascending) and vectors, row for row."""
    rows = conn.execute(
        "SELECT id, embedding FROM live_passages WHERE family_id = %s AND embedding IS NOT NULL ORDER BY id",
        (family_id,),
    ).fetchall()
    ids = np.asarray([int(r[0]) for r in rows], dtype=np.int64)
    return ids, _matrix([vector_array(r[1]) for r in rows])


def game_ruling_vectors(
    conn: psycopg.Connection, game_id: int, space_id: int
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The game's rulings with a vector of the active space: (card id, ord) and vectors, row for row."""
    rows = conn.execute(
        "SELECT r.card_id, r.ord, r.embedding FROM card_rulings r JOIN cards c ON c.id = r.card_id"
        " WHERE c.game_id = %s AND r.space_id = %s AND r.embedding IS NOT NULL ORDER BY r.card_id, r.ord",
        (game_id, space_id),
    ).fetchall()
    keys = [(int(r[0]), int(r[1])) for r in rows]
    return keys, _matrix([vector_array(r[2]) for r in rows])


def ruling_neighbours_current(conn: psycopg.Connection, game_id: int, stamp: str) -> bool:
    """Whether every ruling of the game has its nearest passages, drawn at ``stamp`` (``family_stamp``)."""
    row = conn.execute(
        "SELECT t.near_stamp = %s AND NOT EXISTS (SELECT 1 FROM card_rulings r"
        " JOIN cards c ON c.id = r.card_id WHERE c.game_id = t.game_id AND r.near IS NULL)"
        " FROM card_tables t WHERE t.game_id = %s",
        (stamp, game_id),
    ).fetchone()
    return bool(row and row[0])


def store_ruling_neighbours(
    conn: psycopg.Connection, game_id: int, keys: list[tuple[int, int]], near: np.ndarray, stamp: str
) -> None:
    """Each ruling's nearest passage ids (rows of ``near``, best first) and the stamp they were drawn at.
    Runs in the caller's transaction."""
    conn.execute("CREATE TEMP TABLE ruling_near (card_id bigint, ord int, near bigint[]) ON COMMIT DROP")
    with conn.cursor().copy("COPY ruling_near (card_id, ord, near) FROM STDIN") as copy:
        for (card_id, ord_), row in zip(keys, near, strict=True):
            copy.write_row((card_id, ord_, [int(x) for x in row]))
    conn.execute(
        "UPDATE card_rulings r SET near = n.near FROM ruling_near n"
        " WHERE r.card_id = n.card_id AND r.ord = n.ord"
    )
    conn.execute("DROP TABLE ruling_near")
    conn.execute("UPDATE card_tables SET near_stamp = %s WHERE game_id = %s", (stamp, game_id))
