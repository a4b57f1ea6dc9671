"""The search encoder: which one serves, how it is named, and that the shipped file is the one its card
describes (a retrained file with a stale card, or a missing file, fails here)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rulesage import embed


def test_the_encoder_setting_fails_fast_on_an_unknown_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULESAGE_ENCODER", "bert-large")
    with pytest.raises(ValueError, match="RULESAGE_ENCODER must be one of tuned, minilm"):
        embed.configured_encoder()


def test_a_missing_tuned_encoder_says_how_to_rebuild_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("RULESAGE_ENCODER", "tuned")
    monkeypatch.setattr(embed, "tuned_model_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match="rulesage train encoder"):
        embed.configured_encoder()


def test_tuned_is_the_default_and_minilm_stays_selectable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RULESAGE_ENCODER", raising=False)
    assert embed.configured_encoder() == "tuned"
    monkeypatch.setenv("RULESAGE_ENCODER", "minilm")
    assert embed.configured_encoder() == "minilm"


def test_each_encoder_stamps_its_own_identity() -> None:
    tuned, base = embed.identity("fp32", "tuned"), embed.identity("fp32", "minilm")
    assert tuned.model.startswith(embed.TUNED_NAME + "@")
    assert base.model.startswith(embed.MODEL_NAME + "@")
    assert tuned.model != base.model and tuned.dim == base.dim == embed.DIM
    # the exported graph is named by the weights, so a retrained file never reads an old graph
    sha = tuned.model.split("@")[1].split("+")[0]
    assert sha in embed.onnx_name("tuned", "fp32") and embed.onnx_name("minilm", "int8").startswith("minilm")


def test_the_shipped_encoder_is_the_file_its_card_and_run_describe() -> None:
    folder = embed.tuned_model_dir()
    weights = folder / "model.safetensors"
    run = json.loads((folder / "run.json").read_text())
    assert weights.stat().st_size <= 50 * 1024 * 1024
    assert embed._sha256(weights) == run["sha256"]
    card = (folder / "MODEL_CARD.md").read_text()
    assert run["sha256"] in card and "rulesage train encoder" in card
    assert json.loads((folder / "config.json").read_text())["torch_dtype"] == "float16"


@pytest.fixture(scope="module")
def both() -> tuple[embed.Embedder, embed.Embedder]:
    return embed.Embedder(encoder="tuned", threads=1), embed.Embedder(encoder="minilm", threads=1)


def test_the_tuned_encoder_draws_its_own_unit_vectors(both: tuple[embed.Embedder, embed.Embedder]) -> None:
    tuned, base = both
    texts = ["Can I cast a spell with a bonus action and another with my action?"]
    a, b = tuned.embed_queries(texts), base.embed_queries(texts)
    assert a.shape == b.shape == (1, embed.DIM)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert float(a[0] @ b[0]) < 0.999  # other weights, other vectors: never mixed in one space
    assert tuned.identity.model != base.identity.model


def test_rulesage_train_lists_every_model_and_refuses_an_unknown_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rulesage.cli import TRAINABLE, main

    assert main(["train", "--help"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in TRAINABLE) and {"encoder", "reranker"} <= set(TRAINABLE)
    assert main(["train", "poetry"]) == 2
    assert "unknown model 'poetry'" in capsys.readouterr().err


def test_the_encoder_recipe_takes_its_options_from_the_command_line() -> None:
    from training.encoder.cli import parse

    args = parse(["--epochs", "2", "--lr", "5e-5", "--max-steps", "3"])
    assert (args.epochs, args.lr, args.max_steps, args.batch, args.seed) == (2.0, 5e-5, 3, 32, 12)
    assert args.base == ""  # MiniLM off the shelf
    assert parse(["--base", "artifacts/encoder/run/final"]).base == "artifacts/encoder/run/final"
    assert args.public_repeat == 1 and parse(["--public-repeat", "4"]).public_repeat == 4


def test_the_card_is_what_the_run_and_the_figures_file_make() -> None:
    """Change a figure in rulesage/eval/figures.json without `rulesage figures`, or retrain without
    rewriting the card, and this fails."""
    from training.encoder.ship import FIGURES, card_text

    folder = embed.tuned_model_dir()
    run = json.loads((folder / "run.json").read_text())
    assert (folder / "MODEL_CARD.md").read_text() == card_text(run, FIGURES)
    assert json.loads(FIGURES.read_text())["conditions"], "the card quotes no measured figures"
