"""The careful reader's question tower: the encoder's top layers tuned over cached lower states."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from rulesage.embed import weights_dir
from training.reranker.tower import Tower, export

ROWS = [[101, 2064, 1996, 27307, 2175, 2067, 102], [101, 2129, 2079, 1045, 102]]


def full(tower: Tower, row: list[int]) -> torch.Tensor:
    ids = torch.tensor([row])
    with torch.no_grad():
        return tower.bert(
            input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids)
        ).last_hidden_state


def test_the_tuned_layers_over_cached_lower_states_are_the_encoder() -> None:
    tower = Tower(weights_dir("minilm"), 2)
    lower = tower.lower(ROWS)
    assert [s.shape for s in lower] == [(7, 384), (5, 384)] and lower[0].dtype == np.float16
    # one padded batch of both: each question as the whole encoder reads it alone (fp16 cache)
    for up, row in zip(tower.upper(lower), ROWS, strict=True):
        assert up.shape == (1, len(row), 384)
        assert torch.allclose(up, full(tower, row), atol=0.02)
    # only the top two layers train
    names = {n.split(".")[2] for n, p in tower.bert.named_parameters() if p.requires_grad}
    assert names == {"4", "5"}
    with pytest.raises(ValueError, match=r"1\.\.6"):
        Tower(weights_dir("minilm"), 0)


def test_a_step_moves_the_tuned_layers_only_and_the_export_serves_them(tmp_path: Path) -> None:
    torch.manual_seed(0)
    tower = Tower(weights_dir("minilm"), 1)
    lower = tower.lower(ROWS)
    frozen = {n: p.detach().clone() for n, p in tower.bert.named_parameters() if not p.requires_grad}
    opt = torch.optim.SGD(tower.trained(), lr=0.5)
    torch.stack([u.pow(2).mean() for u in tower.upper(lower)]).sum().backward()
    opt.step()
    assert all(torch.equal(p, frozen[n]) for n, p in tower.bert.named_parameters() if n in frozen)
    tuned = tower.upper(lower)[0].detach()
    assert not torch.allclose(tuned, full(Tower(weights_dir("minilm"), 1), ROWS[0]), atol=0.05)
    # the served graph: the whole tuned encoder, int8, close to what was trained
    import onnxruntime as ort

    path = export(tower, tmp_path)
    assert path.name == "question-int8.onnx" and path.is_file()
    ids = np.asarray([ROWS[0]], dtype=np.int64)
    served = ort.InferenceSession(str(path)).run(
        None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    )[0]
    cos = float(
        np.sum(served[0] * tuned[0].numpy()) / (np.linalg.norm(served[0]) * np.linalg.norm(tuned[0].numpy()))
    )
    assert cos > 0.95


PASSAGES = [
    "The robber moves to any other hex when a seven is rolled; it may go back to the desert.",
    "Each player collects resources for every settlement bordering a hex whose number was rolled.",
    "A city produces two resource cards instead of one.",
    "Longest road goes to the first player with five continuous road segments.",
    "Players may trade resources with each other on their own turn.",
    "Development cards are bought with one ore, one wool and one grain.",
]
QUESTIONS = [
    ("my friend rolled a seven, can the robber sit on the desert again?", 0),
    ("do I get resources from a hex next to my settlement when its number comes up?", 1),
    ("how many cards does a city make?", 2),
    ("who gets the longest road card?", 3),
    ("can I trade with another player when it is not my turn?", 4),
    ("what does a development card cost?", 5),
]


def test_the_trainer_tunes_the_question_layers_beside_the_head(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The loop with --question-layers: question states come from the tower's top layers over cached lower
    states, one step trains head and tower together, and the kept epoch's tower is restored."""
    from types import SimpleNamespace

    from training.questions import Group
    from training.reranker.loop import Trainer, parse

    monkeypatch.setenv("RULESAGE_STATE_DIR", str(tmp_path / "state"))
    others = list(range(len(PASSAGES)))
    groups = [
        Group(
            q,
            1,
            pos,
            [i for i in others if i != pos][:3],
            "questions",
            "val" if n >= 4 else "train",
            {pos},
            others,
            public=n % 2 == 0,
        )
        for n, (q, pos) in enumerate(QUESTIONS)
    ]
    index = SimpleNamespace(
        passages=[SimpleNamespace(text=t, doc_kind="rulebook", game="catan") for t in PASSAGES]
    )
    args = parse(
        [
            "--base",
            "minilm",
            "--question-layers",
            "1",
            "--epochs",
            "2",
            "--groups-per-step",
            "2",
            "--threads",
            "1",
            "--public-repeat",
            "2",
        ]
    )
    trainer = Trainer(args, groups, {1: index})
    assert trainer.tower is not None and trainer.q_states[0].dtype == np.float16
    before = {n: p.detach().clone() for n, p in trainer.tower.named_parameters()}
    head, report = trainer.fit()
    assert [h["epoch"] for h in report["history"]] == [0, 1, 2]
    moved = {n for n, p in trainer.tower.named_parameters() if not torch.equal(p, before[n])}
    kept_epoch = max(report["history"][1:], key=lambda h: (h["mrr@10"], h["recall@8"]))
    if kept_epoch["mrr@10"] > report["history"][0]["mrr@10"]:
        assert moved and all(".layer.5." in n for n in moved)  # the top layer only
    # the kept state is what scores now: the val figures read again match the kept epoch's
    again = trainer.val_metrics(head, [n for n, g in enumerate(groups) if g.split == "val"])
    best = max(report["history"], key=lambda h: (h["mrr@10"], h["recall@8"]))
    assert again["mrr@10"] == pytest.approx(best["mrr@10"]) and again["recall@8"] == pytest.approx(
        best["recall@8"]
    )


def test_the_trainer_tunes_the_window_layers_beside_the_head(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The loop with --window-layers: windows' states come from the tower's top layers over cached lower
    states (one pass a step, with gradient), the question keeps the frozen encoder, and what the head reads
    when measuring is the kept epoch's tower over every window."""
    from types import SimpleNamespace

    from training.questions import Group
    from training.reranker.loop import Trainer, parse

    monkeypatch.setenv("RULESAGE_STATE_DIR", str(tmp_path / "state"))
    others = list(range(len(PASSAGES)))
    groups = [
        Group(q, 1, pos, [i for i in others if i != pos][:3], "questions", "val" if n >= 4 else "train",
              {pos}, others, public=n % 2 == 0)
        for n, (q, pos) in enumerate(QUESTIONS)
    ]  # fmt: skip
    index = SimpleNamespace(
        passages=[SimpleNamespace(text=t, doc_kind="rulebook", game="catan") for t in PASSAGES]
    )
    args = parse(
        ["--base", "minilm", "--window-layers", "1", "--window-lr", "1e-3", "--epochs", "2",
         "--groups-per-step", "2", "--threads", "1"]
    )  # fmt: skip
    trainer = Trainer(args, groups, {1: index})
    assert trainer.tower is None and trainer.window_tower is not None
    assert len(trainer.w_lower) == len(PASSAGES) and trainer.w_lower[(1, 0)].dtype == np.float16
    # before training, the windows the head reads are the whole encoder's
    row = trainer.cache.tokens.windows([PASSAGES[0]])[0]
    assert np.allclose(trainer.cache.windows[(1, 0)], full(trainer.window_tower, row)[0].numpy(), atol=0.02)
    # a step's pass: each window once, with a gradient to the tuned layer
    step = trainer.windows([0, 1])
    assert step is not None and set(step) == {(1, i) for i in others[:4]} | {(1, 0), (1, 1)}
    torch.stack([s.pow(2).mean() for s in step.values()]).sum().backward()
    grads = {n for n, p in trainer.window_tower.named_parameters() if p.grad is not None and p.grad.any()}
    assert grads and all(".layer.5." in n for n in grads)  # the top layer only
    trainer.window_tower.zero_grad()
    head, report = trainer.fit()
    assert report["history"][2]["loss"] < report["history"][1]["loss"]
    best = max(report["history"], key=lambda h: (h["mrr@10"], h["recall@8"]))
    # the cache holds the kept epoch's tower: the frozen encoder's states again when epoch 0 is kept
    frozen = np.allclose(
        trainer.cache.windows[(1, 0)], full(Tower(weights_dir("minilm"), 1), row)[0].numpy(), atol=0.02
    )
    assert frozen == (best["epoch"] == 0)
    again = trainer.val_metrics(head, [n for n, g in enumerate(groups) if g.split == "val"])
    assert again["mrr@10"] == pytest.approx(best["mrr@10"]) and again["recall@8"] == pytest.approx(
        best["recall@8"]
    )
