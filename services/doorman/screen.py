"""One screening: rules, then the profanity classifier, then the learned screen model (unless switched off),
then (optionally) the judge. Fails one way: any exception or the overall timeout is a HOLD with its reason;
nothing is cleared by a failure."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from services.doorman.judge import Judge
from services.doorman.rules import DEFAULT_MAX_CHARS, Decision, Verdict, classifier_text, screen_rules

log = logging.getLogger(__name__)


class ScreenStage(Protocol):
    """The learned screen (services.doorman.learned.ScreenModel): (hold probability, likely hold class)."""

    threshold: float

    @property
    def identity(self) -> str: ...

    def score(self, text: str) -> tuple[float, str]: ...


@dataclass
class Screener:
    classifier: Callable[[str], float]
    profanity_threshold: float = 0.8
    max_chars: int = DEFAULT_MAX_CHARS
    judge: Judge | None = None
    # the learned screen; None when switched off (RULESAGE_DOORMAN_SCREEN_MODEL=off)
    screen_model: ScreenStage | None = None
    timeout_s: float = 15.0

    async def screen(self, text: str) -> tuple[Verdict, list[tuple[str, float]]]:
        """The verdict and the stage timings (name, ms) of this screening."""
        timings: list[tuple[str, float]] = []
        checks: list[str] = []
        try:
            async with asyncio.timeout(self.timeout_s):
                verdict = await self._screen(text, checks, timings)
        except TimeoutError:
            verdict = Verdict(Decision.HOLD, f"doorman timed out after {self.timeout_s:g}s", checks)
        except Exception as exc:  # fail one way: whatever broke, the question waits for a person
            log.warning("doorman check failed: %s", exc, exc_info=True)
            verdict = Verdict(Decision.HOLD, f"doorman error ({type(exc).__name__})", checks)
        return verdict, timings

    async def _screen(self, text: str, checks: list[str], timings: list[tuple[str, float]]) -> Verdict:
        t0 = time.perf_counter()
        checks.append("rules")
        # off the event loop: a slow rule is cut by the timeout (and held) instead of stalling every screening
        reason = await asyncio.to_thread(screen_rules, text, self.max_chars)
        timings.append(("doorman.rules", _ms(t0)))
        if reason:
            return Verdict(Decision.HOLD, reason, checks)

        t0 = time.perf_counter()
        checks.append("profanity-check")
        read = classifier_text(text)
        prob = await asyncio.to_thread(self.classifier, read)
        timings.append(("doorman.profanity", _ms(t0)))
        if not 0.0 <= prob <= 1.0:
            return Verdict(Decision.HOLD, f"profanity classifier returned {prob!r}", checks)
        if prob >= self.profanity_threshold:
            return Verdict(Decision.HOLD, f"profanity {prob:.2f}", checks)

        if self.screen_model is not None:
            t0 = time.perf_counter()
            checks.append("screen-model")
            model = self.screen_model
            score, cls = await asyncio.to_thread(model.score, text)
            timings.append(("doorman.screen_model", _ms(t0)))
            if not 0.0 <= score <= 1.0:
                return Verdict(Decision.HOLD, f"screen model returned {score!r}", checks)
            if score >= model.threshold:
                return Verdict(Decision.HOLD, f"screen-model {cls} {score:.2f}", checks)

        if self.judge is not None:
            t0 = time.perf_counter()
            checks.append(f"judge:{self.judge.model}")
            reply = await self.judge.judge(text)
            timings.append(("doorman.judge", _ms(t0)))
            if reply.hold:
                return Verdict(Decision.HOLD, reply.reason, checks)
        return Verdict(Decision.CLEAR, "clean", checks)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0
