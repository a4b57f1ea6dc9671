"""The question tower: which one reads the player's question, that a tower reads only against the passage
vectors it was trained on, its trainer's loss and held-out measure, and (when one is shipped) that the file
is the one its card describes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rulesage import embed


def _tower(folder: Path, against: str, scale: float = 1.0) -> Path:
    """A tower folder: the shipped passage tower's weights (scaled in one layer when ``scale`` != 1, so it
    reads otherwise), with its run.json naming the passage tower it was trained against."""
    from safetensors.torch import load_file, save_file

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(embed.tuned_model_dir() / "config.json", folder / "config.json")
    weights = load_file(str(embed.tuned_model_dir() / "model.safetensors"))
    key = "encoder.layer.5.output.dense.weight"
    weights[key] = (weights[key].float() * scale).half()
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "run.json").write_text(json.dumps({"passage_tower_sha256": against}))
    return folder


def _passage_sha() -> str:
    return embed._sha256(embed.tuned_model_dir() / "model.safetensors")


def test_the_passage_tower_reads_the_question_when_no_tower_is_there_or_asked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(embed, "QUERY_DIR", tmp_path / "absent")
    monkeypatch.delenv("RULESAGE_QUERY_ENCODER", raising=False)
    assert embed.configured_query_tower("tuned") is None
    tower = _tower(tmp_path / "tower", _passage_sha())
    monkeypatch.setattr(embed, "QUERY_DIR", tower)
    assert embed.configured_query_tower("tuned") == tower  # the shipped one, by default
    assert embed.configured_query_tower("minilm") is None  # it reads only the tuned vectors
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", "shared")
    assert embed.configured_query_tower("tuned") is None


def test_a_tower_trained_against_other_passage_vectors_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    stale = _tower(tmp_path / "stale", "0" * 64)
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", str(stale))
    with pytest.raises(ValueError, match="trained against the passage tower 000000000000"):
        embed.configured_query_tower("tuned")
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="RULESAGE_QUERY_ENCODER must be one of tuned, shared or a folder"):
        embed.configured_query_tower("tuned")
    good = _tower(tmp_path / "good", _passage_sha())
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", str(good))
    assert embed.configured_query_tower("tuned") == good
    monkeypatch.setenv("RULESAGE_ENCODER", "minilm")
    with pytest.raises(ValueError, match="set RULESAGE_QUERY_ENCODER=shared"):
        embed.configured_query_tower("minilm")


def test_the_tower_reads_the_question_and_the_passage_tower_everything_else(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    tower = _tower(tmp_path / "tower", _passage_sha(), scale=0.5)
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", "shared")
    shared = embed.Embedder(encoder="tuned", threads=1)
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", str(tower))
    towered = embed.Embedder(encoder="tuned", threads=1)
    texts = ["My creature has trample and is blocked by a 1/1: how much damage goes through?"]
    assert np.allclose(shared.embed_questions(texts), shared.embed_queries(texts))
    assert np.allclose(towered.embed_queries(texts), shared.embed_queries(texts), atol=1e-6)
    asked = towered.embed_questions(texts)
    assert np.allclose(np.linalg.norm(asked, axis=1), 1.0, atol=1e-5)
    assert float(asked[0] @ shared.embed_questions(texts)[0]) < 0.9999
    # the stored vectors' identity stays the passage tower's; the wrench names the tower too
    assert towered.identity == shared.identity and shared.question_model == shared.identity.model
    sha = embed._sha256(tower / "model.safetensors")[:12]
    assert towered.question_model == f"{shared.identity.model}+query@{sha}"
    # its graph is exported once, named by its weights, where the encoders' graphs are
    assert (embed.models_dir() / f"search-query-{sha}-fp32.onnx").is_file()
    assert towered.question_graph() is towered.question_graph()


def test_the_card_tower_is_chosen_and_checked_as_the_question_tower_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(embed, "CARD_DIR", tmp_path / "absent")
    monkeypatch.delenv("RULESAGE_CARD_TOWER", raising=False)
    assert embed.configured_card_tower("tuned") is None  # none shipped: the question tower reads the lane
    shipped = _tower(tmp_path / "cards", _passage_sha())
    monkeypatch.setattr(embed, "CARD_DIR", shipped)
    assert embed.configured_card_tower("tuned") == shipped
    assert embed.configured_card_tower("minilm") is None
    monkeypatch.setenv("RULESAGE_CARD_TOWER", "shared")
    assert embed.configured_card_tower("tuned") is None
    monkeypatch.setenv("RULESAGE_CARD_TOWER", str(_tower(tmp_path / "stale", "0" * 64)))
    with pytest.raises(ValueError, match="rulesage train card-tower`\\) or set RULESAGE_CARD_TOWER=shared"):
        embed.configured_card_tower("tuned")


def test_the_card_lane_is_read_by_the_card_tower_and_the_other_lanes_by_the_question_tower(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from services.dense.lanes import lanes
    from services.dense.server import embed_lanes

    question = _tower(tmp_path / "question", _passage_sha(), scale=0.5)
    cards = _tower(tmp_path / "cards", _passage_sha(), scale=0.7)
    monkeypatch.setenv("RULESAGE_QUERY_ENCODER", str(question))
    monkeypatch.setenv("RULESAGE_CARD_TOWER", "shared")
    alone = embed.Embedder(encoder="tuned", threads=1)
    monkeypatch.setenv("RULESAGE_CARD_TOWER", str(cards))
    both = embed.Embedder(encoder="tuned", threads=1)
    asked = "My Grizzly Bears blocks a Hill Giant. Does it die?"
    text = "Grizzly Bears. Creature — Bear. 2/2"
    road = lanes(asked, [], text, asked="Does it die?")
    assert [ln.name for ln in road] == ["dense", "dense.cards", "dense.asked"]
    served = embed_lanes(both, road)
    before = embed_lanes(alone, road)
    # the question's own lanes as the question tower reads them, with or without a card tower
    for i in (0, 2):
        assert np.allclose(served[i], before[i], atol=1e-6)
        assert np.allclose(served[i], both.embed_questions([road[i].text])[0], atol=1e-6)
    # the card lane by the card tower; without one, by the question tower
    assert np.allclose(served[1], both.embed_questions([road[1].text], kind="cards")[0], atol=1e-6)
    assert np.allclose(before[1], alone.embed_questions([road[1].text])[0], atol=1e-6)
    assert float(served[1] @ before[1]) < 0.9999
    sha = embed._sha256(cards / "model.safetensors")[:12]
    # the question's own vector is read as before (prior rulings still compare with it); the card lane's
    # model names the card tower
    assert both.question_model == alone.question_model == alone.card_model
    assert both.card_model == f"{both.identity.model}+cards@{sha}"
    assert both.question_graph("cards") is not both.question_graph("question")
    assert alone.question_graph("cards") is alone.question_graph("question")


def test_the_bank_loss_is_the_softmax_over_the_question_s_own_family_less_its_other_answers() -> None:
    import torch

    from training.query.recipe import bank_loss

    bank = np.eye(4, dtype=np.float32)  # passages 0-2 in family 7, passage 3 in family 9
    families = np.array([7, 7, 7, 9])
    rows = [{"label": 0, "also": [1]}, {"label": 2, "also": []}]
    question = torch.tensor([[1.0, 0.5, 0.0, 2.0], [0.0, 1.0, 1.0, 0.0]])

    class Fixed(torch.nn.Module):
        def forward(self, features: dict[str, object]) -> dict[str, torch.Tensor]:
            return {"sentence_embedding": question}

    loss = bank_loss(Fixed(), bank, families, rows, scale=2.0)([{}], torch.tensor([0, 1]))
    unit = question / question.norm(dim=1, keepdim=True)
    first = -torch.log_softmax(2.0 * unit[0, [0, 2]], 0)[0]  # passage 1 answers too, passage 3 is elsewhere
    second = -torch.log_softmax(2.0 * unit[1, [0, 1, 2]], 0)[2]
    assert float(loss) == pytest.approx(float((first + second) / 2), abs=1e-6)


def test_the_held_out_measure_counts_any_answering_passage_of_the_family() -> None:
    from training.query.measure import figures, ranks

    bank = np.eye(3, dtype=np.float32)
    families = np.array([1, 1, 2])
    rows = [{"label": 1, "also": []}, {"label": 1, "also": [0]}, {"label": 2, "also": []}]
    vectors = np.array([[1.0, 0.2, 0.0], [1.0, 0.2, 0.0], [1.0, 0.0, 0.1]], dtype=np.float32)
    found = ranks(vectors, rows, bank, families)
    assert found == [2, 1, 1]  # passage 0 answers the second row too; the third searches family 2 alone
    assert figures(found) == {"questions": 3, "recall_at_8": 1.0, "mrr_at_10": 0.833, "recall_at_80": 1.0}


def test_the_held_out_measure_keeps_the_card_lanes_apart_from_the_questions_as_asked() -> None:
    from training.query.measure import by_lane

    rows = [
        {"public": True, "lane": "dense"},
        {"public": True, "lane": "dense.cards"},
        {"public": False, "lane": "dense"},
        {"public": False},  # rows written before the lanes were: the question as asked
    ]
    out = by_lane([1, 2, None, 4], rows)
    assert out["all"] == {"questions": 3, "recall_at_8": 0.667, "mrr_at_10": 0.417, "recall_at_80": 0.667}
    assert out["real_posts"]["questions"] == 1 and out["real_posts"]["mrr_at_10"] == 1.0
    assert out["cards_lane"] == {"questions": 1, "recall_at_8": 1.0, "mrr_at_10": 0.5, "recall_at_80": 1.0}
    assert "cards_lane" not in by_lane([1], rows[:1])


def test_the_tower_recipe_takes_its_options_from_the_command_line() -> None:
    from rulesage.cli import TRAINABLE
    from training.query.cli import parse

    assert "query-tower" in TRAINABLE
    args = parse(["--epochs", "1", "--public-repeat", "4", "--max-steps", "3"])
    assert (args.epochs, args.public_repeat, args.max_steps, args.batch, args.seed) == (1.0, 4, 3, 32, 12)
    assert args.work == "artifacts/query" and args.out is None and not args.card_lanes
    assert "card-tower" in TRAINABLE
    cards = parse(["--max-steps", "3"], cards=True)
    assert cards.card_lanes and cards.work == "artifacts/query-cards" and cards.max_steps == 3
    with pytest.raises(SystemExit):  # the card lanes are the card tower's, not a question tower's option
        parse(["--card-lanes"])


@pytest.mark.parametrize("folder", [embed.QUERY_DIR, embed.CARD_DIR], ids=["question", "cards"])
def test_the_shipped_tower_is_the_file_its_card_and_run_describe(folder: Path) -> None:
    """Retrain either tower without shipping the other's record, or change a figure without `rulesage
    figures`, and this fails: the tower reads against the passage tower its run names."""
    from rulesage.eval.figures import FIGURES
    from training.query.ship import card_text, kind

    weights = folder / "model.safetensors"
    run = json.loads((folder / "run.json").read_text())
    assert weights.stat().st_size <= 50 * 1024 * 1024
    assert embed._sha256(weights) == run["sha256"]
    assert run["passage_tower_sha256"] == _passage_sha()
    assert json.loads((folder / "config.json").read_text())["torch_dtype"] == "float16"
    card = (folder / "MODEL_CARD.md").read_text()
    assert card == card_text(run, FIGURES)
    command = "rulesage train card-tower" if folder == embed.CARD_DIR else "rulesage train query-tower"
    assert run["sha256"] in card and command in card and kind(run) == command.split()[-1]
    assert run["held_out"]["after"]["all"]["mrr_at_10"] > run["held_out"]["before"]["all"]["mrr_at_10"]
