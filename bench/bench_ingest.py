"""Ingest the whole shelf into a fresh database, draw the index-time rows the road reads (reader window
states, answer sentence vectors: what `rulesage ingest` does after the shelf), then ingest again unchanged;
print passages/s for the shelf alone and end to end.

    .venv/bin/python bench/bench_ingest.py [--shelf ../shared/corpus/shelf.toml] [--game SLUG ...] [--keep]

The database is created with a random name on the configured server (DATABASE_URL or the embedded one),
migrated, and dropped at the end unless --keep. Target: >= 30 passages/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rulesage.config import shared_dir  # noqa: E402
from rulesage.db import database_url, migrate  # noqa: E402
from rulesage.indexing import draw_all  # noqa: E402
from rulesage.ingest.pipeline import ingest_shelf  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shelf", type=Path, default=shared_dir() / "corpus" / "shelf.toml")
    ap.add_argument("--game", action="append", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the database (its URL is printed)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args()

    base = database_url()
    name = "bench_ingest_" + secrets.token_hex(4)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = psycopg.conninfo.make_conninfo(base, dbname=name)
    try:
        migrate(url)
        first = ingest_shelf(url, args.shelf, args.game, progress=not args.no_progress)
        draw_seconds: dict[str, float] = {}
        drawn = draw_all(url, progress=not args.no_progress, seconds=draw_seconds)
        end_to_end = first.seconds + sum(draw_seconds.values())
        again = ingest_shelf(url, args.shelf, args.game, progress=not args.no_progress)
        with psycopg.connect(url) as conn:
            live = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE searchable), count(embedding) FROM current_passages"
            ).fetchone()
        report = {
            "cpus": os.cpu_count(),
            "first": first.to_dict(),
            "rerun": again.to_dict(),
            "live_passages": live[0] if live else 0,
            "live_searchable": live[1] if live else 0,
            "vectors": live[2] if live else 0,
            "passages_per_s": round(first.passages / first.seconds, 1) if first.seconds else None,
            "index_time": {k: {"passages": drawn[k], "seconds": draw_seconds[k]} for k in drawn},
            "end_to_end_seconds": round(end_to_end, 1),
            "end_to_end_passages_per_s": round(first.passages / end_to_end, 1) if end_to_end else None,
            "embedded_per_s": round(first.embedded / first.seconds, 1) if first.seconds else None,
            "rerun_seconds": round(again.seconds, 2),
        }
        print(json.dumps(report, indent=2))
        print(
            f"\nfull shelf: {first.passages} passages ({first.embedded} embedded) in {first.seconds:.1f}s = "
            f"{report['passages_per_s']} passages/s; with the index-time rows "
            f"({', '.join(f'{k} {v}s' for k, v in draw_seconds.items())}) {end_to_end:.1f}s = "
            f"{report['end_to_end_passages_per_s']} passages/s end to end; unchanged re-run "
            f"{again.seconds:.2f}s; {len(first.failed)} failed"
        )
        if args.keep:
            print(f"kept database: {url}")
    finally:
        if not args.keep:
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
