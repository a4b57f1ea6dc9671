"""The road at 13k, 100k and 1M passages, measured in one run on one machine.

For each size, the scale shelf (bench/scale_shelf.py) grows the database to that many live passages beside
the real shelf (the first size is the real shelf alone), then, through the real mesh:

- latency over the gold questions: the search span, arms and fusion, every arm and stage the services report,
  the reader and the answer, as p50/p95 (`rulesage bench`'s figures);
- gold recall@8 (reranked and fused) and recall@80 (`rulesage eval --no-answer`'s figures): the distractors
  are other families, so any change is an index or plan defect;
- `EXPLAIN (ANALYZE, BUFFERS)` of each arm's query for one gold question: plan nodes, buffers, time;
- the database's size on disk, its largest tables and indexes, and bytes per live passage;
- the scale shelf's own insert rate (synthetic rows; the real ingest is bench/bench_ingest.py).

Run it on a state folder that holds the real shelf (it adds and, with --remove, removes synthetic families;
the real shelf is never written):

    RULESAGE_STATE_DIR=/path/to/state python bench/bench_scale.py --shelf ../shared/corpus/shelf.toml \\
        --gold ../shared/eval/gold-dev.jsonl --sizes 0,100000,1000000 --json > scale.json

Window states are drawn on first read at every size (``RULESAGE_RERANK_STATES_AT_INGEST=false``, what a
750-game deployment runs: k8s/README.md); the real shelf's are already stored, so the reader's latency is the
same road at every size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_shelf


def explain(url: str, question: str, game: str) -> dict[str, Any]:
    """Each arm's query for one question, as the arm sends it, under EXPLAIN (ANALYZE, BUFFERS)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from rulesage.embed import shared_embedder
    from rulesage.store import vectors
    from services.lexical import bm25

    vec = shared_embedder().embed_queries([question])[0]
    out: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        row = conn.execute(
            "SELECT g.family_id, array_agg(d.id) FROM games g JOIN documents d ON d.game_id = g.id"
            " WHERE g.slug = %s GROUP BY g.family_id",
            (game,),
        ).fetchone()
        assert row is not None, game
        family, docs = int(row[0]), [int(d) for d in row[1]]
        queries = {
            "lexical": (bm25.SQL, {"q": question, "family": family, "limit": 80, "k1": bm25.K1, "b": bm25.B}),
            "dense": (vectors.SQL, {"v": vec, "family": family, "limit": 80}),
            "aisle": (vectors.DOCS_SQL, {"v": vec, "docs": docs[:4], "limit": 8}),
        }
        for arm, (sql, args) in queries.items():
            conn.execute(sql, args)  # warm, as a running arm is
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, args).fetchone()[0][0]  # type: ignore[index]
            out[arm] = {
                "ms": round(plan["Execution Time"], 2),
                "shared_hit": plan["Plan"].get("Shared Hit Blocks", 0),
                "shared_read": plan["Plan"].get("Shared Read Blocks", 0),
                "nodes": sorted(set(_nodes(plan["Plan"]))),
            }
    return out


def _nodes(node: dict[str, Any]) -> list[str]:
    name = node["Node Type"] + (f" {node['Index Name']}" if "Index Name" in node else "")
    return [name] + [n for child in node.get("Plans", []) for n in _nodes(child)]


def sizes(url: str, top: int = 10) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        (db_bytes,) = conn.execute("SELECT pg_database_size(current_database())").fetchone()  # type: ignore[misc]
        live = scale_shelf.live_passages(conn)
        rows = conn.execute(
            "SELECT c.relname, c.relkind, pg_total_relation_size(c.oid) FROM pg_class c"
            " WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i')"
            " ORDER BY pg_total_relation_size(c.oid) DESC LIMIT %s",
            (top,),
        ).fetchall()
        (states_rows, states_bytes) = conn.execute(  # type: ignore[misc]
            "SELECT count(*), coalesce(sum(pg_column_size(states)), 0) FROM window_states"
        ).fetchone()
    return {
        "live_passages": live,
        "database_bytes": int(db_bytes),
        "bytes_per_live_passage": round(int(db_bytes) / max(live, 1)),
        "window_states": {
            "rows": int(states_rows),
            "bytes_per_row": round(int(states_bytes) / max(states_rows, 1)),
        },
        "largest": [
            {"name": n, "kind": "index" if k == "i" else "table", "bytes": int(b)} for n, k, b in rows
        ],
    }


def measure(shelf: Path, gold: Path, rounds: int) -> dict[str, Any]:
    from rulesage import db
    from rulesage.eval import runs as evaluation

    url = db.database_url()
    bench = evaluation.run_bench(shelf, gold, rounds=rounds, previous=False)
    recall = evaluation.run_gold(shelf, gold, answer=False)
    q = evaluation.load_gold(gold)[0]
    return {
        "latency": bench,
        "recall": {
            k: recall.get(k)
            for k in (
                "n_answerable",
                "recall_at_8",
                "recall_at_8_fused",
                "recall_at_80",
                "mrr_at_10_reranked",
            )
        },
        "degraded": recall.get("degraded"),
        "explain": explain(url, q["question"], q["game"]),
        "size": sizes(url),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shelf", required=True)
    ap.add_argument("--gold", required=True)
    ap.add_argument("--sizes", default="0,100000,1000000", help="live passages; 0 = the real shelf alone")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--remove", action="store_true", help="remove the synthetic families at the end")
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    os.environ["RULESAGE_RERANK_STATES_AT_INGEST"] = "false"

    from rulesage import db, launcher

    targets = [int(s) for s in ns.sizes.split(",")]
    runs: list[dict[str, Any]] = []
    for i, target in enumerate(targets):
        # the mesh's supervisor owns the embedded server: the database is grown while the mesh is up
        if launcher.up_detached(out=sys.stderr) != 0:
            raise SystemExit("could not bring the mesh up (see the state folder's logs)")
        try:
            url = db.database_url()
            if i == 0 and target == 0:
                scale_shelf.remove(url)
            grown = scale_shelf.add(url, target, progress=not ns.json) if target else None
            t0 = time.perf_counter()
            run = {"target": target, "grown": grown, **measure(Path(ns.shelf), Path(ns.gold), ns.rounds)}
            run["seconds"] = round(time.perf_counter() - t0, 1)
            if ns.remove and i == len(targets) - 1:
                run["removed"] = scale_shelf.remove(url)
        finally:
            launcher.down(out=sys.stderr)
        runs.append(run)
        print(f"measured {run['size']['live_passages']} live passages", file=sys.stderr)
    base = runs[0]["latency"]["search_span_ms"]["p50"]
    for run in runs:
        run["search_span_p50_ratio"] = round(run["latency"]["search_span_ms"]["p50"] / base, 3)
    if ns.json:
        print(json.dumps({"runs": runs}, default=str))
    else:
        print(table(runs))
    return 0


def table(runs: list[dict[str, Any]]) -> str:
    head = (
        "| live passages | search span p50/p95 | arms+fusion | rerank | answer | R@8 / fused / R@80 | DB"
        " | B/passage |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in runs:
        lat, rec, size = r["latency"], r["recall"], r["size"]

        def pp(key: str, lat: dict[str, Any] = lat) -> str:
            v = lat.get(key)
            return f"{v['p50']:.1f} / {v['p95']:.1f}" if v else "–"

        lines.append(
            f"| {size['live_passages']:,} | {pp('search_span_ms')} (×{r['search_span_p50_ratio']}) |"
            f" {pp('arms_fusion_ms')} | {pp('rerank_ms')} | {pp('answer_ms')} |"
            f" {rec['recall_at_8']} / {rec['recall_at_8_fused']} / {rec['recall_at_80']} |"
            f" {size['database_bytes'] / 2**30:.2f} GiB | {size['bytes_per_live_passage']:,} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
