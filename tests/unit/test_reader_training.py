"""`rulesage train reader` end to end on a tiny encoder: sentence-transformers' trainer runs, checkpoints and
resumes, the run is staged in its shipped form, and the served graph scores as the trained model does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

QUESTION = "Does a creature with toughness 0 die right away?"
TEXTS = [
    "704.5f If a creature has toughness 0 or less, it's put into its owner's graveyard.",
    "Lethal damage is damage equal to or greater than a creature's toughness.",
    "The robber is moved when a seven is rolled.",
    "A player may mulligan any number of times.",
    "Backgammon checkers move in the direction of their home board.",
    "Tapping a permanent turns it sideways.",
]


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rulesage.embed import package_model_dir

    torch.manual_seed(3)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    folder = tmp_path_factory.mktemp("base")
    BertModel(config, add_pooling_layer=False).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(package_model_dir())).save_pretrained(str(folder))
    return folder


def rows(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(4):
        row = {"question": f"{QUESTION} ({i})", "public": i == 0, "positive": TEXTS[0]}
        row.update({f"negative_{n}": TEXTS[n] for n in range(1, 6)})
        lines.append(json.dumps(row))
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_a_run_trains_resumes_and_ships_what_it_trained(tiny_base: Path, tmp_path: Path) -> None:
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    from rulesage.pairs import is_pair_reader
    from services.rerank.cross import CrossScorer
    from services.rerank.scorer import RuntimeOptions
    from training.reader.recipe import Recipe, train
    from training.reader.ship import stage
    from training.runs import checkpoints

    data, work = rows(tmp_path / "data"), tmp_path / "run"
    recipe = Recipe(
        base=str(tiny_base),
        layers=1,
        batch=2,
        max_steps=2,
        max_tokens=64,
        in_batch=1,
        save_steps=1,
        threads=1,
    )
    final, run = train(data, work, recipe)
    assert run["steps"] == 2 and not run["resumed"] and len(run["losses"]) == 2
    assert (
        checkpoints(work)
        and json.loads((work / "base" / "config.json").read_text())["num_hidden_layers"] == 1
    )
    # an interrupted run resumes from its newest checkpoint
    _, again = train(data, work, recipe)
    assert again["resumed"] and again["steps"] == 2

    staged = stage(final, tmp_path / "staged", 64)
    reader = json.loads((staged / "reader.json").read_text())
    assert len(reader["score"]["weight"]) == 32 and is_pair_reader(staged)
    want = CrossEncoder(str(final), device="cpu").predict(
        [(QUESTION, t) for t in TEXTS], activation_fn=torch.nn.Identity()
    )
    got = CrossScorer(staged, RuntimeOptions(threads=1), tmp_path / "models").read(QUESTION, TEXTS)
    assert np.allclose(got, want, atol=2e-2)  # fp16 weights shipped, fp32 computed
    assert list(np.argsort(-got)) == list(np.argsort(-want))


def test_real_posts_are_repeated_and_only_the_loss_columns_are_trained_on(tmp_path: Path) -> None:
    from datasets import load_dataset

    from training.runs import weighted_rows

    data = rows(tmp_path / "data")
    loaded = load_dataset("json", data_files=str(data / "train.jsonl"), split="train")
    once = weighted_rows(loaded, 1, 12)
    assert len(once) == 4 and once.column_names[:2] == ["question", "positive"]
    assert "public" not in once.column_names and once.column_names[-1] == "negative_5"
    thrice = weighted_rows(loaded, 3, 12)
    assert len(thrice) == 6 and "public" not in thrice.column_names
    assert sorted(thrice["question"]).count(f"{QUESTION} (0)") == 3  # the one real post, three times


def test_the_reader_recipe_takes_its_options_from_the_command_line() -> None:
    from training.reader.cli import parse

    args = parse(["--max-steps", "200", "--lr", "1e-4", "--layers", "3"])
    assert (args.max_steps, args.lr, args.layers, args.batch, args.seed) == (200, 1e-4, 3, 16, 12)
    assert args.base == ""  # the shipped search encoder


def test_a_distilled_run_learns_the_teachers_order_through_listnet(tiny_base: Path, tmp_path: Path) -> None:
    """With a teacher the rows are listwise (a question, its candidates, the head's labels) and the loss is
    ListNet: a few steps on one question move the reader's order towards the labels'."""
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    from training.reader.recipe import Recipe, train

    data, work = tmp_path / "data", tmp_path / "run"
    data.mkdir()
    labels = [6.0, 3.0, 2.0, 1.0, 0.0, -1.0]
    row = {"question": QUESTION, "public": False, "docs": TEXTS, "labels": labels}
    (data / "distil.jsonl").write_text("\n".join(json.dumps(row) for _ in range(4)) + "\n")
    recipe = Recipe(
        base=str(tiny_base),
        layers=1,
        batch=2,
        max_steps=30,
        lr=2e-3,
        warmup=0.0,
        max_tokens=64,
        save_steps=100,
        threads=1,
        teacher="pools.jsonl",
    )
    final, run = train(data, work, recipe)
    assert run["steps"] == 30
    first, last = run["losses"][0]["loss"], run["losses"][-1]["loss"]
    assert last < first
    got = CrossEncoder(str(final), device="cpu").predict(
        [(QUESTION, t) for t in TEXTS], activation_fn=torch.nn.Identity()
    )
    assert int(np.argmax(got)) == 0  # the teacher's first is the reader's first


def test_a_distilled_readers_card_names_its_teacher_and_loss() -> None:
    from training.reader.ship import loss_lines

    recipe = {"teacher": "pools.jsonl", "in_batch": 2}
    data = {
        "negatives_per_row": 5,
        "distil": {
            "teacher": "reranker-int8.onnx@abc",
            "pools": "pools.jsonl",
            "docs": 8,
            "depth": 24,
            "bonus": 4.0,
            "temperature": 2.0,
            "rows": {"public": 1, "written": 2},
            "sha256": "c" * 64,
        },
    }
    text = "\n".join(loss_lines(recipe, data))
    assert "ListNetLoss" in text and "reranker-int8.onnx@abc" in text and "divided by 2" in text
    assert "MultipleNegativesRankingLoss" in "\n".join(loss_lines({"in_batch": 2}, data))


def test_a_shipped_reader_is_chosen_by_default_and_its_card_is_written_from_the_run(
    tiny_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rulesage.pairs import reader_config
    from services.rerank import choice
    from training.reader.ship import card_text, ship

    staged = tmp_path / "staged"
    staged.mkdir()
    for name in ("model.safetensors", "config.json"):
        (staged / name).write_bytes((tiny_base / name).read_bytes())
    (staged / "reader.json").write_text(
        json.dumps({"max_tokens": 64, "score": {"weight": [0.1] * 32, "bias": 0}})
    )
    cell = {"recall_at_8": 0.9, "mrr_at_10": 0.64}
    run = {
        "recipe": {
            "layers": 1,
            "in_batch": 2,
            "batch": 16,
            "lr": 1e-4,
            "warmup": 0.05,
            "max_tokens": 64,
            "seed": 12,
            "threads": 2,
        },
        "steps": 2,
        "rows": 4,
        "train_loss": 1.5,
        "wall_minutes": 0.1,
        "machine": "2 CPUs",
        "command": "rulesage train reader --max-steps 2",
        "data": {
            "questions_read": 4,
            "outcomes": {"dropped-eval-overlap": 1},
            "rows": {"train": 4, "val": 0},
            "negatives_per_row": 5,
            "negative_depth": 12,
            "space": "tuned",
            "sha256": {"train": "a" * 64, "val": "b" * 64},
        },
        "held_out": {"questions": 3, "seconds": 1.0, "fused": cell, "reader": {"top16/prior0.5": cell}},
        "depth": 16,
        "fused_prior": 0.5,
    }
    out = tmp_path / "reader"
    shipped = ship(staged, out, run, {"depth": 16, "fused_prior": 0.5, "head_share": 0.0}, card_text)
    assert (reader_config(out)["depth"], reader_config(out)["fused_prior"]) == (16, 0.5)
    card = (out / "MODEL_CARD.md").read_text()
    assert shipped["sha256"] in card and "rulesage train reader --max-steps 2" in card
    assert "| **reader, top16, prior0.5** | 0.900 | 0.640 |" in card and "<!-- figures:reader -->" in card
    # shipped where the service looks, it is the default; the head stays one setting away
    monkeypatch.setattr(choice, "READER_DIR", out)
    assert choice.chosen_model("") == out
    assert choice.chosen_model("head") == choice.MODEL_FILE


def test_a_kept_step_is_read_back_while_it_stands_and_made_again_when_not(tmp_path: Path) -> None:
    from training.runs import kept, measured, record

    made: list[int] = []

    def make() -> dict[str, object]:
        made.append(1)
        return measured(lambda: {"figure": len(made)}, weights="w1")

    path = tmp_path / "work" / "held-out.json"
    first = kept(path, make)
    assert first["figure"] == 1 and first["weights"] == "w1" and first["seconds"] >= 0
    assert kept(path, make, still=lambda s: s["weights"] == "w1") == first and len(made) == 1
    assert kept(path, make, still=lambda s: s["weights"] == "w2")["figure"] == 2  # stale: made again
    assert json.loads(path.read_text())["figure"] == 2
    trained = {"steps": 40, "losses": [{"step": i, "loss": 1.0} for i in range(1, 41)]}
    run = record(trained, "sentences", ["--asks", "a b.jsonl"], top=4)
    assert len(run["losses"]) == 20 and run["top"] == 4 and run["steps"] == 40
    assert run["command"] == "rulesage train sentences --asks 'a b.jsonl'" and "CPUs" in run["machine"]
