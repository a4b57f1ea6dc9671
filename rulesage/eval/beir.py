"""BEIR (SciFact) through the real mesh: `rulesage eval --beir DIR`.

The corpus is stored by the real ingest code (rulesage.ingest.store.write_document) as its own family and game
``beir-scifact``: one ``reference`` document, one section and one passage per abstract. A passage's heading
path is its title and its text the abstract, so the stored tsvector is ``title || ' ' || text`` (what
pyserini's flat index searches) and its vector is drawn from ``title\\ntext`` (store.embed_text). The passage
``ord`` is the abstract's line in the corpus file, which maps passage ids back to corpus ``_id``s.

Each test query is then asked of the running lexical and dense services over gRPC (dense: Embedder.Embed,
then Arm.Search with the vectors), and nDCG@10 and recall@100 are computed per arm and for their RRF fusion.
"""

from __future__ import annotations

import csv
import gzip
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from rulesage import db
from rulesage.arms import ArmClient
from rulesage.core import rrf
from rulesage.core.metrics import ndcg_at_10, pct, recall_at
from rulesage.core.models import StageState
from rulesage.ingest import store
from rulesage.ingest.model import ParsedDocument, PassageDraft, SectionDraft
from rulesage.ingest.shelf import DocumentEntry, GameEntry

FAMILY = "beir-scifact"
GAME = GameEntry(slug="beir-scifact", name="BEIR SciFact (evaluation only)", family=FAMILY)
DOC_KEY = "beir-scifact-corpus"
LICENCE = "CC BY-NC 2.0 (AllenAI SciFact; abstracts from S2ORC): evaluation use only"
EMBED_BATCH = 256  # passages per embedder call; each batch is committed (an interrupted load resumes)
LIMIT = 100  # hits asked of each arm (both allow up to 200)
PUBLISHED = {"lucene_bm25_flat": 0.6789, "pyserini_hybrid_rrf": 0.742}
RPC_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 30.0


class BeirError(RuntimeError):
    """The dataset folder or the database is not fit for the evaluation; the message says why."""


# -- the dataset files (pure) -----------------------------------------------------------------------
@dataclass(frozen=True)
class Abstract:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    id: str
    text: str


def corpus_file(folder: Path) -> Path:
    for name in ("corpus.jsonl.gz", "corpus.jsonl"):
        if (folder / name).exists():
            return folder / name
    raise BeirError(f"{folder}: no corpus.jsonl.gz or corpus.jsonl")


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        yield from (line for line in f if line.strip())


def read_corpus(path: Path) -> list[Abstract]:
    out = [
        Abstract(str(d["_id"]), (d.get("title") or "").strip(), (d.get("text") or "").strip())
        for d in map(json.loads, _lines(path))
    ]
    if len({a.id for a in out}) != len(out):
        raise BeirError(f"{path}: duplicate _id")
    return out


def parse_qrels(lines: Sequence[str]) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (``query-id corpus-id score``, a header line) -> {qid: {docid: rel}}; rel 0 rows are
    kept (they are judged non-relevant, which nDCG treats as gain 0)."""
    qrels: dict[str, dict[str, int]] = {}
    for i, row in enumerate(csv.reader(lines, delimiter="\t")):
        if not row or not "".join(row).strip():
            continue
        if i == 0 and not row[-1].strip().lstrip("-").isdigit():
            continue  # header
        if len(row) != 3:
            raise BeirError(f"qrels line {i + 1}: expected 3 tab-separated fields, got {row!r}")
        qid, docid, score = (c.strip() for c in row)
        qrels.setdefault(qid, {})[docid] = int(score)
    return qrels


def load_queries(folder: Path, split: str = "test") -> tuple[list[Query], dict[str, dict[str, int]]]:
    """The queries judged in ``qrels/<split>.tsv`` (in queries.jsonl order) and their qrels."""
    qrels_path = folder / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        raise BeirError(f"{folder}: no qrels/{split}.tsv")
    qrels = parse_qrels(qrels_path.read_text(encoding="utf-8").splitlines())
    queries = [
        Query(str(d["_id"]), d["text"])
        for d in map(json.loads, _lines(folder / "queries.jsonl"))
        if str(d["_id"]) in qrels
    ]
    missing = set(qrels) - {q.id for q in queries}
    if missing:
        raise BeirError(f"{len(missing)} judged queries are missing from queries.jsonl, e.g. {min(missing)}")
    return queries, qrels


# -- metrics (pure) ----------------------------------------------------------------------------------
def fuse_ranked(lists: Mapping[str, Sequence[int]], k: int = rrf.K, limit: int = LIMIT) -> list[int]:
    return [f.passage_id for f in rrf.fuse(lists, k=k, limit=limit)]


def mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


# -- loading the corpus -------------------------------------------------------------------------------
@dataclass
class LoadedCorpus:
    game: str
    family_id: int
    document_id: int
    doc_ids: dict[int, str]  # passage id -> corpus _id
    loaded: bool  # stored in this run (False: found already there)
    embedded: int  # vectors drawn in this run
    seconds: float

    @property
    def size(self) -> int:
        return len(self.doc_ids)


def parsed_corpus(abstracts: Sequence[Abstract]) -> ParsedDocument:
    sections = []
    for a in abstracts:
        head = (a.title,) if a.title else ()
        body = a.text or a.title
        sections.append(SectionDraft(head, body, None, None, [PassageDraft(body, head, None, None)]))
    return ParsedDocument(pages=[], sections=sections)


def _space(conn: psycopg.Connection, identity: Any) -> int:
    """The active embedding space, which must be the embedder's (never re-embed the shelf from here)."""
    active = store.active_space(conn)
    if active is None:
        return store.activate_space(conn, identity)
    if active[1] != identity.model:
        raise BeirError(
            f"the active embedding space is {active[1]!r}, not {identity.model!r}: run `rulesage ingest`"
            " first so the shelf is re-embedded with the configured model"
        )
    return active[0]


def load_corpus(url: str, folder: Path, embedder: Any = None) -> LoadedCorpus:
    """Store the corpus (skipped when the same file is already stored and embedded) and map passages back."""
    t0 = time.perf_counter()
    path = corpus_file(Path(folder)).resolve()
    sha = store.sha256_file(path)
    abstracts = read_corpus(path)
    entry = DocumentEntry(
        key=DOC_KEY,
        title="BEIR SciFact corpus",
        kind="reference",
        path=path,
        family=FAMILY,
        game=GAME.slug,
        licence=LICENCE,
    )
    loaded = False
    with db.connect(url, autocommit=True) as conn:  # explicit transactions: the write, then each batch
        stored = store.stored_document(conn, DOC_KEY)
        with conn.transaction():
            family_id = store.upsert_family(conn, FAMILY)
            store.mark_retrieval_only(conn, family_id)  # `eval --beir` never reranks or answers
            game_id = store.upsert_game(conn, GAME, family_id)
            if stored is None or stored.sha256 != sha:
                result = store.write_document(conn, entry, parsed_corpus(abstracts), sha, family_id, game_id)
                document_id, loaded = result.document_id, True
            else:
                document_id = stored.id
        embedded = _embed_missing(conn, document_id, embedder)
        rows = conn.execute(
            "SELECT id, ord FROM current_passages WHERE document_id = %s", (document_id,)
        ).fetchall()
    if len(rows) != len(abstracts) or any(not 0 <= r[1] < len(abstracts) for r in rows):
        raise BeirError(f"{DOC_KEY}: {len(rows)} live passages for {len(abstracts)} abstracts")
    doc_ids = {int(pid): abstracts[o].id for pid, o in rows}
    return LoadedCorpus(
        GAME.slug, family_id, document_id, doc_ids, loaded, embedded, time.perf_counter() - t0
    )


def _embed_missing(conn: psycopg.Connection, document_id: int, embedder: Any) -> int:
    todo = None
    done = 0
    while True:
        with conn.transaction():
            if embedder is None:
                from rulesage.embed import bulk_embedder

                embedder = bulk_embedder()
            space_id = _space(conn, embedder.identity)
            if todo is None:
                todo = store.passages_to_embed(conn, space_id, document_id)
            batch, todo = todo[:EMBED_BATCH], todo[EMBED_BATCH:]
            if not batch:
                return done
            vectors = embedder.embed_passages([store.embed_text(tuple(r[1]), r[2]) for r in batch])
            store.store_vectors(conn, space_id, [int(r[0]) for r in batch], vectors)
            done += len(batch)


# -- asking the arms -----------------------------------------------------------------------------------
@dataclass
class Answer:
    lexical: list[str]
    dense: list[str]
    fused: list[str]
    lexical_ms: float
    embed_ms: float
    dense_search_ms: float


async def ask(
    arms: ArmClient, game: str, question: str, doc_ids: Mapping[int, str], limit: int = LIMIT
) -> Answer:
    """Both arms through the mesh's own fan-out; the lexical and the plain dense list, fused by RRF."""
    fan = await arms.fan_out(question, game, time.monotonic() + RPC_TIMEOUT_S, limit=limit)
    failed = [f"{o.arm}: {o.detail}" for o in fan.outcomes if o.state is not StageState.OK]
    if failed:
        raise BeirError("an arm did not answer: " + "; ".join(failed))
    lists = fan.lists()
    by_arm = {o.arm: o for o in fan.outcomes}
    lex_ids = lists.get("lexical", [])
    den_ids = lists.get("dense", [])
    fused = fuse_ranked({"lexical": lex_ids, "dense": den_ids}, limit=limit)

    def names(ids: Sequence[int]) -> list[str]:
        return [doc_ids[i] for i in ids if i in doc_ids]

    return Answer(
        names(lex_ids),
        names(den_ids),
        names(fused),
        by_arm["lexical"].ms,
        fan.embed_ms,
        by_arm["dense"].ms - fan.embed_ms,
    )


def score(answers: Mapping[str, Answer], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    arms = ("lexical", "dense", "fused")
    ndcg = {
        a: mean([ndcg_at_10(getattr(ans, a), dict(qrels[q])) for q, ans in answers.items()]) for a in arms
    }
    recall = {
        a: mean([recall_at(getattr(ans, a), qrels[q], LIMIT) for q, ans in answers.items()]) for a in arms
    }
    return {
        "ndcg_at_10": ndcg,
        "recall_at_100": recall,
        "published": dict(PUBLISHED),
        "lexical_gap_to_lucene": round(ndcg["lexical"] - PUBLISHED["lucene_bm25_flat"], 4),
        "latency_ms": {
            "lexical": pct([a.lexical_ms for a in answers.values()]),
            "dense": pct([a.embed_ms + a.dense_search_ms for a in answers.values()]),
            "dense_embed": pct([a.embed_ms for a in answers.values()]),
            "dense_search": pct([a.dense_search_ms for a in answers.values()]),
        },
    }


async def evaluate(
    url: str, queries: Sequence[Query], qrels: Mapping[str, Mapping[str, int]], loaded: LoadedCorpus
) -> dict[str, Any]:
    """Ask every query of the running lexical and dense services (one at a time, so latencies are clean)."""
    del url  # the services read the database themselves
    arms = ArmClient(("lexical", "dense"))
    try:
        try:
            await arms.ready(CONNECT_TIMEOUT_S)
        except TimeoutError as exc:
            raise BeirError(f"{exc}: is the mesh up (`rulesage up --detach`)?") from exc
        answers: dict[str, Answer] = {}
        t0 = time.perf_counter()
        for q in queries:
            answers[q.id] = await ask(arms, loaded.game, q.text, loaded.doc_ids)
        wall = time.perf_counter() - t0
    finally:
        await arms.close()
    return {
        **score(answers, qrels),
        "limit": LIMIT,
        "rrf_k": rrf.K,
        "eval_seconds": round(wall, 1),
        "load": {
            "stored_now": loaded.loaded,
            "embedded_now": loaded.embedded,
            "seconds": round(loaded.seconds, 1),
        },
    }
