"""The Doorman gRPC service: a thin servicer around services.doorman.screen.Screener."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

import grpc

from rulesage import telemetry
from rulesage.config import CommonSettings, ConfigError, load
from rulesage.v1 import common_pb2, doorman_pb2, doorman_pb2_grpc
from services.doorman import classifier, exam
from services.doorman.judge import Judge
from services.doorman.learned import MODEL_PATH, ScreenModel, UnavailableModel
from services.doorman.rules import Decision
from services.doorman.screen import Screener, ScreenStage

log = logging.getLogger(__name__)


class DoormanSettings(CommonSettings):
    # Probability at or above which the profanity classifier holds a question.
    rulesage_doorman_profanity_threshold: float = 0.8
    # Optional judge over an OpenAI-compatible server (base URL ending in /v1) and its model name.
    rulesage_doorman_judge_url: str = ""
    rulesage_doorman_judge_model: str = ""
    rulesage_doorman_judge_api_key: str = ""
    rulesage_doorman_judge_timeout_s: float = 10.0
    # Ceiling on one whole screening; past it the question is held.
    rulesage_doorman_timeout_s: float = 15.0
    # The learned screen after the profanity classifier: "on" (default) or "off" (for diagnosis only).
    rulesage_doorman_screen_model: str = "on"
    # Its model file (default: the one shipped in the package) and a threshold overriding the model card's
    # (0 keeps the card's).
    rulesage_doorman_screen_model_path: str = ""
    rulesage_doorman_screen_threshold: float = 0.0


def screen_model(s: DoormanSettings) -> ScreenStage:
    """The learned screen from the settings. A model that cannot be read is not an error at start: it is
    replaced by one that holds every question it sees (and says so in the doorman's name), so the doorman
    fails one way."""
    path = Path(s.rulesage_doorman_screen_model_path) if s.rulesage_doorman_screen_model_path else MODEL_PATH
    try:
        model = ScreenModel.load(path)
    except Exception as exc:
        log.error("doorman screen model %s unreadable, every screening will hold: %s", path, exc)
        return UnavailableModel(f"{type(exc).__name__}: {exc}")
    if s.rulesage_doorman_screen_threshold:
        model.threshold = s.rulesage_doorman_screen_threshold
    return model


def warm_screen_model(screener: Screener) -> None:
    """Load the screen model's embedder now; a failure is logged and left to hold each screening."""
    model = screener.screen_model
    if model is None:
        return
    try:
        model.warm()  # type: ignore[attr-defined]
    except Exception as exc:
        log.error("doorman screen model failed to warm, every screening will hold: %s", exc)


class DoormanServicer(doorman_pb2_grpc.DoormanServicer):
    def __init__(self, screener: Screener, holder: str = "") -> None:
        self.screener = screener
        self.holder = holder

    async def Screen(
        self, request: doorman_pb2.ScreenRequest, context: grpc.aio.ServicerContext
    ) -> doorman_pb2.ScreenResult:
        t0 = time.perf_counter()
        with telemetry.tracer().start_as_current_span("doorman.screen"):
            verdict, timings = await self.screener.screen(request.text)
        total_ms = (time.perf_counter() - t0) * 1000.0
        decision = doorman_pb2.CLEAR if verdict.decision is Decision.CLEAR else doorman_pb2.HOLD
        if decision == doorman_pb2.HOLD:
            telemetry.DOORMAN_HOLDS.labels(verdict.reason.split(" ", 1)[0]).inc()
        return doorman_pb2.ScreenResult(
            decision=decision,
            reason=verdict.reason,
            checks=verdict.checks,
            holder=self.holder,
            timings=[common_pb2.StageTiming(stage=s, ms=ms) for s, ms in timings]
            + [common_pb2.StageTiming(stage="doorman.screen", ms=total_ms)],
        )


class DoormanService:
    name = "doorman"
    service_names: Sequence[str] = (doorman_pb2.DESCRIPTOR.services_by_name["Doorman"].full_name,)

    def __init__(self, settings: DoormanSettings | None = None) -> None:
        self.settings = settings or load(DoormanSettings)
        s = self.settings
        if bool(s.rulesage_doorman_judge_url) != bool(s.rulesage_doorman_judge_model):
            raise ConfigError(
                "bad configuration: RULESAGE_DOORMAN_JUDGE_URL and RULESAGE_DOORMAN_JUDGE_MODEL go together"
            )
        if not 0.0 < s.rulesage_doorman_profanity_threshold <= 1.0:
            raise ConfigError(
                "bad configuration: RULESAGE_DOORMAN_PROFANITY_THRESHOLD="
                f"{s.rulesage_doorman_profanity_threshold!r}: expected a value in (0, 1]"
            )
        if s.rulesage_doorman_screen_model not in ("on", "off"):
            raise ConfigError(
                "bad configuration: RULESAGE_DOORMAN_SCREEN_MODEL="
                f"{s.rulesage_doorman_screen_model!r}: expected on or off"
            )
        if not 0.0 <= s.rulesage_doorman_screen_threshold <= 1.0:
            raise ConfigError(
                "bad configuration: RULESAGE_DOORMAN_SCREEN_THRESHOLD="
                f"{s.rulesage_doorman_screen_threshold!r}: expected a value in (0, 1], or 0 for the model's"
            )
        judge = (
            Judge(
                s.rulesage_doorman_judge_url,
                s.rulesage_doorman_judge_model,
                s.rulesage_doorman_judge_timeout_s,
                s.rulesage_doorman_judge_api_key,
            )
            if s.rulesage_doorman_judge_url
            else None
        )
        self.screener = Screener(
            classifier=classifier.profanity_probability,
            profanity_threshold=s.rulesage_doorman_profanity_threshold,
            max_chars=s.rulesage_max_question_chars,
            judge=judge,
            screen_model=screen_model(s) if s.rulesage_doorman_screen_model == "on" else None,
            timeout_s=s.rulesage_doorman_timeout_s,
        )
        # named in every answer (the wrench shows it) and on /about/doorman beside its last exam
        self.holder = exam.holder(self.screener)["name"]

    def register(self, server: grpc.aio.Server) -> None:
        doorman_pb2_grpc.add_DoormanServicer_to_server(DoormanServicer(self.screener, self.holder), server)

    async def start(self) -> None:
        classifier.warm()
        warm_screen_model(self.screener)
        if self.screener.judge is not None:
            await self.screener.judge.start()

    async def stop(self) -> None:
        if self.screener.judge is not None:
            await self.screener.judge.stop()
