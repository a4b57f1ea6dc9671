"""The pure parts of the BEIR evaluation: qrels and queries files, nDCG@10, recall@100, the fused ranking."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from rulesage.core.metrics import ndcg_at_10
from rulesage.eval import beir


def test_parse_qrels_skips_the_header_and_groups_by_query() -> None:
    lines = [
        "query-id\tcorpus-id\tscore",
        "1\t31715818\t1",
        "3\t14717500\t1",
        "3\t13734012\t1",
        "5\t99\t0",
        "",
    ]
    assert beir.parse_qrels(lines) == {
        "1": {"31715818": 1},
        "3": {"14717500": 1, "13734012": 1},
        "5": {"99": 0},
    }


def test_parse_qrels_without_header_and_with_a_bad_row() -> None:
    assert beir.parse_qrels(["7\td1\t2"]) == {"7": {"d1": 2}}
    with pytest.raises(beir.BeirError, match="line 2"):
        beir.parse_qrels(["q\tc\tscore", "7\td1"])


def test_ndcg_hand_computed() -> None:
    # relevant: a (rel 1), b (rel 1); ranked: x a y b -> DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3)
    got = ndcg_at_10(["x", "a", "y", "b"], {"a": 1, "b": 1})
    want = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert got == pytest.approx(want)
    assert got == pytest.approx(0.6509209, abs=1e-6)
    assert ndcg_at_10(["a", "b"], {"a": 1, "b": 1}) == pytest.approx(1.0)
    # a relevant document below rank 10 earns nothing
    assert ndcg_at_10([f"n{i}" for i in range(10)] + ["a"], {"a": 1}) == 0.0


def test_recall_counts_relevant_documents_in_the_first_k() -> None:
    assert beir.recall_at(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=100) == pytest.approx(2 / 3)
    assert beir.recall_at(["x", "a"], {"a": 1}, k=1) == 0.0
    assert beir.recall_at(["a"], {"z": 0}) == 0.0  # nothing relevant judged


def test_fused_ranking_rewards_agreement() -> None:
    # 2 is second in both lists: 2/(60+2) beats 1/(60+1) for the lists' single winners
    assert beir.fuse_ranked({"lexical": [1, 2], "dense": [3, 2]})[0] == 2
    assert len(beir.fuse_ranked({"lexical": list(range(150)), "dense": []}, limit=100)) == 100


def test_load_queries_keeps_only_judged_queries_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n9\td9\t1\n2\td2\t1\n")
    rows = [{"_id": i, "text": f"claim {i}", "metadata": {}} for i in ("1", "2", "9")]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    queries, qrels = beir.load_queries(tmp_path)
    assert [q.id for q in queries] == ["2", "9"]
    assert queries[0].text == "claim 2"
    assert qrels == {"9": {"d9": 1}, "2": {"d2": 1}}


def test_load_queries_names_a_missing_judged_query(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n4\td\t1\n")
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "x"}\n')
    with pytest.raises(beir.BeirError, match=r"missing from queries\.jsonl"):
        beir.load_queries(tmp_path)


def test_read_corpus_gz_and_the_passage_shape(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"_id": "7", "title": " A title ", "text": "Body text."}) + "\n")
        f.write(json.dumps({"_id": "8", "title": "", "text": "Only text."}) + "\n")
    assert beir.corpus_file(tmp_path) == path
    abstracts = beir.read_corpus(path)
    assert abstracts[0] == beir.Abstract("7", "A title", "Body text.")
    parsed = beir.parsed_corpus(abstracts)
    first, second = parsed.passages
    # the title is the heading (tsvector = heading || text, as the real ingest stores it)
    assert (first.heading_path, first.text) == (("A title",), "Body text.")
    assert (second.heading_path, second.text) == ((), "Only text.")
    assert len(parsed.sections) == 2


def test_duplicate_corpus_ids_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "1", "title": "a", "text": "b"}\n{"_id": "1", "title": "c", "text": "d"}\n')
    with pytest.raises(beir.BeirError, match="duplicate"):
        beir.read_corpus(path)


def test_score_reports_per_arm_and_the_gap_to_lucene() -> None:
    answers = {
        "q1": beir.Answer(["a", "x"], ["x", "a"], ["a", "x"], 5.0, 2.0, 3.0),
        "q2": beir.Answer(["y"], ["b"], ["b", "y"], 7.0, 2.0, 4.0),
    }
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    report = beir.score(answers, qrels)
    assert report["ndcg_at_10"]["lexical"] == pytest.approx(0.5)
    assert report["ndcg_at_10"]["dense"] == pytest.approx(round((1 / math.log2(3) + 1) / 2, 4))
    assert report["recall_at_100"] == {"lexical": 0.5, "dense": 1.0, "fused": 1.0}
    assert report["lexical_gap_to_lucene"] == pytest.approx(0.5 - 0.6789)
    assert report["latency_ms"]["dense"]["p50"] == pytest.approx(5.5)
