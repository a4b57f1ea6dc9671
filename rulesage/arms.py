"""One fan-out to the registered search arms, shared by fusion, the evaluation and the BEIR run.

Arms that need no vectors start at once; the question is embedded once by the mesh's embedder; the arms
that need vectors start as soon as the vectors are ready; everything runs under one deadline. A failed or
late arm becomes an outcome with a state and a reason, never an exception: the election goes on with the
lists that came back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from rulesage import mesh, runner
from rulesage.core.models import StageState
from rulesage.dbservice import book_words
from rulesage.telemetry import ARM_FAILURES, tracer
from rulesage.v1 import arm_pb2, arm_pb2_grpc


@dataclass
class ArmOutcome:
    arm: str
    state: StageState
    detail: str = ""
    result: arm_pb2.ArmResult | None = None
    ms: float = 0.0  # wall time seen by the caller; the embedder arm's includes the embedding


@dataclass
class FanOut:
    outcomes: list[ArmOutcome]  # one per asked arm, in registry order
    embed: arm_pb2.EmbedResult | None
    embed_ms: float

    def lists(self) -> dict[str, list[int]]:
        """The voting lists: one per lane of every arm that answered, passage ids best first."""
        out: dict[str, list[int]] = {}
        for o in self.outcomes:
            if o.state is not StageState.OK or o.result is None:
                continue
            ranked = sorted(o.result.hits, key=lambda h: h.rank)
            for lane in o.result.lanes:
                ids = [h.passage_id for h in ranked if h.lane == lane]
                if ids:
                    out[lane] = ids
        return out

    def question_vector(self) -> list[float]:
        """The question's own vector: the book-words lane when an alias matched, else the one lane."""
        if self.embed is None or not self.embed.vectors:
            return []
        return list(book_words(self.embed.vectors).values)


def describe(exc: BaseException) -> tuple[StageState, str]:
    """A failed call as a stage state and a reason fit for the wrench."""
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return StageState.TIMEOUT, "no answer before the deadline"
    if isinstance(exc, grpc.aio.AioRpcError):
        code = exc.code()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return StageState.TIMEOUT, "no answer before the deadline"
        if code == grpc.StatusCode.UNAVAILABLE:
            return StageState.DOWN, f"service unavailable: {exc.details()}"
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            return StageState.OVERLOADED, f"shed load: {exc.details()}"
        return StageState.FAILED, f"{code.name}: {exc.details()}"
    return StageState.FAILED, f"{type(exc).__name__}: {exc}"


async def _timed(arm: str, make_call: Callable[[], Awaitable[Any]]) -> ArmOutcome:
    """One arm call inside its own span (attribute ``arm``), so a trace shows which arm each call was."""
    t0 = time.perf_counter()
    try:
        with tracer().start_as_current_span("fusion.arm", attributes={"arm": arm}):
            result = await make_call()
        return ArmOutcome(
            arm, StageState.OK, getattr(result, "note", ""), result, (time.perf_counter() - t0) * 1000
        )
    except Exception as exc:
        state, detail = describe(exc)
        ARM_FAILURES.labels(arm, state.value).inc()
        return ArmOutcome(arm, state, detail, None, (time.perf_counter() - t0) * 1000)


class ArmClient:
    """Channels to the registered arms (or the ``names`` given) and the embedder, and the fan-out."""

    def __init__(self, names: Sequence[str] | None = None) -> None:
        self.arms = [mesh.get(n) for n in names] if names else mesh.arms()
        self.embedder = mesh.embedder()
        self.channels: dict[str, grpc.aio.Channel] = {}

    def open(self) -> None:
        if not self.channels:
            self.channels = {s.name: runner.channel(s.name) for s in [*self.arms, self.embedder]}

    async def close(self) -> None:
        for ch in self.channels.values():
            await ch.close()
        self.channels = {}

    async def ready(self, timeout: float) -> None:
        """Wait until every channel connects; TimeoutError names the arms that did not."""
        self.open()
        pending = {n: asyncio.ensure_future(ch.channel_ready()) for n, ch in self.channels.items()}
        _, not_done = await asyncio.wait(pending.values(), timeout=timeout)
        for fut in not_done:
            fut.cancel()
        late = [f"{n} ({mesh.address(n)})" for n, fut in pending.items() if fut in not_done]
        if late:
            raise TimeoutError("not reachable: " + ", ".join(late))

    async def fan_out(
        self,
        question: str,
        game: str,
        deadline: float,
        limit: int = 0,
        cards_text: str = "",
        card_ids: Sequence[int] = (),
    ) -> FanOut:
        """Ask every arm about ``question`` in ``game`` before ``deadline`` (time.monotonic()).
        ``cards_text``: what the cards the question names say; the lexical arm and the embedder then add a
        lane that searches the question followed by it. ``card_ids``: those cards; the dense arm then adds a
        lane of the passages nearest their official rulings."""
        self.open()

        def left() -> float:
            return max(0.01, deadline - time.monotonic())

        req = arm_pb2.ArmRequest(
            question=question, game=game, limit=limit, cards_text=cards_text, card_ids=card_ids
        )
        at_once = {
            s.name: asyncio.ensure_future(
                _timed(
                    s.name,
                    lambda s=s: arm_pb2_grpc.ArmStub(self.channels[s.name]).Search(  # type: ignore[misc]
                        req, timeout=left()
                    ),
                )
            )
            for s in self.arms
            if not s.needs_vectors
        }
        waiting = [s for s in self.arms if s.needs_vectors]
        embed: ArmOutcome | None = None
        later: dict[str, ArmOutcome] = {}
        if waiting:
            embed = await _timed(
                self.embedder.name,
                lambda: arm_pb2_grpc.EmbedderStub(self.channels[self.embedder.name]).Embed(
                    arm_pb2.EmbedRequest(question=question, game=game, cards_text=cards_text),
                    timeout=left(),
                ),
            )
            if embed.state is StageState.OK and embed.result is not None:
                vreq = arm_pb2.ArmRequest(
                    question=question,
                    game=game,
                    vectors=embed.result.vectors,
                    limit=limit,
                    cards_text=cards_text,
                    card_ids=card_ids,
                )
                done = await asyncio.gather(
                    *(
                        _timed(
                            s.name,
                            lambda s=s: arm_pb2_grpc.ArmStub(  # type: ignore[misc]
                                self.channels[s.name]
                            ).Search(vreq, timeout=left()),
                        )
                        for s in waiting
                    )
                )
                later = {o.arm: o for o in done}
                if self.embedder.name in later:
                    later[self.embedder.name].ms += embed.ms
            else:
                why = f"question embedding failed: {embed.detail}"
                for s in waiting:
                    if s.name == self.embedder.name:
                        later[s.name] = ArmOutcome(s.name, embed.state, why, None, embed.ms)
                    else:
                        later[s.name] = ArmOutcome(s.name, StageState.SKIPPED, why)
        first = dict(zip(at_once, await asyncio.gather(*at_once.values()), strict=True))
        outcomes = [first.get(s.name) or later[s.name] for s in self.arms]
        embed_result = embed.result if embed is not None and embed.state is StageState.OK else None
        return FanOut(outcomes, embed_result, embed.ms if embed is not None else 0.0)
