"""BEIR loading and evaluation on a 50-abstract slice of SciFact in a throwaway database, with the real
lexical and dense services started in-process on free ports."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rulesage import runner
from rulesage.config import shared_dir
from rulesage.db import connect
from rulesage.eval import beir
from services.dense.server import DenseService
from services.lexical.server import LexicalService
from tests.support.throwaway_db import throwaway_database

pytestmark = pytest.mark.integration
SCIFACT = shared_dir() / "eval" / "scifact"
N = 50


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database("beir_test_") as url:
        yield url


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 50 abstracts; three queries, each the title of one of them."""
    if not (SCIFACT / "corpus.jsonl.gz").exists():
        pytest.skip("shared SciFact data not present")
    out = tmp_path_factory.mktemp("scifact50")
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in itertools.islice(f, N)]
    with gzip.open(out / "corpus.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    picks = [rows[3], rows[17], rows[41]]
    (out / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": r["title"]}) + "\n" for i, r in enumerate(picks))
    )
    (out / "qrels").mkdir()
    (out / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\t{r['_id']}\t1\n" for i, r in enumerate(picks))
    )
    return out


@pytest.fixture(scope="module")
def loaded(url: str, folder: Path) -> beir.LoadedCorpus:
    return beir.load_corpus(url, folder)


def test_load_stores_what_the_real_ingest_stores(url: str, folder: Path, loaded: beir.LoadedCorpus) -> None:
    assert loaded.size == N and loaded.loaded and loaded.embedded == N
    with connect(url) as conn:
        game = conn.execute(
            "SELECT g.name, f.slug FROM games g JOIN families f ON f.id = g.family_id WHERE g.slug = %s",
            (beir.GAME.slug,),
        ).fetchone()
        assert game == ("BEIR SciFact (evaluation only)", "beir-scifact")
        doc = conn.execute(
            "SELECT kind, path, sha256 FROM documents WHERE key = 'beir-scifact-corpus'"
        ).fetchone()
        assert doc is not None
        assert doc[0] == "reference" and doc[1] == str((folder / "corpus.jsonl.gz").resolve())
        assert doc[2] == beir.store.sha256_file(folder / "corpus.jsonl.gz")
        bad = conn.execute(
            "SELECT count(*) FROM passages p WHERE p.document_id = %s AND (p.embedding IS NULL"
            " OR p.doc_len <> (SELECT sum(tf) FROM postings po WHERE po.passage_id = p.id)"
            " OR p.tsv <> to_tsvector('english', p.heading_path[1] || ' ' || p.text))",
            (loaded.document_id,),
        ).fetchone()
        assert bad == (0,)
        # the road never reranks or answers a BEIR corpus: ingest draws no reader or answer rows for it
        ruled = conn.execute(
            "SELECT f.ruled, (SELECT count(*) FROM ruled_passages r WHERE r.family_id = f.id)"
            " FROM families f WHERE f.slug = 'beir-scifact'"
        ).fetchone()
        assert ruled == (False, 0)
    from services.answer import sentence_index

    assert sentence_index.draw_missing(url) == 0
    # a second load finds the same file stored and embedded: nothing is written or embedded again
    again = beir.load_corpus(url, folder)
    assert (again.loaded, again.embedded, again.document_id) == (False, 0, loaded.document_id)
    assert again.doc_ids == loaded.doc_ids
    # an interrupted load (vectors missing) resumes: only the missing vectors are drawn
    with connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE passages SET embedding = NULL WHERE document_id = %s AND ord < 5", (loaded.document_id,)
        )
    resumed = beir.load_corpus(url, folder)
    assert (resumed.loaded, resumed.embedded) == (False, 5)


async def _with_arms(url: str, monkeypatch: pytest.MonkeyPatch, work):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("DATABASE_URL", url)
    lexical = await runner.start(LexicalService(), "127.0.0.1", 0)
    dense = await runner.start(DenseService(), "127.0.0.1", 0)
    monkeypatch.setenv("RULESAGE_LEXICAL_ADDR", f"127.0.0.1:{lexical.port}")
    monkeypatch.setenv("RULESAGE_DENSE_ADDR", f"127.0.0.1:{dense.port}")
    try:
        return await work()
    finally:
        await lexical.shutdown(0.5)
        await dense.shutdown(0.5)


def test_lexical_finds_an_abstract_by_its_own_title_words(
    url: str, loaded: beir.LoadedCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rulesage.v1 import arm_pb2, arm_pb2_grpc

    with connect(url) as conn:
        pid, title = conn.execute(
            "SELECT id, heading_path[1] FROM passages WHERE document_id = %s AND ord = 17",
            (loaded.document_id,),
        ).fetchone()

    async def work() -> list[int]:
        async with runner.channel("lexical") as ch:
            # the title's longer words, shuffled: a bag of words, not a phrase
            words = sorted({w.strip(".,:;()") for w in title.split() if len(w) > 5}, key=str.lower)
            res = await arm_pb2_grpc.ArmStub(ch).Search(
                arm_pb2.ArmRequest(question=" ".join(words), game="beir-scifact", limit=5), timeout=10
            )
            return [h.passage_id for h in res.hits]

    hits = asyncio.run(_with_arms(url, monkeypatch, work))
    assert hits and hits[0] == pid


def test_evaluate_through_the_arms(
    url: str, folder: Path, loaded: beir.LoadedCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries, qrels = beir.load_queries(folder)
    report = asyncio.run(_with_arms(url, monkeypatch, lambda: beir.evaluate(url, queries, qrels, loaded)))
    # a title finds its own abstract first, by words and by meaning
    assert report["ndcg_at_10"]["lexical"] == pytest.approx(1.0)
    assert report["ndcg_at_10"]["dense"] >= 0.9
    assert report["ndcg_at_10"]["fused"] >= 0.9
    assert report["recall_at_100"] == {"lexical": 1.0, "dense": 1.0, "fused": 1.0}
    assert report["published"]["lucene_bm25_flat"] == 0.6789
    assert report["latency_ms"]["lexical"]["n"] == 3


def test_evaluate_says_when_the_arms_are_not_reachable(
    loaded: beir.LoadedCorpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULESAGE_LEXICAL_ADDR", "127.0.0.1:1")
    monkeypatch.setenv("RULESAGE_DENSE_ADDR", "127.0.0.1:1")
    monkeypatch.setattr(beir, "CONNECT_TIMEOUT_S", 0.5)
    with pytest.raises(beir.BeirError, match="not reachable"):
        asyncio.run(beir.evaluate("", [beir.Query("q", "x")], {"q": {"d": 1}}, loaded))
