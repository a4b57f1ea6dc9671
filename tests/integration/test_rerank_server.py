"""The Reranker over real gRPC on a free port with the real model (shipped, or the interim cosine), plus the
`python -m services.rerank` entry point as a real process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rulesage import runner
from rulesage.admission import Gate, Saturated
from rulesage.v1 import common_pb2, rerank_pb2, rerank_pb2_grpc
from services.rerank.server import RerankService
from services.rerank.settings import RerankSettings

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

FILLER = [
    "Shuffle the development cards and place them face down next to the board.",
    "Each player places two settlements and two roads during setup.",
    "Longest Road: the first player to build a continuous road of five segments takes this card.",
    "Trading with the bank is 4:1 unless you hold a harbor.",
    "A city produces two resources instead of one.",
    "Knight cards let you move the robber after you reveal them.",
    "The game ends when a player reaches ten victory points on their turn.",
    "Ports allow better exchange rates for specific resources.",
    "Players may not trade during another player's turn except with that player.",
    "Roll two dice at the start of your turn; every hex showing that number produces.",
    "A settlement must be at least two intersections away from any other settlement.",
    "Victory point cards stay hidden until you win.",
    "When a seven is rolled, each player with more than seven cards discards half of them.",
    "Build a road by paying one brick and one lumber.",
    "The largest army card goes to the first player to play three knights.",
    "Year of plenty: take any two resources from the bank.",
    "Monopoly: name a resource; every other player gives you all of theirs.",
]
ANSWER = "The robber may be moved to any terrain hex, including back to the desert."


def passage(pid: int, text: str, kind: str = "expansion", game: str = "catan") -> common_pb2.Passage:
    return common_pb2.Passage(id=pid, text=text, doc_kind=kind, game=game, doc_key=f"{kind}-{game}")


def candidates() -> list[common_pb2.Passage]:
    out = [passage(i + 1, t) for i, t in enumerate(FILLER)]
    out.insert(6, passage(100, ANSWER))
    # The asked game's own rulebook and an errata document, both about something else entirely.
    out.append(passage(200, "Appendix: the copyright notice of the rulebook.", "rulebook", "catan"))
    out.append(passage(300, "Correction: the card count on page 4 should read 25.", "errata", "catan"))
    return out


async def _rerank(settings: RerankSettings, requests: list[rerank_pb2.RerankRequest]) -> list:
    running = await runner.start(RerankService(settings), "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="rulesage.v1.Reranker"), timeout=5
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            stub = rerank_pb2_grpc.RerankerStub(channel)

            async def one(req: rerank_pb2.RerankRequest) -> object:
                try:
                    return await stub.Rerank(req, timeout=60)
                except grpc.aio.AioRpcError as exc:
                    return exc.code()

            return list(await asyncio.gather(*(one(r) for r in requests)))
    finally:
        await running.shutdown(0.5)


def test_rerank_keeps_eight_deals_them_and_applies_the_guarantees() -> None:
    cands = candidates()
    req = rerank_pb2.RerankRequest(
        question="can the robber go back to the desert?", game="catan", candidates=cands
    )
    (res,) = asyncio.run(
        _rerank(RerankSettings(rulesage_rerank_threads=1, rulesage_rerank_stored_states=False), [req])
    )
    assert isinstance(res, rerank_pb2.RerankResult)
    assert len(res.scores) == len(cands)
    assert len(res.passages) == 8
    assert res.model  # the scorer names itself: the shipped file + sha, or the interim cosine
    by_score = sorted(range(len(cands)), key=lambda i: (-res.scores[i], i))
    # The answer is read as the best candidate, and dealt first.
    assert cands[by_score[0]].id == 100
    assert res.passages[0].id == 100 and res.passages[0].has_rerank_score
    # Dealt ends-first: the second best sits at the end.
    kept_scores = [p.rerank_score for p in res.passages]
    assert res.passages[-1].rerank_score == sorted(kept_scores, reverse=True)[1]
    # Both off-topic guaranteed passages are kept whatever their scores, and the wrench says so.
    ids = {p.id for p in res.passages}
    assert {200, 300} <= ids
    assert set(res.guarantees_fired) == {"rulebook-top", "errata-top"}
    assert {"rerank.score", "rerank.rerank", "rerank.queue"} <= {t.stage for t in res.timings}
    # Passages travel whole: text and document fields are those of the candidate.
    assert next(p for p in res.passages if p.id == 100).text == ANSWER


def test_keep_and_bad_requests() -> None:
    cands = candidates()
    small = rerank_pb2.RerankRequest(question="robber desert", game="", candidates=cands, keep=3)
    bad = rerank_pb2.RerankRequest(question="robber desert", candidates=cands, keep=-1)
    empty = rerank_pb2.RerankRequest(question="robber desert", game="catan")
    res, err, none = asyncio.run(
        _rerank(
            RerankSettings(rulesage_rerank_threads=1, rulesage_rerank_stored_states=False),
            [small, bad, empty],
        )
    )
    assert len(res.passages) == 3
    # No asked game: no rulebook guarantee; the errata guarantee still holds.
    assert 300 in {p.id for p in res.passages} and "rulebook-top" not in res.guarantees_fired
    assert err == grpc.StatusCode.INVALID_ARGUMENT
    assert len(none.passages) == 0 and len(none.scores) == 0


def test_sheds_load_with_resource_exhausted() -> None:
    cands = candidates() * 9  # 180 candidates: each request keeps the single slot busy for a while
    req = rerank_pb2.RerankRequest(question="can the robber go back to the desert?", candidates=cands)
    settings = RerankSettings(
        rulesage_rerank_threads=1,
        rulesage_rerank_concurrency=1,
        rulesage_rerank_max_queue=1,
        rulesage_rerank_stored_states=False,
    )
    results = asyncio.run(_rerank(settings, [req] * 5))
    ok = [r for r in results if isinstance(r, rerank_pb2.RerankResult)]
    shed = [r for r in results if r == grpc.StatusCode.RESOURCE_EXHAUSTED]
    assert len(ok) == 2 and len(shed) == 3  # one scoring, one queued, the rest shed


def test_gate_counts_waiters() -> None:
    async def scenario() -> list[str]:
        gate = Gate(concurrency=1, max_queue=1)
        release = asyncio.Event()
        log: list[str] = []

        async def worker(name: str) -> None:
            try:
                async with gate.slot():
                    log.append(f"{name} in")
                    await release.wait()
            except Saturated:
                log.append(f"{name} shed")

        tasks = [asyncio.create_task(worker(n)) for n in "abc"]
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(*tasks)
        return log

    assert asyncio.run(scenario()) == ["a in", "c shed", "b in"]


def test_python_dash_m_entry_point_serves_and_stops(tmp_path: Path, shelf_url: str) -> None:
    port_file = tmp_path / "port"
    env = {
        **os.environ,
        "DATABASE_URL": shelf_url,  # its own database: the test does not lean on another test's server
        "RULESAGE_PORT": "0",
        "RULESAGE_PORT_FILE": str(port_file),
        "RULESAGE_RERANK_THREADS": "1",
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen([sys.executable, "-m", "services.rerank"], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists():
            assert proc.poll() is None, "rerank exited early"
            assert time.monotonic() < deadline, "rerank did not start"
            time.sleep(0.1)
        port = int(port_file.read_text())

        async def call() -> rerank_pb2.RerankResult:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = rerank_pb2_grpc.RerankerStub(channel)
                req = rerank_pb2.RerankRequest(question="robber on the desert?", candidates=candidates())
                return await stub.Rerank(req, timeout=30)

        assert asyncio.run(call()).passages[0].id == 100
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_bad_configuration_is_a_startup_error() -> None:
    env = {**os.environ, "RULESAGE_RERANK_MAX_TOKENS": "4096", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "services.rerank"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "RULESAGE_RERANK_MAX_TOKENS" in out.stderr
