"""The gateway admits asks onto the road a few at a time: the rest wait in a bounded queue for a bounded
time, then get a 503 with Retry-After (never a degraded ruling because the services behind were full)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from gateway.context import AskError, admitted
from gateway.settings import GatewaySettings
from rulesage.admission import Gate, Saturated


def _ctx(concurrency: int, queue: int, wait_s: float) -> SimpleNamespace:
    settings = GatewaySettings(
        rulesage_ask_concurrency=concurrency, rulesage_ask_queue=queue, rulesage_ask_queue_wait_s=wait_s
    )
    return SimpleNamespace(settings=settings, admission=Gate(concurrency, queue))


def test_waiting_asks_get_their_turn_in_order() -> None:
    async def scenario() -> list[str]:
        c = _ctx(1, 5, 5.0)
        log: list[str] = []

        async def player(name: str) -> None:
            async with admitted(c):  # type: ignore[arg-type]
                log.append(f"{name} in")
                await asyncio.sleep(0.02)
                log.append(f"{name} out")

        await asyncio.gather(*(player(n) for n in "abc"))
        return log

    assert asyncio.run(scenario()) == ["a in", "a out", "b in", "b out", "c in", "c out"]


def test_a_full_queue_or_a_long_wait_is_a_503_with_retry_after() -> None:
    async def scenario(queue: int, wait_s: float) -> AskError:
        c = _ctx(1, queue, wait_s)
        hold = asyncio.Event()

        async def first() -> None:
            async with admitted(c):  # type: ignore[arg-type]
                await hold.wait()

        task = asyncio.create_task(first())
        await asyncio.sleep(0.01)
        try:
            async with admitted(c):  # type: ignore[arg-type]
                raise AssertionError("admitted while the only turn was taken")
        except AskError as exc:
            return exc
        finally:
            hold.set()
            await task

    full = asyncio.run(scenario(queue=0, wait_s=5.0))
    slow = asyncio.run(scenario(queue=3, wait_s=0.05))
    for exc in (full, slow):
        assert exc.status == 503 and exc.retry_after > 0 and "busy" in exc.message


def test_gate_wait_is_bounded() -> None:
    async def scenario() -> None:
        gate = Gate(1, 1)
        async with gate.slot():
            with pytest.raises(Saturated, match="no turn within"):
                async with gate.slot(wait_s=0.01):
                    pass
        assert gate.waiting == 0
        async with gate.slot(wait_s=0.01):  # free again: admitted at once
            pass

    asyncio.run(scenario())
