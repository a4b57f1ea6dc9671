"""The scale shelf: synthetic families beside the real shelf, so the road can be measured at 100,000 and
1,000,000 live passages without a million pages of rulebooks.

Each synthetic family is a copy of one real family (chosen at random among the real families with live
passages, so family and document sizes follow the real shelf's), with one game owning its books:

- the text of every passage is its template's words shuffled, so each passage keeps its template's lexeme
  multiset: the tsvector, ``doc_len`` and the BM25 postings (term frequencies) are the template's, and the
  family's BM25 statistics are a real family's;
- the vector is the template's plus Gaussian noise (sigma 0.025 a dimension: cosine about 0.9 to the
  template), normalised, so no embedding run is needed and the distractors sit right beside the real
  passages in vector space;
- the index-time rows the road reads for a passage come with it: postings, and the answer's sentence vectors
  (the template's, stamped with the new text's sha256). The reader's window states are not copied: at this
  size they are drawn on first read (``RULESAGE_RERANK_STATES_AT_INGEST=false``, k8s/README.md).

Everything runs inside Postgres (INSERT ... SELECT from the template), one transaction per family, so an
interrupted run keeps whole families. The families added are listed in ``scale_shelf``, and ``remove``
deletes exactly those; the real shelf is never written.

    python bench/scale_shelf.py add --passages 100000     # grow to 100,000 live passages
    python bench/scale_shelf.py status --json
    python bench/scale_shelf.py remove
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

import psycopg

SIGMA = 0.025
PREFIX = "scale"

TABLE_SQL = """
CREATE TABLE IF NOT EXISTS scale_shelf (
    family_id   int PRIMARY KEY REFERENCES families(id),
    template_id int NOT NULL,
    passages    int NOT NULL,
    added_at    timestamptz NOT NULL DEFAULT now()
)
"""
# Real families: not added here, with live passages, ruled (a BEIR corpus is not a game's shelf).
TEMPLATES_SQL = """
SELECT f.id, count(p.id) FROM families f JOIN live_passages p ON p.family_id = f.id
WHERE f.ruled AND f.id NOT IN (SELECT family_id FROM scale_shelf)
GROUP BY f.id ORDER BY f.id
"""
DOCUMENTS_SQL = """
WITH ins AS (
    INSERT INTO documents (key, version, title, kind, game_id, family_id, amends, path, licence, sha256,
                           pages)
    SELECT %(slug)s || '/' || d.key, d.version, d.title, d.kind,
           CASE WHEN d.game_id IS NULL THEN NULL ELSE %(game)s END, %(family)s,
           CASE WHEN d.amends IS NULL THEN NULL ELSE %(slug)s || '/' || d.amends END,
           d.path, d.licence, d.sha256, d.pages
    FROM documents d
    WHERE d.family_id = %(template)s AND EXISTS (SELECT 1 FROM live_passages p WHERE p.document_id = d.id)
    RETURNING id, key
)
INSERT INTO scale_docmap (old, new)
SELECT d.id, ins.id FROM ins JOIN documents d ON ins.key = %(slug)s || '/' || d.key
"""
PASSAGES_SQL = """
INSERT INTO passages (document_id, family_id, ord, kind, heading_path, text, content_hash, page_start,
                      page_end, rule_id, parent_rule, searchable, tsv, doc_len, embedding, space_id)
SELECT m.new, %(family)s, p.ord, p.kind, p.heading_path, s.t, encode(sha256(convert_to(s.t, 'UTF8')), 'hex'),
       p.page_start, p.page_end, p.rule_id, p.parent_rule, true, p.tsv, p.doc_len,
       CASE WHEN p.embedding IS NULL THEN NULL ELSE l2_normalize(p.embedding + n.v) END, p.space_id
FROM live_passages p
JOIN scale_docmap m ON m.old = p.document_id AND p.family_id = %(template)s
CROSS JOIN LATERAL (
    SELECT string_agg(w, ' ' ORDER BY random()) AS t FROM regexp_split_to_table(p.text, '\\s+') AS w
) s
CROSS JOIN LATERAL (
    SELECT array_agg(random_normal(0, %(sigma)s))::vector AS v
    FROM generate_series(1, coalesce(vector_dims(p.embedding), 1))
) n
"""
# The new passage of a template passage: same (document, ord); a document's live passages have distinct ords.
# Every join names its family, so each family costs the same at any shelf size (the family indexes).
PAIRS = """
FROM live_passages np
JOIN scale_docmap m ON m.new = np.document_id AND np.family_id = %(family)s
JOIN live_passages op ON op.document_id = m.old AND op.ord = np.ord AND op.family_id = %(template)s
"""
POSTINGS_SQL = (
    "INSERT INTO postings (family_id, lexeme, passage_id, tf) SELECT %(family)s, po.lexeme, np.id, po.tf"
    + PAIRS
    + "JOIN postings po ON po.passage_id = op.id"
)
SENTENCES_SQL = (
    "INSERT INTO sentence_vectors (passage_id, model, text_sha, spans, vectors)"
    " SELECT np.id, sv.model, np.content_hash, sv.spans, sv.vectors"
    + PAIRS
    + "JOIN sentence_vectors sv ON sv.passage_id = op.id"
)


def live_passages(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT count(*) FROM live_passages").fetchone()
    return int(row[0]) if row else 0


def ensure_table(conn: psycopg.Connection) -> None:
    conn.execute(TABLE_SQL)


def add_family(conn: psycopg.Connection, number: int, template: int, sigma: float) -> int:
    """One synthetic family copied from ``template``; returns its live passages."""
    slug = f"{PREFIX}-{number:05d}"
    with conn.transaction():
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS scale_docmap (old int, new int) ON COMMIT DELETE ROWS")
        row = conn.execute("INSERT INTO families (slug) VALUES (%s) RETURNING id", (slug,)).fetchone()
        assert row is not None
        family = int(row[0])
        row = conn.execute(
            "INSERT INTO games (slug, name, family_id) VALUES (%s, %s, %s) RETURNING id",
            (slug, f"Scale shelf game {number}", family),
        ).fetchone()
        assert row is not None
        args: dict[str, Any] = {
            "slug": slug, "game": int(row[0]), "family": family, "template": template, "sigma": sigma
        }  # fmt: skip
        conn.execute(DOCUMENTS_SQL, args)
        added = conn.execute(PASSAGES_SQL, args).rowcount
        conn.execute(POSTINGS_SQL, args)
        conn.execute(SENTENCES_SQL, args)
        conn.execute(
            "INSERT INTO scale_shelf (family_id, template_id, passages) VALUES (%s, %s, %s)",
            (family, template, added),
        )
    return added


def add(url: str, target: int, sigma: float = SIGMA, seed: int = 7, progress: bool = True) -> dict[str, Any]:
    """Add synthetic families until the database holds at least ``target`` live passages."""
    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        ensure_table(conn)
        templates = [(int(f), int(n)) for f, n in conn.execute(TEMPLATES_SQL).fetchall()]
        if not templates:
            raise SystemExit("no real family with live passages to copy: ingest a shelf first")
        row = conn.execute("SELECT count(*) FROM scale_shelf").fetchone()
        number = int(row[0]) if row else 0
        live = start = live_passages(conn)
        rng = random.Random(seed + number)
        conn.execute("SELECT setseed(%s)", (((seed + number) % 1000) / 1000.0,))
        bar = None
        if progress and live < target:
            from tqdm import tqdm

            bar = tqdm(total=target, initial=live, unit="passage", desc="scale shelf", file=sys.stderr)
        families = 0
        while live < target:
            template, _ = rng.choice(templates)
            number += 1
            got = add_family(conn, number, template, sigma)
            live += got
            families += 1
            if bar is not None:
                bar.update(got)
        if bar is not None:
            bar.close()
        if families:
            conn.execute("VACUUM ANALYZE")  # fresh statistics and visibility, as a settled database has
    seconds = time.perf_counter() - t0
    return {
        "live_passages": live,
        "added_passages": live - start,
        "added_families": families,
        "seconds": round(seconds, 1),
        "passages_per_s": round((live - start) / seconds, 1) if families else None,
    }


def remove(url: str) -> dict[str, Any]:
    """Delete every family this tool added, with its games, books, passages and their rows."""
    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        ensure_table(conn)
        ids = [int(r[0]) for r in conn.execute("SELECT family_id FROM scale_shelf").fetchall()]
        with conn.transaction():
            # the largest table: by its leading key, not one cascade per passage
            conn.execute("DELETE FROM postings WHERE family_id = ANY(%s)", (ids,))
            for table in ("sentence_vectors", "window_states"):
                conn.execute(
                    f"DELETE FROM {table} t USING passages p"
                    " WHERE p.id = t.passage_id AND p.family_id = ANY(%s)",
                    (ids,),
                )
            conn.execute("DELETE FROM passages WHERE family_id = ANY(%s)", (ids,))
            conn.execute("DELETE FROM documents WHERE family_id = ANY(%s)", (ids,))
            conn.execute("DELETE FROM games WHERE family_id = ANY(%s)", (ids,))
            conn.execute("DELETE FROM scale_shelf WHERE family_id = ANY(%s)", (ids,))
            conn.execute("DELETE FROM families WHERE id = ANY(%s)", (ids,))
        conn.execute("VACUUM ANALYZE")
        live = live_passages(conn)
    return {
        "removed_families": len(ids),
        "live_passages": live,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def status(url: str) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        ensure_table(conn)
        row = conn.execute("SELECT count(*), coalesce(sum(passages), 0) FROM scale_shelf").fetchone()
        assert row is not None
        return {
            "live_passages": live_passages(conn),
            "scale_families": int(row[0]),
            "scale_passages": int(row[1]),
        }


def main(argv: list[str] | None = None) -> int:
    from rulesage import db

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="add synthetic families up to --passages live passages")
    a.add_argument("--passages", type=int, required=True)
    a.add_argument("--sigma", type=float, default=SIGMA)
    a.add_argument("--seed", type=int, default=7)
    r = sub.add_parser("remove", help="remove every synthetic family")
    st = sub.add_parser("status", help="live passages and synthetic families")
    for p in (a, r, st):
        p.add_argument("--json", action="store_true", help="print only JSON")
    ns = ap.parse_args(argv)
    url = db.database_url()
    if ns.cmd == "add":
        out = add(url, ns.passages, ns.sigma, ns.seed, progress=not ns.json)
    elif ns.cmd == "remove":
        out = remove(url)
    else:
        out = status(url)
    print(json.dumps(out) if ns.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
