"""Extraction fidelity: does some passage of the right document hold each gold evidence quote, on its page?

usage: .venv/bin/python bench/extraction_fidelity.py [--shared ../shared] [--docs KEY,KEY] [--misses N]

Parses the shelf's documents with rulesage.ingest.parse.parse_document (the latest release of each key),
then for every evidence item of eval/gold-dev.jsonl checks rulesage.core.text.supports on the passages of that
document whose page span holds the evidence page (pages null: any passage; MTG items with `rule`: a passage
of that rule, its rule row or its leaf row). Gold is read only to measure. Prints coverage, the misses with
the nearest passage, passage/word statistics and the share of passages that fit one 256-token window.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from rulesage.config import shared_dir
from rulesage.core.text import normalise, supports
from rulesage.ingest.model import ParsedDocument, PassageDraft
from rulesage.ingest.parse import parse_document


def shelf_documents(shared: Path) -> dict[str, tuple[Path, str]]:
    """key -> (path, kind); a later `version` of a key replaces the earlier one."""
    shelf_path = shared / "corpus" / "shelf.toml"
    shelf = tomllib.loads(shelf_path.read_text())
    docs: dict[str, tuple[Path, str, str]] = {}
    for d in shelf["document"]:
        version = str(d.get("version", ""))
        if d["key"] not in docs or version >= docs[d["key"]][2]:
            docs[d["key"]] = (shelf_path.parent / d["path"], d["kind"], version)
    return {k: (p, kind) for k, (p, kind, _) in docs.items()}


def rule_matches(passage: PassageDraft, rule: str) -> bool:
    if passage.rule_id is None:
        return False
    return passage.rule_id == rule or (
        rule.startswith(passage.rule_id) and not rule[len(passage.rule_id) :].isdigit()
    )


def candidates(doc: ParsedDocument, ev: dict) -> list[PassageDraft]:
    page, rule = ev.get("page"), ev.get("rule")
    out = []
    for p in doc.passages:
        if rule and not rule_matches(p, rule):
            continue
        if page is not None and not (
            p.page_start is not None and p.page_end is not None and p.page_start <= page <= p.page_end
        ):
            continue
        out.append(p)
    return out


def nearest(doc: ParsedDocument, quote: str) -> PassageDraft | None:
    words = set(normalise(quote).split())
    best, score = None, -1.0
    for p in doc.passages:
        have = set(normalise(p.text).split())
        s = len(words & have) / max(len(words), 1)
        if s > score:
            best, score = p, s
    return best


def token_counter():  # type: ignore[no-untyped-def]
    """The embedder's own word-piece count (same tokenizer.json as shared_embedder().token_count) without
    building the ONNX model when it is not there yet."""
    from rulesage.config import state_dir

    if list((state_dir() / "models").glob("minilm-l6-v2-*.onnx")):
        from rulesage.embed import shared_embedder

        return shared_embedder().token_count
    from tokenizers import Tokenizer

    from rulesage.embed import package_model_dir

    tok = Tokenizer.from_file(str(package_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, default=shared_dir())
    ap.add_argument("--docs", default="", help="only these keys (comma-separated)")
    ap.add_argument("--misses", type=int, default=50, help="print at most this many misses")
    ap.add_argument("--no-tokens", action="store_true", help="skip the token-window statistics")
    args = ap.parse_args()

    docs = shelf_documents(args.shared)
    gold = [
        json.loads(line)
        for line in (args.shared / "eval" / "gold-dev.jsonl").read_text().splitlines()
        if line
    ]
    only = set(filter(None, args.docs.split(",")))
    parsed: dict[str, ParsedDocument] = {}
    timing: dict[str, float] = {}
    for key, (path, kind) in sorted(docs.items()):
        if only and key not in only:
            continue
        t0 = time.perf_counter()
        parsed[key] = parse_document(path, key=key, kind=kind)
        timing[key] = time.perf_counter() - t0

    total = found = 0
    misses = []
    per_doc: Counter[str] = Counter()
    per_doc_found: Counter[str] = Counter()
    for q in gold:
        for ev in q["evidence"]:
            if ev["doc"] not in parsed:
                continue
            total += 1
            per_doc[ev["doc"]] += 1
            doc = parsed[ev["doc"]]
            if any(supports(p.text, ev["quote"]) for p in candidates(doc, ev)):
                found += 1
                per_doc_found[ev["doc"]] += 1
            else:
                misses.append((q["id"], ev, nearest(doc, ev["quote"])))

    print(f"extraction fidelity: {found}/{total} = {found / max(total, 1):.2%} of evidence quotes found")
    for key in sorted(per_doc):
        print(f"  {key:40s} {per_doc_found[key]:3d}/{per_doc[key]:3d}")
    for qid, ev, near in misses[: args.misses]:
        where = ev.get("rule") or ev.get("page")
        print(f"MISS {qid} {ev['doc']} @{where}: {ev['quote'][:80]!r}")
        if near is not None:
            span = f"p{near.page_start}-{near.page_end}" if near.page_start else (near.rule_id or "")
            flat = re.sub(r"\s+", " ", near.text)[:300]
            print(f"     nearest [{span} {near.kind} {' > '.join(near.heading_path)[:60]}]: {flat!r}")

    passages = [p for d in parsed.values() for p in d.passages if p.searchable]
    words = [len(p.text.split()) for p in passages]
    kinds = Counter(p.kind for d in parsed.values() for p in d.passages)
    print(
        f"\ndocuments {len(parsed)}, sections {sum(len(d.sections) for d in parsed.values())}, passages "
        f"{sum(len(d.passages) for d in parsed.values())} ({dict(kinds)}), searchable {len(passages)}"
    )
    if words:
        q = statistics.quantiles(words, n=20)
        print(
            f"searchable passage words: mean {statistics.mean(words):.0f}, "
            f"median {statistics.median(words):.0f}, p5 {q[0]:.0f}, p95 {q[-1]:.0f}, max {max(words)}"
        )
    ocr = [(k, p.number) for k, d in parsed.items() for p in d.pages if p.method == "pdf-ocr"]
    print(f"pages OCR'd: {ocr if ocr else 'none'}")
    slow = sorted(timing.items(), key=lambda kv: -kv[1])[:4]
    print("slowest parses: " + ", ".join(f"{k} {t:.1f}s" for k, t in slow))
    if not args.no_tokens and passages:
        count = token_counter()
        tokens = [count(p.text) for p in passages]
        fit = sum(1 for t in tokens if t <= 254)  # 256 minus [CLS] and [SEP]
        print(
            f"passages within one 256-token window: {fit}/{len(tokens)} = {fit / len(tokens):.1%} "
            f"(tokens median {statistics.median(tokens):.0f}, max {max(tokens)})"
        )
    return 0 if found >= 0.99 * total else 1


if __name__ == "__main__":
    sys.exit(main())
