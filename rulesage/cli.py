"""The `rulesage` command line: up, down, status, migrate, ingest, ask, eval, gate, figures, bench,
doorman-exam, serve, train."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import runpy
import shlex
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _servable() -> list[str]:
    from rulesage import mesh

    return list(mesh.MESH)


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def cmd_up(ns: argparse.Namespace) -> int:
    from rulesage import launcher

    return launcher.up_detached() if ns.detach else launcher.up_foreground()


def cmd_down(ns: argparse.Namespace) -> int:
    from rulesage import launcher

    return launcher.down()


def cmd_status(ns: argparse.Namespace) -> int:
    from rulesage import launcher

    st = launcher.status()
    if ns.json:
        _print_json(st)
        return 0 if st["running"] else 1
    if not st["running"]:
        print("RuleSage is not running (start it with `rulesage up --detach`)")
        return 1
    print(f"RuleSage {st['state']} — gateway {st['gateway_url']} — database: {st['database']}")
    for name, svc in st["services"].items():
        health, addr, restarts = svc["health"], svc["address"], svc["restarts"]
        print(f"  {name:8s} {health:12s} {addr:24s} pid {svc['pid']}  restarts {restarts}")
    return 0


def cmd_migrate(ns: argparse.Namespace) -> int:
    from rulesage import db

    applied = db.migrate()
    print("applied: " + (", ".join(applied) if applied else "nothing (up to date)"))
    return 0


def cmd_ingest(ns: argparse.Namespace) -> int:
    from rulesage import db
    from rulesage.ingest.pipeline import ingest_shelf

    url = db.database_url()
    db.migrate(url)
    summary = ingest_shelf(
        url,
        Path(ns.shelf),
        games=ns.game or None,
        progress=not ns.json,
        categories_dir=Path(ns.categories) if ns.categories else None,
    )
    from rulesage.indexing import draw_all

    drawn = draw_all(url, progress=not ns.json)  # what requests read instead of computing
    if ns.json:
        _print_json({**summary.to_dict(), **drawn})
    elif any(drawn.values()):
        print("index-time work: " + ", ".join(f"{k} {v}" for k, v in drawn.items()))
    return 1 if summary.failed and not summary.documents else 0


def cmd_ask(ns: argparse.Namespace) -> int:
    from rulesage import launcher
    from rulesage.core.questions import BadQuestion
    from rulesage.road import Road

    if launcher.read_state() is None and not os.environ.get("RULESAGE_FUSION_ADDR"):
        print("RuleSage is not running: start it with `rulesage up --detach`", file=sys.stderr)
        return 2

    from rulesage import telemetry

    telemetry.setup("cli")

    async def run() -> dict[str, Any]:
        road = Road()
        try:
            return (await road.ask(ns.game, ns.question)).to_json()
        finally:
            await road.close()

    try:
        ruling = asyncio.run(run())
    except BadQuestion as exc:
        print(f"rulesage ask: {exc}", file=sys.stderr)
        return 2
    if ns.json:
        _print_json(ruling)
        return 0
    from rulesage.render import ruling_text

    print(ruling_text(ruling))
    return 0


def cmd_eval(ns: argparse.Namespace) -> int:
    from rulesage.eval import runs

    trace: runs.Trace | None = None
    if ns.beir:
        if ns.report:
            print("rulesage eval: --report is for gold questions (--shelf and --gold)", file=sys.stderr)
            return 2
        report = runs.run_beir(Path(ns.beir), limit=ns.limit)
    else:
        if not ns.shelf or not ns.gold:
            print("rulesage eval: --shelf and --gold are required (or --beir DIR)", file=sys.stderr)
            return 2
        trace = runs.Trace() if ns.report else None
        report = runs.run_gold(
            Path(ns.shelf), Path(ns.gold), answer=not ns.no_answer, limit=ns.limit, games=ns.game, trace=trace
        )
    if ns.json:
        _print_json(report)
    else:
        print(runs.report_text(report))
    if trace is not None:
        from rulesage.eval.report import write_report

        command = shlex.join(["rulesage", *getattr(ns, "argv", sys.argv[1:])])
        index = write_report(
            Path(ns.report), report, trace.rows, command=command, threshold=trace.threshold or None
        )
        # stdout stays the eval's own output (only JSON with --json): the report's path goes to stderr
        print(f"report: {index.resolve()}", file=sys.stderr)
    if ns.record:
        from rulesage.eval import figures

        typed = list(getattr(ns, "argv", sys.argv[1:]))
        for flag in ("--record", "--record-set"):
            while flag in typed:
                i = typed.index(flag)
                del typed[i : i + 2]
        set_name = ns.record_set or (Path(ns.gold).stem if ns.gold else Path(ns.beir).name)
        figures.record(ns.record, shlex.join(["rulesage", *typed]), {set_name: report})
        print(f"recorded: {ns.record} / {set_name} in {figures.FIGURES}", file=sys.stderr)
    return 0


def cmd_gate(ns: argparse.Namespace) -> int:
    from rulesage.eval import gate

    return gate.main(["--json"] if ns.json else [], record=ns.record)


def cmd_figures(ns: argparse.Namespace) -> int:
    from rulesage.eval import figures

    try:
        changed = figures.sync(check=ns.check)
    except figures.FiguresError as exc:
        print(f"rulesage figures: {exc}", file=sys.stderr)
        return 2
    if ns.check:
        for rel in changed:
            print(f"stale: {rel} (run `rulesage figures`)", file=sys.stderr)
        return 1 if changed else 0
    for rel in changed:
        print(f"rewrote {rel}")
    return 0


def cmd_bench(ns: argparse.Namespace) -> int:
    from rulesage.eval import runs

    report = runs.run_bench(
        Path(ns.shelf), Path(ns.gold), rounds=ns.rounds, answer=not ns.no_answer, previous=not ns.no_previous
    )
    if ns.json:
        _print_json(report)
    else:
        print(runs.bench_text(report))
    return 0


def cmd_doorman_exam(ns: argparse.Namespace) -> int:
    # the doorman sits the exam in its own package, reached by name as the registry's entry points are
    from rulesage.eval import doorman

    return doorman.main(_service_entry("doorman", doorman.SITTER), ns.exam, ns.json, ns.write_report)


def cmd_serve(ns: argparse.Namespace) -> int:
    from rulesage import mesh

    runpy.run_module(mesh.get(ns.name).module, run_name="__main__", alter_sys=True)
    return 0


# Every model we train, and where its recipe's entry point lives (``module:function``, called with the
# arguments that follow the model's name). The training wing ships with the checkout, not with the image.
TRAINABLE = {
    "encoder": ("training.encoder.cli:main", "the search encoder (MiniLM-L6 tuned on our books)"),
    "query-tower": (
        "training.query.cli:main",
        "the question tower: the encoder tuned again to read questions against the stored passage vectors",
    ),
    "card-tower": (
        "training.query.cli:card_main",
        "the card tower: the question tower trained on the card lanes too, read on them alone",
    ),
    "reranker": ("training.reranker:main", "the careful reader's head over the encoder's window states"),
    "reranker-pools": (
        "training.reranker.pools:main",
        "no model: the served election's candidates for the head's training questions",
    ),
    "reranker-blend": (
        "training.reranker.blend:main",
        "two heads over one encoder served as one (a weighted mean on the first head's scale)",
    ),
    "reranker-asked": (
        "training.reranker.asked:main",
        "the head's share read from a post's asking sentences, chosen on held-out questions",
    ),
    "reranker-rescore": (
        "training.reranker.rescore:main",
        "no model: heads, and means of heads, measured over the candidates an eval run served",
    ),
    "reader": ("training.reader.cli:main", "the cross reader (question and window read together)"),
    "category": ("training.category.learn:main", "the category leg's learned examples"),
    "category-calibration": ("training.category.calibrate:main", "the category leg's ballot threshold"),
    "doorman": ("training.doorman.learn:main", "the doorman's learned screen"),
    "answerer-asks": ("training.answerer.data:main", "the answerer's training asks, through the real road"),
    "answerer": ("training.answerer.train:main", "the quote selector and the answerability model"),
    "sentences": ("training.sentences.cli:main", "the sentence reader (question and sentence read together)"),
    "held-out": ("training.heldout:main", "no model: the questions every trainer held out, as a gold file"),
    "abstain": ("training.answerer.calibrate:main", "the interim scorer's abstain threshold"),
}


def cmd_train(argv: list[str]) -> int:
    import importlib

    if not argv or argv[0] in ("-h", "--help") or argv[0] not in TRAINABLE:
        print("usage: rulesage train MODEL [options]   (rulesage train MODEL --help for its options)\n")
        print("models:")
        for name, (_, what) in TRAINABLE.items():
            print(f"  {name:<22} {what}")
        if argv and argv[0] not in ("-h", "--help"):
            print(f"\nrulesage train: unknown model {argv[0]!r}", file=sys.stderr)
            return 2
        return 0
    module, _, func = TRAINABLE[argv[0]][0].partition(":")
    try:
        entry = getattr(importlib.import_module(module), func)
    except ModuleNotFoundError as exc:
        print(
            f"rulesage train {argv[0]}: {exc} (training runs from a checkout with `.[train]`)",
            file=sys.stderr,
        )
        return 2
    return int(entry(argv[1:]))


def _service_entry(service: str, entry: str) -> Any:
    """``module:attribute`` inside a registered service's package, imported on demand."""
    from rulesage import mesh

    return mesh.load_entry(f"{mesh.get(service).module}.{entry}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rulesage", description="RuleSage: rulings that quote the book.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("up", help="start Postgres, the services and the gateway")
    s.add_argument("--detach", action="store_true", help="return once everything is SERVING")
    s.set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop everything started by `up`").set_defaults(func=cmd_down)
    s = sub.add_parser("status", help="each service's address and health, and the gateway's URL")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)
    sub.add_parser("migrate", help="apply pending database migrations").set_defaults(func=cmd_migrate)

    s = sub.add_parser("ingest", help="ingest a shelf manifest (shelf.toml)")
    s.add_argument("--shelf", required=True)
    s.add_argument("--game", action="append", help="only this game (repeatable)")
    s.add_argument(
        "--categories",
        metavar="DIR",
        help="category maps as DIR/<game slug>.toml, for games the manifest names no map for",
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("ask", help="ask a rules question from the command line")
    s.add_argument("--game", required=True)
    s.add_argument("question")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("eval", help="measure retrieval and rulings on gold questions (or BEIR SciFact)")
    s.add_argument("--shelf")
    s.add_argument("--gold")
    s.add_argument("--beir", help="a BEIR dataset folder (corpus.jsonl.gz, queries.jsonl, qrels/test.tsv)")
    s.add_argument("--no-answer", action="store_true", help="retrieval only: skip the answering stage")
    s.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all)")
    s.add_argument("--game", action="append", help="only this game's questions and books (repeatable)")
    s.add_argument(
        "--report",
        metavar="DIR",
        help="also write an HTML report to DIR (index.html, plots, a page per question, and rows.jsonl: every"
        " question's row for offline measures); its path on stderr",
    )
    s.add_argument(
        "--record",
        metavar="CONDITION",
        help="store the figures under CONDITION in rulesage/eval/figures.json, with this command",
    )
    s.add_argument(
        "--record-set", metavar="NAME", help="the set's name there (default: the gold file's stem)"
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_eval)

    s = sub.add_parser(
        "gate", help="the evaluation gate: part of the shelf, the real mesh, both gold sets, against floors"
    )
    s.add_argument("--json", action="store_true")
    s.add_argument("--record", action="store_true", help="store its figures as the gate's condition")
    s.set_defaults(func=cmd_gate)

    s = sub.add_parser(
        "figures",
        help="rewrite the README's, the cards' and the gate's figures from rulesage/eval/figures.json",
    )
    s.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each stale file")
    s.set_defaults(func=cmd_figures)

    s = sub.add_parser("bench", help="latency of the search road and the answer over the gold questions")
    s.add_argument("--shelf", required=True)
    s.add_argument("--gold", required=True)
    s.add_argument("--rounds", type=int, default=1)
    s.add_argument("--no-answer", action="store_true", help="time the search road only, not the answer")
    s.add_argument(
        "--no-previous",
        action="store_true",
        help="do not time the previous configuration beside (rulesage.eval.runs.PREVIOUS_CONFIG)",
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_bench)

    s = sub.add_parser("doorman-exam", help="the doorman sits its exam: a table per class and five gates")
    s.add_argument("--exam", help="a labelled exam (.jsonl); default data/doorman/exam.jsonl")
    s.add_argument("--json", action="store_true", help="print only the JSON report")
    s.add_argument(
        "--write-report",
        nargs="?",
        const="-",
        metavar="PATH",
        help="also store the report (default rulesage/doorman_exam_report.json, shown on /about/doorman)",
    )
    s.set_defaults(func=cmd_doorman_exam)

    s = sub.add_parser("serve", help="run one service in the foreground (what each container runs)")
    s.add_argument("name", choices=_servable())
    s.set_defaults(func=cmd_serve)

    sub.add_parser(
        "train", help="train a model: rulesage train MODEL (`rulesage train` lists them)", add_help=False
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:
        return cmd_train(argv[1:])
    ns = build_parser().parse_args(argv)
    ns.argv = argv  # the command as typed, for what a report says produced it
    from rulesage.config import ConfigError
    from rulesage.db import DatabaseError

    try:
        return int(ns.func(ns))
    except (ConfigError, DatabaseError) as exc:
        print(f"rulesage {ns.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
