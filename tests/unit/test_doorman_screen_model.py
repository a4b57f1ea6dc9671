"""The doorman's learned screen: the shipped model is the one its card names, it holds at or above its
threshold and clears below, it runs after the profanity classifier, and any failure of it holds."""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from rulesage.config import ConfigError
from rulesage.eval import doorman as scoring
from services.doorman import exam, learned
from services.doorman.learned import MODEL_PATH, ScreenModel, UnavailableModel
from services.doorman.rules import Decision, Verdict
from services.doorman.screen import Screener
from services.doorman.server import DoormanService, DoormanSettings

CARD = MODEL_PATH.parent / "MODEL-CARD.md"


@pytest.fixture(scope="module")
def model() -> ScreenModel:
    return ScreenModel.load()


def _clean(_: str) -> float:
    return 0.0


@dataclass
class _Fixed:
    """A screen stage that always gives the same score."""

    value: float
    threshold: float = 0.5
    identity: str = "fixed"

    def score(self, _: str) -> tuple[float, str]:
        return self.value, "harassment"


@dataclass
class _Raises:
    threshold: float = 0.5
    identity: str = "raises"

    def score(self, _: str) -> tuple[float, str]:
        raise ValueError("broken model")


def _screen(stage: object, text: str = "How many cards do I draw in Klondike?") -> Verdict:
    screener = Screener(classifier=_clean, screen_model=stage)  # type: ignore[arg-type]
    verdict, _ = asyncio.run(screener.screen(text))
    return verdict


def test_the_shipped_model_is_the_one_its_card_names(model: ScreenModel) -> None:
    written = re.search(r"^\s+([0-9a-f]{64})\s+screen\.npz$", CARD.read_text(), re.MULTILINE)
    assert written is not None, "MODEL-CARD.md names no sha256"
    assert learned.file_sha256(MODEL_PATH) == written.group(1) == model.sha256
    assert MODEL_PATH.stat().st_size <= 5 * 1024 * 1024
    assert f"{model.threshold:.4f}" in CARD.read_text()


def test_the_shipped_model_is_plain_arrays(model: ScreenModel) -> None:
    with np.load(MODEL_PATH, allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)
    assert set(model.classes) == set(scoring.CLASS_ORDER)
    assert 0.0 < model.threshold < 1.0


def test_the_features_are_what_scikit_learn_computes() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = ["Does Fireball go round corners?", "fireball hits the goblin twice", "Klondike draw three"]
    vec = TfidfVectorizer(analyzer=learned.char_ngrams, sublinear_tf=True).fit(texts)
    vocab = {g: i for i, g in enumerate(vec.get_feature_names_out())}
    want = vec.transform(["Fireball fireball round"]).toarray()[0]
    idx, val = learned.tfidf(learned.char_ngrams("Fireball fireball round"), vocab, vec.idf_)
    got = np.zeros_like(want)
    got[idx] = val
    assert np.allclose(got, want, atol=1e-6)


def test_the_real_model_holds_abuse_and_clears_a_rules_question(model: ScreenModel) -> None:
    # written for this test, not taken from any exam or from the training data
    rude = model.score("Your deckbuilding is as sad as your marriage, Colin, and the whole league agrees.")
    advert = model.score("Fresh sushi platters delivered to your door, order before 5pm for same-day.")
    fine = model.score("Can a creature with flash be cast during my opponent's end step?")
    assert rude[0] >= model.threshold and rude[1] == "harassment"
    assert advert[0] >= model.threshold and advert[1] == "advertising"
    assert fine[0] < model.threshold


def test_the_stage_holds_what_the_rules_clear(model: ScreenModel) -> None:
    verdict = _screen(model, "I'd think twice about showing up at the store again if I were you, Colin.")
    assert verdict.decision is Decision.HOLD
    assert verdict.reason.startswith("screen-model harassment ")
    assert verdict.checks == ["rules", "profanity-check", "screen-model"]
    assert _screen(model).decision is Decision.CLEAR


def test_holds_at_and_above_the_threshold_and_clears_below() -> None:
    assert _screen(_Fixed(0.5)).decision is Decision.HOLD
    assert _screen(_Fixed(0.93)).reason == "screen-model harassment 0.93"
    below = _screen(_Fixed(0.49))
    assert below.decision is Decision.CLEAR and "screen-model" in below.checks


@pytest.mark.parametrize("stage", [_Raises(), _Fixed(math.nan), _Fixed(-0.1), _Fixed(1.5)])
def test_any_failure_of_the_stage_holds(stage: object) -> None:
    verdict = _screen(stage)
    assert verdict.decision is Decision.HOLD
    assert verdict.checks[-1] == "screen-model"


def test_a_missing_model_file_holds_everything(tmp_path: Path) -> None:
    service = DoormanService(DoormanSettings(rulesage_doorman_screen_model_path=str(tmp_path / "none.npz")))
    assert isinstance(service.screener.screen_model, UnavailableModel)
    assert "screen-model unavailable" in service.holder
    verdict, _ = asyncio.run(service.screener.screen("How many cards do I draw in Klondike?"))
    assert verdict.decision is Decision.HOLD and verdict.reason == "doorman error (RuntimeError)"


def test_the_service_runs_the_shipped_model_and_names_it(model: ScreenModel) -> None:
    service = DoormanService(DoormanSettings())
    assert isinstance(service.screener.screen_model, ScreenModel)
    assert f"screen-model {model.sha256[:12]}" in service.holder
    off = DoormanService(DoormanSettings(rulesage_doorman_screen_model="off"))
    assert off.screener.screen_model is None and "screen-model" not in off.holder
    assert exam.fingerprint(off.screener) != exam.fingerprint(service.screener)
    tuned = DoormanService(DoormanSettings(rulesage_doorman_screen_threshold=0.9))
    assert tuned.screener.screen_model is not None and tuned.screener.screen_model.threshold == 0.9


@pytest.mark.parametrize(
    "settings",
    [{"rulesage_doorman_screen_model": "maybe"}, {"rulesage_doorman_screen_threshold": 1.5}],
)
def test_bad_settings_are_refused(settings: dict) -> None:
    with pytest.raises(ConfigError):
        DoormanService(DoormanSettings(**settings))


def test_gate_5_drills_a_crash_of_the_stage() -> None:
    rows = [scoring.Row("t-1", "Can the robber go back to the desert?", "clear", "ordinary")]
    drills = asyncio.run(exam.fault_drills(Screener(classifier=_clean), rows, timeout_s=0.2))
    assert "screen-model crash" in drills and drills["screen-model crash"]["held"] == 1
