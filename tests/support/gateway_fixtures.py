"""Test support shared by the gateway's unit, integration and e2e tests: a throwaway Postgres database (real
server, random name, migrated, dropped at the end) and a sample shelf + ruling shaped like the ask road's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

# the gateway tests import the throwaway database from here
from tests.support.throwaway_db import throwaway_database as throwaway_database


def database_name(url: str) -> str:
    return str(conninfo_to_dict(url).get("dbname", ""))


SAMPLE_GAMES = [
    ("dnd-5e", "dnd-5e-srd", "Dungeons & Dragons 5th Edition (SRD 5.1)"),
    ("catan", "catan", "Catan"),
    ("fate", "fate-core", "Fate Core System"),
]


def seed_shelf(url: str) -> None:
    """Families, games and one rulebook each (no passages: the pages need only the shelf)."""
    with psycopg.connect(url, autocommit=True) as conn:
        for family, slug, name in SAMPLE_GAMES:
            fid = conn.execute(
                "INSERT INTO families (slug) VALUES (%s)"
                " ON CONFLICT (slug) DO UPDATE SET slug = EXCLUDED.slug RETURNING id",
                (family,),
            ).fetchone()[0]  # type: ignore[index]
            gid = conn.execute(
                "INSERT INTO games (slug, name, family_id) VALUES (%s, %s, %s) RETURNING id",
                (slug, name, fid),
            ).fetchone()[0]  # type: ignore[index]
            conn.execute(
                "INSERT INTO documents (key, title, kind, game_id, family_id, path, sha256, pages)"
                " VALUES (%s, %s, 'rulebook', %s, %s, %s, %s, %s)",
                (f"{slug}-rules", f"{name} rulebook", gid, fid, f"{slug}.pdf", "0" * 64, 100),
            )


def sample_ruling(**overrides: Any) -> dict[str, Any]:
    """A ruling dict in the exact shape rulesage.rulings documents, as the ask road stores it."""
    passages = [
        {
            "id": 101,
            "text": "You can make an opportunity attack when a hostile creature that you can see moves "
            "out of your reach. To make the opportunity attack, you use your reaction to make one "
            "melee attack against the provoking creature.",
            "doc_key": "srd-5.1",
            "doc_title": "System Reference Document 5.1",
            "doc_kind": "rulebook",
            "doc_version": "5.1",
            "page_start": 92,
            "page_end": 92,
            "heading_path": ["Combat", "Opportunity Attacks"],
            "rule_id": "",
            "fused_score": 0.049180,
            "ranks": {"lexical": 1, "dense": 1, "aisle": 1},
            "rerank_score": 7.412,
        },
        {
            "id": 102,
            "text": "You can avoid provoking an opportunity attack by taking the Disengage action.",
            "doc_key": "srd-5.1",
            "doc_title": "System Reference Document 5.1",
            "doc_kind": "rulebook",
            "doc_version": "5.1",
            "page_start": 92,
            "page_end": 93,
            "heading_path": ["Combat", "Opportunity Attacks"],
            "rule_id": "",
            "fused_score": 0.032787,
            "ranks": {"lexical": 1, "dense": 1},
            "rerank_score": 5.118,
        },
        {
            "id": 103,
            "text": "If you take the Disengage action, your movement doesn't provoke opportunity "
            "attacks for the rest of the turn.",
            "doc_key": "srd-5.1",
            "doc_title": "System Reference Document 5.1",
            "doc_kind": "rulebook",
            "doc_version": "5.1",
            "page_start": 91,
            "page_end": 91,
            "heading_path": ["Combat", "Actions in Combat", "Disengage"],
            "rule_id": "",
            "fused_score": 0.031746,
            "ranks": {"dense": 2, "aisle": 2},
            "rerank_score": 4.006,
        },
    ]
    ruling: dict[str, Any] = {
        "game": "dnd-5e-srd",
        "question": "If a goblin walks away from me, do I get a free attack?",
        "answer": "Yes — if you can see the goblin and it moves out of your reach, you can use your "
        "reaction to make one melee attack against it (an opportunity attack).\n\n"
        "It avoids that attack if it takes the Disengage action first.",
        "verdict": "answered",
        "citations": [
            {
                "passage_id": 101,
                "quote": "You can make an opportunity attack when a hostile creature that you can see "
                "moves out of your reach.",
                "start": 0,
                "end": 98,
                "page": 92,
                "doc_key": "srd-5.1",
                "doc_title": "System Reference Document 5.1",
                "doc_version": "5.1",
                "rule_id": "",
            },
            {
                "passage_id": 102,
                "quote": "You can avoid provoking an opportunity attack by taking the Disengage action.",
                "start": 0,
                "end": 77,
                "page": 92,
                "doc_key": "srd-5.1",
                "doc_title": "System Reference Document 5.1",
                "doc_version": "5.1",
                "rule_id": "",
            },
        ],
        "passages": passages,
        "wrench": {
            "arms": [
                {"arm": "lexical", "state": "ok", "detail": "", "hits": 80, "ms": 11.2},
                {"arm": "dense", "state": "ok", "detail": "", "hits": 80, "ms": 19.5},
                {"arm": "aisle", "state": "ok", "detail": "1 book", "hits": 8, "ms": 14.1},
                {
                    "arm": "category",
                    "state": "ok",
                    "detail": "unsure: opportunity_attacks at 0.41 is under the threshold 0.50",
                    "hits": 0,
                    "ms": 3.2,
                    "category": {
                        "name": None,
                        "best": "opportunity_attacks",
                        "confidence": 0.41,
                        "threshold": 0.5,
                        "sections": [],
                        "runner_up": "movement",
                        "runner_up_confidence": 0.33,
                    },
                },
            ],
            "voted": ["lexical", "dense", "aisle"],
            "k": 60,
            "ceiling": 0.0328,  # a stale stored value: the page must derive its own
            "ceiling_formula": "hardcoded",
            "guarantees_fired": ["rulebook top passage kept"],
            "rerank": {"state": "ok", "detail": "", "model": "minilm-l6-rerank"},
            "answer": {"state": "ok", "detail": "", "attempts": 1, "rejections": []},
            "aliases": ["free attack -> opportunity attack"],
            "candidates": [
                {k: p[k] for k in ("id", "fused_score", "ranks", "rerank_score")} for p in passages
            ],
            "timings": [
                {"stage": "dense.embed", "ms": 6.1},
                {"stage": "lexical.search", "ms": 11.2},
                {"stage": "dense.search", "ms": 13.4},
                {"stage": "aisle.search", "ms": 8.0},
                {"stage": "fusion.rrf", "ms": 0.4},
                {"stage": "rerank.score", "ms": 48.7},
                {"stage": "answer.generate", "ms": 2604.0},
            ],
            "search_span_ms": 88.0,
            "answer_ms": 2604.0,
            "total_ms": 2701.0,
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        },
        "models": {"embed": "all-MiniLM-L6-v2", "rerank": "minilm-l6-rerank", "answer": "embedded"},
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
    }
    ruling.update(overrides)
    return ruling


async def store(
    url: str,
    ruling: dict[str, Any],
    state: str = "pending",
    reason: str = "",
    question_vec: Sequence[float] = (),
) -> str:
    """Save a ruling through rulesage.rulings.save() (with its question's embedding, when given) and set its
    public state."""
    from rulesage import rulings

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        rid = await rulings.save(conn, ruling, question_vec=question_vec)
        if state != "pending":
            await rulings.set_public_state(conn, rid, state, reason)
    return rid
