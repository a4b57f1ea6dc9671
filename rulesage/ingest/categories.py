"""Category maps into the database: the map named by a game's ``categories`` key (or found as
``<slug>.toml`` in the ingest's ``--categories`` folder, for a shelf one cannot edit), validated, its texts
embedded, and every category resolved to the passages its sections select.

A map that does not parse, or names a section that selects no passage of the game's own books, fails alone
(the summary and ``ingest_failures`` say which category and which section) and the map stored before it
stays in force: nothing is lost by a bad edit. An unchanged map in the active embedding space is not
re-embedded; its passages are resolved again on every ingest, so a new release of a book is mapped at once.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

from rulesage.core.categories import (
    SEPARATOR,
    CategoryMap,
    MapError,
    heading_matches,
    parse_map,
    rule_matches,
    selects,
    with_learned,
)

PASSAGES_SQL = """
SELECT p.id, p.heading_path, p.rule_id, p.parent_rule
FROM current_passages p JOIN documents d ON d.id = p.document_id
WHERE d.game_id = %s AND p.searchable
"""


@dataclass(frozen=True)
class MapLoad:
    categories: int
    passages: int  # (category, passage) pairs selected
    embedded: int  # texts embedded in this run (0 when the stored map was unchanged)


def read_map(path: Path, game: str) -> tuple[CategoryMap, str]:
    """The map with, when it names one, its learned examples (JSON lines beside it), and the sha256 of both
    files' bytes together: a change to either re-embeds."""
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise MapError(f"category map not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise MapError(f"{path.name}: not valid TOML: {exc}") from None
    digest = hashlib.sha256(raw)
    cmap = parse_map(data, path.name, game)
    if cmap.learned is None:
        return cmap, digest.hexdigest()
    try:
        learned = (path.parent / cmap.learned).read_bytes()
        rows = [json.loads(line) for line in learned.decode("utf-8").splitlines() if line.strip()]
    except FileNotFoundError:
        raise MapError(f"{path.name}: its learned examples {cmap.learned!r} are missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MapError(f"{cmap.learned}: not JSON lines: {exc}") from None
    if not all(isinstance(r, dict) for r in rows):
        raise MapError(f"{cmap.learned}: every line must be a JSON object")
    digest.update(learned)
    return with_learned(cmap, rows, cmap.learned), digest.hexdigest()


def resolve(
    cmap: CategoryMap, rows: Sequence[tuple[int, Sequence[str], str | None, str | None]]
) -> dict[str, list[int]]:
    """Passage ids each category selects. Raises MapError naming every section that selects nothing: a
    typo in a heading would otherwise silently map a category to less than its author meant."""
    out: dict[str, list[int]] = {}
    empty: list[str] = []
    for c in cmap.categories:
        out[c.name] = [int(pid) for pid, path, rule, parent in rows if selects(c, path, (rule, parent))]
        for s in c.sections:
            if not any(heading_matches(path, s) for _, path, _, _ in rows):
                empty.append(f"{c.name}: section {SEPARATOR.join(s)!r}")
        for r in c.rules:
            if not any(rule_matches(rule, r) or rule_matches(parent, r) for _, _, rule, parent in rows):
                empty.append(f"{c.name}: rule {r!r}")
    if empty:
        raise MapError(
            f"{cmap.game}: these sections select no passage of the game's books: " + "; ".join(empty)
        )
    return out


def load(
    conn: psycopg.Connection,
    game_id: int,
    path: Path,
    game: str,
    space_id: int,
    embed: Callable[[list[str]], np.ndarray],
) -> MapLoad:
    """Validate, resolve and store one game's map (one transaction: the old map stays until this one is
    whole)."""
    cmap, sha = read_map(path, game)
    rows = conn.execute(PASSAGES_SQL, (game_id,)).fetchall()
    if not rows:
        raise MapError(f"{game}: the game has no passages of its own to map (ingest its books first)")
    selected = resolve(cmap, rows)
    stored = conn.execute(
        "SELECT sha256, space_id FROM category_maps WHERE game_id = %s", (game_id,)
    ).fetchone()
    same = stored is not None and stored[0] == sha and stored[1] == space_id
    embedded = 0
    with conn.transaction():
        if not same:
            texts = [t for c in cmap.categories for t in c.texts]
            vectors = np.asarray(embed(texts), dtype=np.float32)
            embedded = len(texts)
            conn.execute("DELETE FROM categories WHERE game_id = %s", (game_id,))
            i = 0
            for c in cmap.categories:
                row = conn.execute(
                    "INSERT INTO categories (game_id, name, description, sections, rules)"
                    " VALUES (%s, %s, %s, %s, %s) RETURNING id",
                    (game_id, c.name, c.description, c.heading_paths(), list(c.rules)),
                ).fetchone()
                assert row is not None  # RETURNING gives the row it inserted
                cid = row[0]
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO category_texts (category_id, ord, kind, text, embedding)"
                        " VALUES (%s, %s, %s, %s, %s)",
                        [
                            (cid, k, kind, t, vectors[i + k])
                            for k, (kind, t) in enumerate(zip(c.kinds(), c.texts, strict=True))
                        ],
                    )
                i += len(c.texts)
            conn.execute(
                "INSERT INTO category_maps (game_id, source, sha256, space_id) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (game_id) DO UPDATE SET source = excluded.source, sha256 = excluded.sha256,"
                " space_id = excluded.space_id, loaded_at = now()",
                (game_id, str(path.name), sha, space_id),
            )
        ids: dict[str, int] = dict(
            conn.execute("SELECT name, id FROM categories WHERE game_id = %s", (game_id,)).fetchall()
        )
        conn.execute(
            "DELETE FROM category_passages cp USING categories c"
            " WHERE c.id = cp.category_id AND c.game_id = %s",
            (game_id,),
        )
        pairs = [(ids[name], pid) for name, pids in selected.items() for pid in pids]
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO category_passages (category_id, passage_id) VALUES (%s, %s)", pairs)
    return MapLoad(len(cmap.categories), len(pairs), embedded)
