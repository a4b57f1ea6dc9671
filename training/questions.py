"""Training groups for the reranker: a question, its positive passage and hard negatives.

Sources:
- ``questions``: player-style questions (data/questions/questions-*.jsonl: game, doc, page, quote or rule,
  question, source). Each row's ``source`` is its provenance: ``written`` (by hand, from the books) or the URL
  of the public Q&A post it was taken from. Positive = the live passage of that document that holds the quote
  (rulesage.core.text.supports, page span preferred), or for a numbered rulebook whose words may not be
  copied (the MTG Comprehensive Rules), the rule row that prints the named rule. Rows marked
  ``answerable: false`` (the book is silent) are not relevance pairs and are skipped here.
- ``pseudo``: structure pseudo-queries: a passage's nearest heading as the query, that passage as the
  positive (alone they taught a heading matcher, docs/RERANKER-NOTES; they are off unless asked for).

Hard negatives: the stand-in election's top candidates (Postgres full-text + dense cosine over the same
family, RRF) that do not hold the quote. The guard reads every file of the shared evaluation folder and drops
a row whose text is an evaluation question, whose quote overlaps an evaluation quote, whose rule is an
evaluation rule, or whose source is an evaluation source; it refuses to run when that folder is missing.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import json
import logging
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from rulesage.config import shared_dir
from rulesage.core.text import normalise, supports
from training.pool import FamilyIndex

log = logging.getLogger(__name__)
EVAL_DIR = shared_dir() / "eval"
GOLD = EVAL_DIR / "gold-dev.jsonl"


def is_public_post(provenance: str) -> bool:
    """A real player's public post (its provenance a URL), not a written question."""
    return provenance != "written"


@dataclass(frozen=True)
class Question:
    game: str
    doc: str
    page: int | None
    quote: str
    question: str
    source: str  # 'questions' | 'pseudo'
    rule: str = ""  # instead of a quote: the numbered rule that decides it (MTG)
    provenance: str = "written"  # 'written', or the URL of the public post the question came from
    answerable: bool = True  # False: on topic, but the book does not answer it (no quote, no rule)

    @property
    def public_post(self) -> bool:
        return is_public_post(self.provenance)


@dataclass
class Group:
    question: str
    family_id: int
    positive: int  # position in the family index
    negatives: list[int]
    source: str
    split: str  # 'train' | 'val'
    supporters: set[int] = field(default_factory=set)
    pool: list[int] = field(default_factory=list)  # the stand-in election's top candidates, best first
    public: bool = False  # a real player's post (a URL source) rather than a written question


def load_questions(pattern: str, silent: bool = False) -> list[Question]:
    """The training questions with the quote or rule that answers them; with ``silent``, also the ones the
    book does not answer (``answerable`` False)."""
    out = []
    for path in sorted(glob.glob(pattern)):
        for line in Path(path).read_text().splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            if not (d.get("question") and d.get("doc")):
                continue
            if d.get("answerable") is False:
                if silent:
                    out.append(
                        Question(
                            d["game"],
                            d["doc"],
                            d.get("page"),
                            "",
                            d["question"],
                            "questions",
                            provenance=d.get("source") or "written",
                            answerable=False,
                        )
                    )
                continue
            if d.get("quote") or d.get("rule"):
                out.append(
                    Question(
                        d["game"],
                        d["doc"],
                        d.get("page"),
                        d.get("quote") or "",
                        d["question"],
                        "questions",
                        rule=d.get("rule") or "",
                        provenance=d.get("source") or "written",
                    )
                )
    return out


def rule_row(rule: str) -> str:
    """The numbered rule a sub-rule belongs to: "702.19b" -> "702.19" (the searchable row that prints it)."""
    return rule.rstrip(".").rstrip("abcdefghijklmnopqrstuvwxyz")


class MissingEvaluation(RuntimeError):
    """The shared evaluation folder is not where the guard looks: training would not know what to avoid."""


@dataclass
class Guard:
    questions: set[str]
    quotes: list[str]
    rules: set[str]
    sources: set[str]
    # The evaluation's reserved questions (eval/reserved.py's ``touches``: hashed, never shown): a row
    # sharing a run of 8 words with one, or a post from the same thread, is theirs.
    reserved: Callable[[dict[str, Any]], bool] | None = None

    def touches(self, q: Question) -> bool:
        if normalise(q.question) in self.questions or (
            q.provenance != "written" and q.provenance in self.sources
        ):
            return True
        if self.reserved is not None and self.reserved({"question": q.question, "source": q.provenance}):
            return True
        if q.rule:
            return q.rule in self.rules or rule_row(q.rule) in self.rules
        mine = normalise(q.quote)
        if not mine:  # a silent-book row has no quote to overlap
            return False
        return any(
            g in mine or mine in g or supports(q.quote, g) or supports(g, q.quote) for g in self.quotes
        )


def reserved_check(folder: Path = EVAL_DIR) -> Callable[[dict[str, Any]], bool]:
    """The evaluation folder's own check for its reserved questions (``reserved.py``: ``touches(row)``)."""
    path = folder / "reserved.py"
    spec = importlib.util.spec_from_file_location("rulesage_eval_reserved", path) if path.is_file() else None
    if spec is None or spec.loader is None:
        raise MissingEvaluation(
            f"no {path}: the check for the evaluation's reserved questions cannot run, so training will not"
        )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    check: Callable[[dict[str, Any]], bool] = module.touches
    return check


def eval_guard(folder: Path = EVAL_DIR) -> Guard:
    """Every question, evidence quote, rule and source of every .jsonl file under the evaluation folder, and
    its reserved questions (``reserved.py``): training refuses to run without either."""
    files = sorted(folder.rglob("*.jsonl")) if folder.is_dir() else []
    if not files:
        raise MissingEvaluation(
            f"no evaluation files under {folder}: the guard that keeps them out of training cannot run"
            " (set RULESAGE_SHARED to the folder holding eval/)"
        )
    guard = Guard(set(), [], set(), set(), reserved_check(folder))
    for path in files:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            text = d.get("question") or d.get("text")
            if isinstance(text, str):
                guard.questions.add(normalise(text))
            if isinstance(d.get("source"), str):
                guard.sources.add(d["source"])
            for e in d.get("evidence") or []:
                if e.get("quote"):
                    guard.quotes.append(normalise(e["quote"]))
                if e.get("rule"):
                    rule = str(e["rule"])
                    guard.rules.update({rule, rule_row(rule)})
    return guard


def space_embedder(conn: psycopg.Connection) -> Any:
    """The embedder of the active space's vectors: the stand-in election compares the question with them."""
    from rulesage.embed import embedder_for, shared_embedder
    from rulesage.ingest.store import active_space

    space = active_space(conn)
    return embedder_for(space[1]) if space else shared_embedder()


# The share of the questions every trainer holds out (each recipe's default): one split, so a question held
# out by one model is held out by all, and `rulesage train held-out` can measure on them.
VAL_SHARE = 0.1


def split_of(q: Question, val_share: float = VAL_SHARE) -> str:
    """Held-out by quote (questions on one quote never straddle the split), stable across runs."""
    h = int(hashlib.sha256(f"{q.doc}|{normalise(q.quote or q.rule)}".encode()).hexdigest()[:8], 16)
    return "val" if h / 0xFFFFFFFF < val_share else "train"


def family_ids(conn: psycopg.Connection) -> dict[str, int]:
    """Game slug -> family id, plus family slug -> family id (family-level documents' rows)."""
    out = {r[0]: int(r[1]) for r in conn.execute("SELECT slug, id FROM families").fetchall()}
    out.update({r[0]: int(r[1]) for r in conn.execute("SELECT slug, family_id FROM games").fetchall()})
    return out


def positive_of(index: FamilyIndex, q: Question) -> tuple[int | None, set[int]]:
    if q.rule:  # the rule row prints the rule and its lettered sub-rules
        wanted = (q.rule.rstrip("."), rule_row(q.rule))
        rows = [i for i, p in enumerate(index.passages) if p.doc_key == q.doc and p.rule_id in wanted]
        return (rows[0] if rows else None), set(rows)
    supporters = {i for i, p in enumerate(index.passages) if p.doc_key == q.doc and supports(p.text, q.quote)}
    if not supporters:
        return None, supporters
    on_page = [
        i
        for i in sorted(supporters)
        if q.page and index.passages[i].page_start <= q.page <= index.passages[i].page_end
    ]
    return (on_page or sorted(supporters))[0], supporters


_HEADING_NOISE = re.compile(r"^[\W\d_]+|[\W_]+$")


def pseudo_queries(index: FamilyIndex, n: int, rng: random.Random) -> list[tuple[str, int]]:
    """(heading, passage) pairs: the first passage under each distinct heading, headings of 2-8 words."""
    seen: dict[tuple[str, str], int] = {}
    for i, p in enumerate(index.passages):
        if not p.heading_path:
            continue
        head = _HEADING_NOISE.sub("", p.heading_path[-1]).strip()
        if 2 <= len(head.split()) <= 8:
            seen.setdefault((p.doc_key, head.lower()), i)
    pairs = [(head, i) for (_, head), i in seen.items()]
    rng.shuffle(pairs)
    return pairs[:n]


def answered(
    conn: psycopg.Connection,
    questions: Iterable[Question],
    counts: Counter[str],
    indexes: dict[int, FamilyIndex],
) -> list[tuple[Question, int, int, set[int]]]:
    """Each question the evaluation guard lets through with its family, the position of the passage that
    answers it and every position that holds its quote or rule (``positive_of``); each outcome is counted
    in ``counts``. ``indexes`` (family id -> index) is read, and filled with the families it lacks."""
    fams = family_ids(conn)
    guard = eval_guard()  # refuses to run without the evaluation folder
    out: list[tuple[Question, int, int, set[int]]] = []
    for q in questions:
        fam = fams.get(q.game)
        if fam is None:
            counts["no-family-in-db"] += 1
            continue
        if guard.touches(q):
            counts["dropped-eval-overlap"] += 1
            continue
        if fam not in indexes:
            indexes[fam] = FamilyIndex(conn, fam)
        pos, supporters = positive_of(indexes[fam], q)
        if pos is None:
            counts["no-passage-holds-quote"] += 1
            continue
        counts["provenance-" + ("public-qa" if q.public_post else "written")] += 1
        out.append((q, fam, pos, supporters))
    return out


def build_groups(
    conn: psycopg.Connection,
    questions: Iterable[Question],
    negatives: int,
    pseudo: int,
    seed: int,
    val_share: float = VAL_SHARE,
    pool_depth: int = 40,
    pools: Mapping[tuple[str, str], Sequence[int]] | None = None,
) -> tuple[list[Group], Counter[str], dict[int, FamilyIndex]]:
    """Groups of (question, positive, hard negatives). Returns the groups, counts per outcome, the indexes.

    ``pools``: (game, question) -> passage ids best first, the served election's candidates
    (``training.reranker.pools``). With them a group's pool and negatives are the served candidates, its
    positive the best-placed candidate that holds the quote (the stand-in's first holder when none does),
    and a question without a pool is left out; pseudo-queries have no served pool and are left out too."""
    rng = random.Random(seed)
    counts: Counter[str] = Counter()
    indexes: dict[int, FamilyIndex] = {}
    todo = answered(conn, questions, counts, indexes)
    if pseudo and pools is None:
        per_family = max(pseudo // max(len(indexes), 1), 1)
        for fam, index in sorted(indexes.items()):
            for head, i in pseudo_queries(index, per_family, rng):
                q = Question("", index.passages[i].doc_key, None, "", head, "pseudo")
                todo.append((q, fam, i, {i}))
    if pools is not None:
        served: list[list[int]] = []  # beside the questions kept, in order
        kept: list[tuple[Question, int, int, set[int]]] = []
        for item in todo:
            q, fam, _, _ = item
            ids = pools.get((q.game, q.question))
            if ids is None:
                counts["no-served-pool"] += 1
                continue
            position = indexes[fam].position
            served.append([position[i] for i in ids[:pool_depth] if i in position])
            kept.append(item)
        todo = kept
    vecs: Any = (
        space_embedder(conn).embed_queries([q.question for q, _, _, _ in todo])
        if todo and pools is None
        else [None] * len(todo)
    )
    groups = []
    for n, ((q, fam, pos, supporters), vec) in enumerate(zip(todo, vecs, strict=True)):
        if pools is None:
            fused = indexes[fam].fused(conn, q.question, vec, k=pool_depth)
        else:
            fused = served[n]
            pos = next((i for i in fused if i in supporters), pos)
            counts["positive-in-served-pool" if pos in fused else "positive-outside-served-pool"] += 1
        # Hard negatives: the election's top candidates that do not hold the quote, best first.
        chosen = [i for i in fused if i not in supporters][:negatives]
        if len(chosen) < min(negatives, 4):
            counts["too-few-negatives"] += 1
            continue
        split = split_of(q, val_share) if q.source == "questions" else "train"
        groups.append(Group(q.question, fam, pos, chosen, q.source, split, supporters, fused, q.public_post))
        counts[f"{q.source}-{split}"] += 1
    return groups, counts, indexes
