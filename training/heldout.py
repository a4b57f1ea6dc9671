"""`rulesage train held-out`: the training questions' held-out split as a gold file, for `rulesage eval`.

Every trainer splits the reviewed questions by quote with one stable hash (``training.questions.split_of``,
10 % held out), so the held-out rows are questions no shipped model trained on. Written as a gold file they
are measured through the real mesh like the evaluation sets: by default only the real players' posts (a URL
source) that the book answers, the kind of question the product is measured on and of which the evaluation
holds few. Choosing between candidates on them, beside gold-real-dev, halves the noise of a choice.

A row with a quote keeps it as its evidence. A row naming a numbered rule (the MTG Comprehensive Rules,
whose words are not copied into ``data/``) gets the served rule's own line as its quote (a whole rule: the
first line of each row it spans, any of which answers), read from the database; a rule the shelf does not
print is counted and left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from training.questions import Question, load_questions, rule_row, split_of

# Real players' posts kept for choosing between models: outside data/questions/, so no trainer reads them.
DEV_QUESTIONS = "data/real-dev/real-dev-*.jsonl"


def rule_quotes(texts: list[str], rule: str) -> list[str]:
    """Quotes that find ``rule`` in its rows' texts: a sub-rule's own line ("702.19b The controller ..."),
    or for a whole rule each of its rows' first line of text (the rule spans several rows; any answers)."""
    wanted = rule.rstrip(".")
    body = [[ln.strip() for ln in t.splitlines() if ln.strip()] for t in texts]
    own = [ln for lines in body for ln in lines if ln.split(" ", 1)[0].rstrip(".") == wanted]
    if own and wanted != rule_row(rule):
        return own[:1]
    # a rule's first line is its title ("702.19. Trample") or its whole text ("101.2. When a rule ...")
    return [lines[1] if len(lines) > 1 and len(lines[0].split()) < 8 else lines[0] for lines in body if lines]


def rule_texts(conn: Any, rules: set[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """(doc, rule) -> the texts of the live rows that print the rule (a sub-rule sits in its rule's rows)."""
    out: dict[tuple[str, str], list[str]] = {}
    for doc, rule in sorted(rules):
        rows = conn.execute(
            "SELECT p.text FROM passages p JOIN documents d ON d.id = p.document_id"
            " WHERE d.key = %s AND p.rule_id = ANY(%s) AND p.retired_at IS NULL AND NOT p.superseded"
            " ORDER BY p.ord",
            (doc, [rule.rstrip("."), rule_row(rule)]),
        ).fetchall()
        if rows:
            out[(doc, rule)] = [r[0] for r in rows]
    return out


def gold_rows(
    questions: list[Question],
    rules: dict[tuple[str, str], list[str]],
    written: bool = False,
    every: bool = False,
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The held-out split's answerable questions (only real posts unless ``written``) as gold rows. With
    ``every``, every row whatever its split, the ones the book is silent on included (``answerable`` false,
    no evidence): a development set that no trainer reads."""
    rows: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for q in questions:
        if not every and (not q.answerable or split_of(q) != "val"):
            continue
        if not (q.public_post or written):
            counts["written-skipped"] += 1
            continue
        key = hashlib.sha256(f"{q.game}|{q.question}".encode()).hexdigest()[:10]
        tag = "real-post" if q.public_post else "written"
        if not q.answerable:
            rows.append(silent_row(q, key, tag))
            counts["silent"] += 1
            continue
        quotes = [q.quote] if q.quote else rule_quotes(rules.get((q.doc, q.rule), []), q.rule)
        if not quotes:
            counts["rule-not-printed"] += 1
            continue
        evidence = [{"doc": q.doc, "page": q.page, "quote": quote} for quote in quotes]
        if q.rule:
            for item in evidence:
                item["rule"] = q.rule
        rows.append(
            {
                "id": f"held-{key}",
                "game": q.game,
                "question": q.question,
                "answerable": True,
                "evidence": evidence,
                "source": q.provenance,
                "tags": [tag],
            }
        )
        counts["real-posts" if q.public_post else "written"] += 1
    rows.sort(key=lambda r: r["id"])
    return rows, counts


def silent_row(q: Question, key: str, tag: str) -> dict[str, Any]:
    """A question the book does not answer, as the evaluation writes one: no evidence to find."""
    return {
        "id": f"held-{key}",
        "game": q.game,
        "question": q.question,
        "answerable": False,
        "evidence": [],
        "source": q.provenance,
        "tags": [tag, "unanswerable"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="rulesage train held-out",
        description="Write the training questions' held-out split (real posts by default) as a gold file.",
    )
    p.add_argument(
        "--questions", default="data/questions/questions-*.jsonl", help="training questions (glob)"
    )
    p.add_argument("--out", required=True, help="the gold file to write (keep it out of git: artifacts/)")
    p.add_argument("--written", action="store_true", help="the held-out written questions too")
    p.add_argument(
        "--every",
        action="store_true",
        help="every row of --questions, silent ones included, whatever the split: for a development set no"
        f" trainer reads (--questions '{DEV_QUESTIONS}')",
    )
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    questions = load_questions(args.questions, silent=args.every)
    if not questions:
        p.error(f"no questions match {args.questions!r}")
    wanted = {
        (q.doc, q.rule) for q in questions if q.rule and not q.quote and (args.every or split_of(q) == "val")
    }
    rules: dict[tuple[str, str], list[str]] = {}
    if wanted:
        from rulesage import db

        with db.connect(autocommit=True) as conn:
            rules = rule_texts(conn, wanted)
    rows, counts = gold_rows(questions, rules, args.written, args.every)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(json.dumps({"out": str(out), "rows": len(rows), **dict(counts)}))
    return 0
