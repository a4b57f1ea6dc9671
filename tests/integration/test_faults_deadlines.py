"""Deadlines and back-pressure.

- Every gRPC call in the road, fusion, the gateway and the launcher carries a deadline (an AST scan: any
  call of a contract method without ``timeout=`` fails the test).
- A stage that hangs costs the ask its deadline, never more: fake servicers bound to the real contracts on
  free localhost ports sleep instead of answering; the real road and the real fusion service call them.
- An overloaded reranker sheds load with RESOURCE_EXHAUSTED (bounded queue) instead of queueing without end;
  the answer service is checked the same way.
"""

from __future__ import annotations

import ast
import asyncio
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

from rulesage import mesh as registry
from rulesage import runner
from rulesage.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    arm_pb2,
    arm_pb2_grpc,
    common_pb2,
    doorman_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    rerank_pb2,
    rerank_pb2_grpc,
)
from tests.support.gateway_fixtures import seed_shelf, throwaway_database

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
GAME = "dnd-5e-srd"
HANG_S = 30.0


# -- every call has a deadline ----------------------------------------------------------------------------


def rpc_methods() -> set[str]:
    names = {"Check", "Watch"}  # grpc.health.v1
    for mod in (answer_pb2, arm_pb2, doorman_pb2, fusion_pb2, rerank_pb2):
        for service in mod.DESCRIPTOR.services_by_name.values():
            names |= {m.name for m in service.methods}
    return names


def calls_without_deadline(path: Path, methods: set[str]) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr in methods and not any(k.arg == "timeout" for k in node.keywords):
            out.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.func.attr}(...) has no timeout=")
    return out


def test_every_grpc_call_has_a_deadline() -> None:
    methods = rpc_methods()
    assert {"Fuse", "Search", "Embed", "Rerank", "Answer", "Screen"} <= methods
    files = [
        p
        for d in ("rulesage", "services", "gateway")
        for p in sorted((ROOT / d).rglob("*.py"))
        if "/v1/" not in str(p) and "/train/" not in str(p)
    ]
    missing = [m for p in files for m in calls_without_deadline(p, methods)]
    assert not missing, "\n".join(missing)
    # the scan does see the calls it must see
    road = calls_without_deadline(ROOT / "rulesage" / "road.py", set())
    assert road == []
    seen = sum(
        1
        for node in ast.walk(ast.parse((ROOT / "rulesage" / "road.py").read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods
    )
    assert seen >= 3  # Fuse, Rerank, Answer


# -- fakes on the real contracts --------------------------------------------------------------------------


class Fake(
    fusion_pb2_grpc.FusionServicer,
    rerank_pb2_grpc.RerankerServicer,
    answer_pb2_grpc.AnswererServicer,
    arm_pb2_grpc.ArmServicer,
    arm_pb2_grpc.EmbedderServicer,
):
    """Answers the road's and fusion's calls; a method named in ``hang`` sleeps instead."""

    name = "fake"
    service_names: Sequence[str] = tuple(
        mod.DESCRIPTOR.services_by_name[s].full_name
        for mod, s in (
            (fusion_pb2, "Fusion"),
            (rerank_pb2, "Reranker"),
            (answer_pb2, "Answerer"),
            (arm_pb2, "Arm"),
            (arm_pb2, "Embedder"),
        )
    )

    def __init__(self, hang: set[str]) -> None:
        self.hang = hang
        self.calls: list[str] = []

    def register(self, server: grpc.aio.Server) -> None:
        fusion_pb2_grpc.add_FusionServicer_to_server(self, server)
        rerank_pb2_grpc.add_RerankerServicer_to_server(self, server)
        answer_pb2_grpc.add_AnswererServicer_to_server(self, server)
        arm_pb2_grpc.add_ArmServicer_to_server(self, server)
        arm_pb2_grpc.add_EmbedderServicer_to_server(self, server)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def _maybe_hang(self, method: str) -> None:
        self.calls.append(method)
        if method in self.hang:
            await asyncio.sleep(HANG_S)

    @staticmethod
    def passages() -> list[common_pb2.Passage]:
        return [
            common_pb2.Passage(
                id=i, text=f"Rule {i}: each player draws a card.", game=GAME, doc_kind="rulebook"
            )
            for i in range(1, 11)
        ]

    async def Fuse(self, request: Any, context: Any) -> fusion_pb2.FuseResult:
        await self._maybe_hang("Fuse")
        return fusion_pb2.FuseResult(passages=self.passages(), voted=["lexical"], k=60, ceiling=1 / 61)

    async def Rerank(self, request: Any, context: Any) -> rerank_pb2.RerankResult:
        await self._maybe_hang("Rerank")
        return rerank_pb2.RerankResult(
            passages=list(request.candidates)[:8], scores=[1.0] * len(request.candidates), model="fake"
        )

    async def Answer(self, request: Any, context: Any) -> answer_pb2.AnswerResult:
        await self._maybe_hang("Answer")
        return answer_pb2.AnswerResult(
            verdict=answer_pb2.NOT_IN_BOOK, answer="Not in the book.", model="fake"
        )

    async def Search(self, request: Any, context: Any) -> arm_pb2.ArmResult:
        await self._maybe_hang("Search")
        return arm_pb2.ArmResult(arm="fake", hits=[arm_pb2.ArmHit(passage_id=1, rank=1, lane="fake")])

    async def Embed(self, request: Any, context: Any) -> arm_pb2.EmbedResult:
        await self._maybe_hang("Embed")
        return arm_pb2.EmbedResult(vectors=[arm_pb2.Vector(lane="dense", values=[0.0] * 384)], model="fake")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database() as u:
        seed_shelf(u)
        yield u


@pytest.fixture()
def deadlines(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    values = {"fusion": 1.0, "rerank": 1.0, "answer": 1.5, "arm": 0.8}
    for k, v in values.items():
        monkeypatch.setenv(f"RULESAGE_{k.upper()}_DEADLINE_S", str(v))
    return values


async def _road_with(fake: Fake, url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, runner.Running]:
    from rulesage.road import Road

    running = await runner.start(fake, "127.0.0.1", 0)
    for name in ("FUSION", "RERANK", "ANSWER"):
        monkeypatch.setenv(f"RULESAGE_{name}_ADDR", f"127.0.0.1:{running.port}")
    road = Road(url)
    await road.open()
    return road, running


@pytest.mark.parametrize(
    ("hang", "stage", "cap"),
    [("Fuse", "fusion", "fusion"), ("Rerank", "rerank", "rerank"), ("Answer", "answer", "answer")],
)
def test_a_hanging_stage_costs_its_deadline_and_says_so(
    url: str, deadlines: dict[str, float], monkeypatch: pytest.MonkeyPatch, hang: str, stage: str, cap: str
) -> None:
    async def scenario() -> tuple[dict[str, Any], float]:
        road, running = await _road_with(Fake({hang}), url, monkeypatch)
        try:
            t0 = time.perf_counter()
            ruling = await road.ask(GAME, "can I draw two cards on my turn?")
            return ruling.to_json(), time.perf_counter() - t0
        finally:
            await road.close()
            await running.shutdown(0)

    ruling, took = asyncio.run(scenario())
    assert took < deadlines[cap] + 1.5, f"{hang} hung and the ask took {took:.1f}s"
    w = ruling["wrench"]
    assert w[stage]["state"] == "timeout" and "deadline" in w[stage]["detail"], w[stage]
    assert ruling["id"], "the degraded ruling is stored"
    if stage == "fusion":
        assert ruling["verdict"] == "unavailable" and ruling["passages"] == []
    if stage == "rerank":
        assert len(ruling["passages"]) == 8 and "fused order" in w["rerank"]["detail"]
    if stage == "answer":
        assert ruling["verdict"] == "unavailable" and ruling["citations"] == [] and ruling["passages"]


def test_the_search_span_cap_bounds_fusion_and_rerank_together(
    url: str, deadlines: dict[str, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> tuple[Any, float]:
        road, running = await _road_with(Fake({"Fuse", "Rerank"}), url, monkeypatch)
        try:
            t0 = time.perf_counter()
            out = await road.search(GAME, "can I draw two cards on my turn?", deadline_s=0.5)
            return out, time.perf_counter() - t0
        finally:
            await road.close()
            await running.shutdown(0)

    out, took = asyncio.run(scenario())
    assert took < 1.5 and out.wrench.fusion is not None and out.wrench.fusion.state == "timeout"


def test_fusion_returns_before_its_callers_deadline_when_the_arms_hang(
    url: str, deadlines: dict[str, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.fusion.server import FusionService

    async def scenario() -> list[tuple[fusion_pb2.FuseResult | str, float]]:
        arms = await runner.start(Fake({"Search", "Embed"}), "127.0.0.1", 0)
        for arm in registry.arms():
            monkeypatch.setenv(f"RULESAGE_{arm.name.upper()}_ADDR", f"127.0.0.1:{arms.port}")
        monkeypatch.setenv("DATABASE_URL", url)
        fusion = await runner.start(FusionService(), "127.0.0.1", 0)
        out = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{fusion.port}") as ch:
                stub = fusion_pb2_grpc.FusionStub(ch)
                for caller_deadline in (5.0, 0.6):  # fusion's own arm cap (0.8 s), then a shorter caller's
                    t0 = time.perf_counter()
                    try:
                        res: Any = await stub.Fuse(
                            fusion_pb2.FuseRequest(question="can I draw two cards?", game=GAME),
                            timeout=caller_deadline,
                        )
                    except grpc.aio.AioRpcError as exc:
                        res = exc.code().name
                    out.append((res, time.perf_counter() - t0))
        finally:
            await fusion.shutdown(0)
            await arms.shutdown(0)
        return out

    (own, took_own), (short, took_short) = asyncio.run(scenario())
    for res, took, limit in ((own, took_own, deadlines["arm"] + 1.0), (short, took_short, 0.6)):
        assert not isinstance(res, str), f"fusion failed the ask ({res}) instead of reporting the arms"
        assert took < limit, f"fusion took {took:.2f}s"
        states = {a.arm: common_pb2.StageState.Name(a.state) for a in res.arms}
        assert states["lexical"] == "STAGE_STATE_TIMEOUT" and states["dense"] == "STAGE_STATE_TIMEOUT", states
        for arm in ("aisle", "category"):  # waiting on the question's vectors
            assert states[arm] in ("STAGE_STATE_SKIPPED", "STAGE_STATE_TIMEOUT"), states
        assert list(res.voted) == [] and list(res.passages) == []


# -- back-pressure ----------------------------------------------------------------------------------------


class SlowScorer:
    identity = "slow-test-scorer"
    prior = 0.0  # no blending with the fused order
    reads_headings = False

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray:
        if question != "warm up":
            time.sleep(self.seconds)
        return np.zeros(len(passages), dtype=np.float32)


async def _burst(call: Any, n: int) -> list[tuple[str, float]]:
    async def one() -> tuple[str, float]:
        t0 = time.perf_counter()
        try:
            await call()
            return "OK", time.perf_counter() - t0
        except grpc.aio.AioRpcError as exc:
            return exc.code().name, time.perf_counter() - t0

    return list(await asyncio.gather(*(one() for _ in range(n))))


def test_overloaded_reranker_sheds_load_fast() -> None:
    from services.rerank.server import RerankService
    from services.rerank.settings import RerankSettings

    settings = RerankSettings(rulesage_rerank_concurrency=1, rulesage_rerank_max_queue=2)

    async def scenario() -> list[tuple[str, float]]:
        running = await runner.start(RerankService(settings, scorer=SlowScorer(0.6)), "127.0.0.1", 0)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
                stub = rerank_pb2_grpc.RerankerStub(ch)
                req = rerank_pb2.RerankRequest(question="q?", game=GAME, candidates=Fake.passages(), keep=8)
                return await _burst(lambda: stub.Rerank(req, timeout=10), 12)
        finally:
            await running.shutdown(0)

    results = asyncio.run(scenario())
    ok = [t for code, t in results if code == "OK"]
    shed = [t for code, t in results if code == "RESOURCE_EXHAUSTED"]
    assert len(ok) + len(shed) == len(results), results
    assert len(ok) == 1 + 2, results  # one scoring, two queued
    assert shed and max(shed) < 0.5, f"shedding must be fast: {shed}"


class SlowBackend:
    identity = "slow-test-backend"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.inside = 0
        self.most = 0

    async def open_turn(self, prompt: Any) -> Any:
        self.inside += 1
        self.most = max(self.most, self.inside)
        try:
            await asyncio.sleep(self.seconds)
        finally:
            self.inside -= 1
        raise RuntimeError("the slow test backend never answers")

    final_turn = open_turn


class NoLibrary:
    async def sections(self, section_ids: Sequence[int]) -> dict[int, str]:
        return {}

    async def lookup_rules(self, doc_keys: Sequence[str], rule_ids: Sequence[str]) -> list[Any]:
        return []


def test_overloaded_answer_service_sheds_load() -> None:
    from services.answer.server import AnswerService
    from services.answer.settings import AnswerSettings

    backend = SlowBackend(0.5)

    async def scenario() -> list[tuple[str, float]]:
        service = AnswerService(AnswerSettings(), backend=backend, library=NoLibrary())
        running = await runner.start(service, "127.0.0.1", 0)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
                stub = answer_pb2_grpc.AnswererStub(ch)
                req = answer_pb2.AnswerRequest(question="q?", game=GAME, passages=Fake.passages()[:3])
                return await _burst(lambda: stub.Answer(req, timeout=20), 24)
        finally:
            await running.shutdown(0)

    results = asyncio.run(scenario())
    assert any(code == "RESOURCE_EXHAUSTED" for code, _ in results), results
    assert backend.most <= 8, f"{backend.most} answers were in the backend at once"


def test_a_fresh_road_takes_a_burst_of_concurrent_asks(
    url: str, deadlines: dict[str, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first asks on a new gateway arrive together: opening the road's pool must happen once, not race
    (psycopg_pool asserts when two callers wait for the same opening pool)."""

    async def scenario() -> list[Any]:
        from rulesage.road import Road

        running = await runner.start(Fake(set()), "127.0.0.1", 0)
        for name in ("FUSION", "RERANK", "ANSWER"):
            monkeypatch.setenv(f"RULESAGE_{name}_ADDR", f"127.0.0.1:{running.port}")
        road = Road(url)  # not opened: the burst opens it
        try:
            return await asyncio.gather(
                *(road.ask(GAME, f"can I draw {i} cards?") for i in range(8)), return_exceptions=True
            )
        finally:
            await road.close()
            await running.shutdown(0)

    results = asyncio.run(scenario())
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    assert not failures, failures
    assert len({r.id for r in results if not isinstance(r, BaseException)}) == 8
