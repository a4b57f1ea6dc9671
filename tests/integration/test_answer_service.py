"""The answer service over real passages: Magic's Comprehensive Rules (read from ../shared) stored in a
throwaway Postgres database, the servicer on a free port (extractive backend), and the process entry."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import grpc
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rulesage import runner
from rulesage.config import shared_dir
from rulesage.v1 import answer_pb2, answer_pb2_grpc, common_pb2
from services.answer.backends.extractive import Reader
from services.answer.context import PgLibrary
from services.answer.selector import load
from services.answer.server import AnswerService
from services.answer.settings import AnswerSettings, calibrated_threshold
from tests.support.throwaway_db import throwaway_database

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
CR = shared_dir() / "corpus" / "mtg" / "MagicCompRules_20220429.txt"
RULES = ("510.1", "702.19", "702.20")
DOC_KEY = "answer-test-cr"
VERSION = "2022-04-29"


@dataclass
class Rule:
    rule_id: str
    text: str
    leaves: list[tuple[str, str]]


def read_rules(wanted: tuple[str, ...] = RULES) -> list[Rule]:
    """Rules and their lettered sub-rules (with their Example: paragraphs), verbatim from the CR file."""
    if not CR.exists():
        pytest.skip(f"{CR} is not here (the shared corpus)")
    rules: dict[str, Rule] = {}
    current: Rule | None = None
    for raw in CR.read_text(encoding="utf-8-sig").splitlines():
        line = raw.strip()
        head = re.match(r"(\d{3}\.\d+)\. (.+)", line)
        leaf = re.match(r"(\d{3}\.\d+)([a-z]) (.+)", line)
        if head:
            current = Rule(head.group(1), line, []) if head.group(1) in wanted else None
            if current:
                rules[current.rule_id] = current
        elif leaf and current and leaf.group(1) == current.rule_id:
            current.leaves.append((leaf.group(1) + leaf.group(2), line))
        elif line.startswith("Example:") and current and current.leaves:
            rid, text = current.leaves[-1]
            current.leaves[-1] = (rid, text + "\n" + line)
    return [rules[r] for r in wanted]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database("answer_test_") as url:
        yield url


def _insert_passage(
    conn: psycopg.Connection, doc: int, fam: int, section: int, ord_: int, **kw: object
) -> int:
    text = str(kw["text"])
    row = conn.execute(
        "INSERT INTO passages (document_id, family_id, section_id, ord, kind, heading_path, text,"
        " content_hash, page_start, page_end, rule_id, parent_rule, searchable, tsv, doc_len, retired_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL, NULL, %s, %s, %s, to_tsvector('english', %s), %s, %s)"
        " RETURNING id",
        (
            doc,
            fam,
            section,
            ord_,
            kw["kind"],
            list(kw["heading"]),  # type: ignore[call-overload]
            text,
            hashlib.sha256(text.encode()).hexdigest(),
            kw["rule_id"],
            kw.get("parent"),
            kw["kind"] == "rule",
            text,
            len(text.split()),
            kw.get("retired_at"),
        ),
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def shelf(url: str) -> dict[str, int]:
    """The rules stored as the ingest stores a numbered rulebook: a section per rule, a rule row (search
    unit) and a leaf row per lettered sub-rule (citation unit). Returns rule id -> passage id."""
    ids: dict[str, int] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        fam = conn.execute("INSERT INTO families (slug) VALUES ('mtg') RETURNING id").fetchone()[0]  # type: ignore[index]
        game = conn.execute(
            "INSERT INTO games (slug, name, family_id)"
            " VALUES ('mtg', 'Magic: The Gathering', %s) RETURNING id",
            (fam,),
        ).fetchone()[0]  # type: ignore[index]
        doc = conn.execute(
            "INSERT INTO documents (key, version, title, kind, game_id, family_id, path, sha256)"
            " VALUES (%s, %s, 'Magic: The Gathering Comprehensive Rules', 'rulebook', %s, %s, %s, 'x')"
            " RETURNING id",
            (DOC_KEY, VERSION, game, fam, str(CR)),
        ).fetchone()[0]  # type: ignore[index]
        ord_ = 0
        for i, rule in enumerate(read_rules()):
            body = "\n\n".join([rule.text, *(t for _, t in rule.leaves)])
            heading = [rule.text if len(rule.text) < 60 else rule.rule_id]
            section = conn.execute(
                "INSERT INTO sections (document_id, ord, heading_path, text)"
                " VALUES (%s, %s, %s, %s) RETURNING id",
                (doc, i, heading, body),
            ).fetchone()[0]  # type: ignore[index]
            ids[rule.rule_id] = _insert_passage(
                conn, doc, fam, section, ord_, text=body, kind="rule", heading=heading, rule_id=rule.rule_id
            )
            for rid, text in rule.leaves:
                ord_ += 1
                ids[rid] = _insert_passage(
                    conn,
                    doc,
                    fam,
                    section,
                    ord_,
                    text=text,
                    kind="leaf",
                    heading=heading,
                    rule_id=rid,
                    parent=rule.rule_id,
                )
        # a retired copy of 702.19b (an older release's wording) must never be looked up
        ids["retired"] = _insert_passage(
            conn,
            doc,
            fam,
            None,
            999,
            text="702.19b Old wording.",
            kind="leaf",
            heading=[],
            rule_id="702.19b",
            parent="702.19",
            retired_at="2020-01-01",
        )
    return ids


def passages(url: str, pids: list[int]) -> list[common_pb2.Passage]:
    """The passages as the road carries them (what rerank hands to answer)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT p.id, p.text, d.key, d.title, d.kind, d.version, p.heading_path, p.rule_id, p.section_id"
            " FROM passages p JOIN documents d ON d.id = p.document_id WHERE p.id = ANY(%s)",
            (pids,),
        ).fetchall()
    by_id = {
        r[0]: common_pb2.Passage(
            id=r[0],
            text=r[1],
            doc_key=r[2],
            doc_title=r[3],
            doc_kind=r[4],
            doc_version=r[5],
            heading_path=r[6],
            rule_id=r[7],
            section_id=r[8],
            game="mtg",
        )
        for r in rows
    }
    return [by_id[p] for p in pids]


# -- the library -------------------------------------------------------------------------------------------
async def _library(url: str, work):  # type: ignore[no-untyped-def]
    from rulesage.db import async_pool

    pool = async_pool(url, min_size=1, max_size=2)
    await pool.open(wait=True)
    try:
        return await work(PgLibrary(pool))
    finally:
        await pool.close()


def test_the_library_reads_sections_and_looks_up_live_rules_by_number(
    url: str, shelf: dict[str, int]
) -> None:
    async def work(lib: PgLibrary) -> None:
        exact = await lib.lookup_rules([DOC_KEY], ["510.1c"])
        assert [p.rule_id for p in exact] == ["510.1c"]
        assert exact[0].doc_version == VERSION and exact[0].id == shelf["510.1c"]
        by_rule = await lib.lookup_rules([DOC_KEY], ["702.19"])
        assert by_rule[0].rule_id == "702.19"  # the asked-for rule first, then its sub-rules
        assert {p.rule_id for p in by_rule} >= {"702.19", "702.19a", "702.19b", "702.19g"}
        assert shelf["retired"] not in {p.id for p in by_rule}
        by_section = await lib.lookup_rules([DOC_KEY], ["702"])
        assert {p.rule_id for p in by_section} == {"702.19", "702.20"}  # a section expands to its rules
        assert await lib.lookup_rules(["some-other-book"], ["510.1c"]) == []
        sections = await lib.sections([exact[0].section_id])
        assert "510.1c" in sections[exact[0].section_id]

    asyncio.run(_library(url, work))


# -- the service -------------------------------------------------------------------------------------------
async def _ask(
    service: AnswerService, requests: list[answer_pb2.AnswerRequest]
) -> list[answer_pb2.AnswerResult]:
    running = await runner.start(service, port=0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="rulesage.v1.Answerer"), timeout=5
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            stub = answer_pb2_grpc.AnswererStub(channel)
            return [await stub.Answer(r, timeout=60) for r in requests]
    finally:
        await running.shutdown(1.0)


@pytest.fixture(scope="module")
def extractive(url: str) -> AnswerSettings:
    return AnswerSettings(database_url=url, rulesage_answer_backend="extractive")


def test_extractive_over_grpc_quotes_the_book_byte_exact_and_abstains_when_silent(
    url: str, shelf: dict[str, int], extractive: AnswerSettings
) -> None:
    kept = passages(url, [shelf[r] for r in ("702.19b", "702.20a", "510.1a", "702.19c", "510.1c", "702.19g")])
    answered, silent = asyncio.run(
        _ask(
            AnswerService(extractive),
            [
                answer_pb2.AnswerRequest(
                    question="my trample creature is blocked: where does the damage beyond lethal go?",
                    game="mtg",
                    passages=kept,
                ),
                answer_pb2.AnswerRequest(
                    question="how many cards does each player draw for their opening hand?",
                    game="mtg",
                    passages=kept,
                ),
            ],
        )
    )
    assert answered.verdict == answer_pb2.ANSWERED, answered
    assert answered.model.startswith("extractive:")
    assert answered.attempts == 1 and not answered.rejections
    texts = {p.id: p.text for p in kept}
    for c in answered.citations:
        assert texts[c.passage_id][c.start : c.end] == c.quote
        assert (c.doc_key, c.doc_version) == (DOC_KEY, VERSION)
        assert c.rule_id == next(p.rule_id for p in kept if p.id == c.passage_id)
    assert any(c.rule_id == "702.19b" for c in answered.citations)
    assert 0.0 < answered.confidence <= 1.0
    # the threshold it abstains under, and where it was calibrated, travel with every answer
    threshold, source = extractive.extractive_threshold()
    assert (answered.threshold, answered.threshold_source) == (pytest.approx(threshold), source)
    assert "training asks" in source and "answerer@" in source and silent.threshold == answered.threshold
    assert answered.model.endswith(source.rsplit(", ", 1)[1])  # the selector's model names itself
    stages = {t.stage for t in answered.timings}
    assert stages >= {"answer.context", "answer.read", "answer.run", "answer.generate"}

    assert silent.verdict == answer_pb2.NOT_IN_BOOK, silent
    assert not silent.citations
    # the best score is reported on an abstain too: one eval run gives the pairs calibrate_threshold needs
    assert 0.0 < silent.confidence < answered.confidence


def test_a_card_the_question_names_is_not_a_name_the_book_fails_to_print(
    url: str, shelf: dict[str, int], extractive: AnswerSettings
) -> None:
    kept = passages(url, [shelf[r] for r in ("702.19b", "702.20a", "510.1a", "702.19c", "510.1c", "702.19g")])
    question = "My Colossal Dreadmaw has trample and is blocked: where does the damage beyond lethal go?"
    card = common_pb2.NamedCard(
        name="Colossal Dreadmaw", written="Colossal Dreadmaw", type_line="Creature", oracle="Trample"
    )
    # the shipped model reads them as it was fitted; this one is told to read the card table's names
    model = dataclasses.replace(load(), reads_cards=True)
    threshold, source = extractive.extractive_threshold()
    reader = Reader(model, threshold, source)
    unknown, known = asyncio.run(
        _ask(
            AnswerService(extractive, reader=reader),
            [
                answer_pb2.AnswerRequest(question=question, game="mtg", passages=kept),
                answer_pb2.AnswerRequest(question=question, game="mtg", passages=kept, cards=[card]),
            ],
        )
    )
    # the rules never print a card's name: named through the card table, it no longer counts against
    # the book answering; the quote is the same either way
    assert known.confidence > unknown.confidence
    assert known.verdict == answer_pb2.ANSWERED
    if unknown.verdict == answer_pb2.ANSWERED:
        assert [c.quote for c in known.citations] == [c.quote for c in unknown.citations]


def test_the_cosine_selector_abstains_under_its_own_calibration(url: str, shelf: dict[str, int]) -> None:
    """The design the trained selector replaced stays selectable (to measure one against the other): it
    quotes by the cosine blend, under calibration.json's threshold, and is handed no reading."""
    kept = passages(url, [shelf[r] for r in ("702.19b", "702.20a", "510.1a")])
    settings = AnswerSettings(
        database_url=url, rulesage_answer_backend="extractive", rulesage_answer_selector="cosine"
    )
    (answered,) = asyncio.run(
        _ask(
            AnswerService(settings),
            [
                answer_pb2.AnswerRequest(
                    question="my trample creature is blocked: where does the damage beyond lethal go?",
                    game="mtg",
                    passages=kept,
                )
            ],
        )
    )
    threshold, source = calibrated_threshold()
    assert answered.verdict == answer_pb2.ANSWERED
    assert (answered.threshold, answered.threshold_source) == (pytest.approx(threshold), source)
    assert "answerer@" not in answered.model and "answer.read" not in {t.stage for t in answered.timings}


def test_no_passages_is_not_in_the_book_and_an_empty_question_is_refused(extractive: AnswerSettings) -> None:
    (nothing,) = asyncio.run(
        _ask(AnswerService(extractive), [answer_pb2.AnswerRequest(question="can I castle?", game="mtg")])
    )
    assert nothing.verdict == answer_pb2.NOT_IN_BOOK and nothing.attempts == 0
    with pytest.raises(grpc.aio.AioRpcError) as err:
        asyncio.run(_ask(AnswerService(extractive), [answer_pb2.AnswerRequest(question="  ", game="mtg")]))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_an_unreachable_answering_model_is_unavailable_and_invents_nothing(
    url: str, shelf: dict[str, int]
) -> None:
    settings = AnswerSettings(
        database_url=url,
        rulesage_answer_backend="openai",
        rulesage_openai_base_url="http://127.0.0.1:9/v1",  # discard port: nothing listens
        rulesage_openai_model="nobody",
        rulesage_answer_timeout_s=5,
    )
    (result,) = asyncio.run(
        _ask(
            AnswerService(settings),
            [
                answer_pb2.AnswerRequest(
                    question="what is trample?", game="mtg", passages=passages(url, [shelf["702.19a"]])
                )
            ],
        )
    )
    assert result.verdict == answer_pb2.UNAVAILABLE
    assert "unavailable" in result.answer.lower()
    assert not result.citations
    assert result.model == "openai:nobody"


def test_python_dash_m_serves_answers_and_stops(url: str, shelf: dict[str, int], tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "RULESAGE_PORT": "0",
        "RULESAGE_PORT_FILE": str(port_file),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("RULESAGE_ANSWER_BACKEND", None)
    proc = subprocess.Popen([sys.executable, "-m", "services.answer"], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists():
            assert proc.poll() is None, "answer exited early"
            assert time.monotonic() < deadline, "answer did not start"
            time.sleep(0.2)
        port = int(port_file.read_text())

        async def call() -> answer_pb2.AnswerResult:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                request = answer_pb2.AnswerRequest(
                    question="does vigilance stop my creature from tapping when it attacks?",
                    game="mtg",
                    passages=passages(url, [shelf["702.20a"], shelf["702.20b"], shelf["510.1a"]]),
                )
                return await answer_pb2_grpc.AnswererStub(channel).Answer(request, timeout=60)

        result = asyncio.run(call())
        assert result.verdict == answer_pb2.ANSWERED
        assert result.citations[0].rule_id.startswith("702.20")
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_a_llama_backend_without_a_model_file_is_a_startup_error() -> None:
    env = {**os.environ, "RULESAGE_ANSWER_BACKEND": "llama-cpp", "PYTHONPATH": str(ROOT)}
    env.pop("RULESAGE_LLAMA_MODEL_PATH", None)
    out = subprocess.run(
        [sys.executable, "-m", "services.answer"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "RULESAGE_LLAMA_MODEL_PATH" in out.stderr


# -- a scripted OpenAI-compatible model: the tool round and the retry, end to end ---------------------------
class ScriptedModel(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions like a model would, by script: asks for rule 510.1c when the lookup is
    offered, then quotes the rule it was shown; for a question containing 'stubborn', always misquotes; when
    shown an earlier ruling, quotes that ruling's words (as a shown passage's first, then under a made-up
    passage id)."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append(body)
        schema = body["response_format"]["json_schema"]["schema"]
        user = body["messages"][-1]["content"]
        earlier = re.search(r"Ruling given: (.+)", user)
        if earlier:
            pids = schema["properties"]["quotes"]["items"]["properties"]["passage_id"]["enum"]
            retried = "Previous attempt rejected" in user
            reply = {
                "quotes": [{"passage_id": 424242 if retried else pids[0], "quote": earlier.group(1).strip()}],
                "answer": "As was ruled here before: " + earlier.group(1).strip(),
                "verdict": "answered",
            }
        elif "stubborn" in user:
            pid = schema["properties"]["quotes"]["items"]["properties"]["passage_id"]["enum"][0]
            reply = {
                "quotes": [{"passage_id": pid, "quote": "damage goes wherever you like"}],
                "answer": "Damage goes wherever you like, says the book.",
                "verdict": "answered",
            }
        elif "lookup_rules" in schema["properties"]:
            reply = {"lookup_rules": ["rule 510.1c"], "quotes": [], "answer": "", "verdict": "not_in_book"}
        else:
            found = re.search(
                r"passage_id (\d+) \(looked up\): [^\n]*\nPASSAGE \d+ \(quote from here\):\n(.+)", user
            )
            assert found, "the looked-up rule was not shown"
            reply = {
                "quotes": [
                    {
                        "passage_id": int(found.group(1)),
                        "quote": "A blocked creature assigns its combat damage",
                    }
                ],
                "answer": "A blocked creature deals its combat damage to the creatures blocking it.",
                "verdict": "answered",
            }
        out = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": json.dumps(reply)}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted_model() -> Iterator[str]:
    ScriptedModel.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def test_the_tool_round_fetches_a_rule_from_postgres_and_the_answer_cites_it(
    url: str, shelf: dict[str, int], scripted_model: str
) -> None:
    settings = AnswerSettings(
        database_url=url,
        rulesage_answer_backend="openai",
        rulesage_openai_base_url=scripted_model,
        rulesage_openai_model="scripted",
    )
    request = answer_pb2.AnswerRequest(
        question="where does a blocked creature's damage go?",
        game="mtg",
        passages=passages(url, [shelf["702.19b"], shelf["510.1a"]]),
    )
    (result,) = asyncio.run(_ask(AnswerService(settings), [request]))
    assert result.verdict == answer_pb2.ANSWERED, result
    assert result.attempts == 1
    (c,) = result.citations
    assert (c.passage_id, c.rule_id, c.doc_version) == (shelf["510.1c"], "510.1c", VERSION)
    assert c.quote == "A blocked creature assigns its combat damage"
    first, second = ScriptedModel.bodies
    assert "lookup_rules" in first["response_format"]["json_schema"]["schema"]["properties"]
    assert "lookup_rules" not in second["response_format"]["json_schema"]["schema"]["properties"]
    assert "lookup_rules" not in second["messages"][0]["content"]
    # read big: the rule's section (its siblings) was shown around the kept passage
    assert "CONTEXT" in first["messages"][1]["content"]
    assert [t.stage for t in result.timings].count("answer.lookup") == 1


def test_a_model_that_misquotes_twice_abstains_after_one_retry_and_stores_nothing(
    url: str, shelf: dict[str, int], scripted_model: str
) -> None:
    settings = AnswerSettings(
        database_url=url,
        rulesage_answer_backend="openai",
        rulesage_openai_base_url=scripted_model,
        rulesage_openai_model="scripted",
    )
    request = answer_pb2.AnswerRequest(
        question="a stubborn question about trample damage",
        game="mtg",
        passages=passages(url, [shelf["702.19b"]]),
    )
    (result,) = asyncio.run(_ask(AnswerService(settings), [request]))
    assert result.verdict == answer_pb2.NOT_IN_BOOK
    assert result.attempts == 2 and len(result.rejections) == 2
    assert not result.citations
    assert "damage goes wherever" not in result.answer
    assert len(ScriptedModel.bodies) == 2
    assert (
        "Previous attempt rejected: quote is not verbatim"
        in ScriptedModel.bodies[1]["messages"][1]["content"]
    )


PRIOR_ANSWER = "Trample lets the attacker send every point of its damage straight to the defending player."


def test_a_model_that_quotes_an_earlier_ruling_is_refused_it_is_never_a_page_of_the_book(
    url: str, shelf: dict[str, int], scripted_model: str
) -> None:
    settings = AnswerSettings(
        database_url=url,
        rulesage_answer_backend="openai",
        rulesage_openai_base_url=scripted_model,
        rulesage_openai_model="scripted",
    )
    kept = passages(url, [shelf["702.19b"], shelf["510.1a"]])
    request = answer_pb2.AnswerRequest(
        question="does trample damage go to the player?",
        game="mtg",
        passages=kept,
        priors=[
            answer_pb2.PriorRuling(
                question="where does trample damage go?", answer=PRIOR_ANSWER, score=3.0, id="abc234defg"
            )
        ],
    )
    (result,) = asyncio.run(_ask(AnswerService(settings), [request]))
    assert result.verdict == answer_pb2.NOT_IN_BOOK, result
    assert not result.citations and PRIOR_ANSWER not in result.answer
    assert result.attempts == 2
    first, second = result.rejections
    assert first.startswith("quote is not verbatim in that passage") and PRIOR_ANSWER[:40] in first
    assert second.startswith("cites a passage that was not shown: passage 424242")
    # the model was shown the earlier ruling after every passage, as an example it may not cite
    shown = ScriptedModel.bodies[0]["messages"]
    assert "never be quoted or cited" in shown[0]["content"]
    user = shown[1]["content"]
    assert user.index("EARLIER RULINGS") > max(user.index(f"PASSAGE {p.id} (quote from here)") for p in kept)
    allowed = ScriptedModel.bodies[0]["response_format"]["json_schema"]["schema"]["properties"]["quotes"]
    assert allowed["items"]["properties"]["passage_id"]["enum"] == sorted(p.id for p in kept)


def test_the_extractive_backend_ignores_earlier_rulings(
    url: str, shelf: dict[str, int], extractive: AnswerSettings
) -> None:
    kept = passages(url, [shelf[r] for r in ("702.19b", "702.20a", "510.1a")])
    question = "my trample creature is blocked: where does the damage beyond lethal go?"
    prior = answer_pb2.PriorRuling(question=question, answer=PRIOR_ANSWER, score=3.0, id="abc234defg")
    plain, with_prior = asyncio.run(
        _ask(
            AnswerService(extractive),
            [
                answer_pb2.AnswerRequest(question=question, game="mtg", passages=kept),
                answer_pb2.AnswerRequest(question=question, game="mtg", passages=kept, priors=[prior]),
            ],
        )
    )
    assert with_prior.verdict == plain.verdict == answer_pb2.ANSWERED
    assert with_prior.answer == plain.answer and PRIOR_ANSWER not in with_prior.answer
    assert list(with_prior.citations) == list(plain.citations)
