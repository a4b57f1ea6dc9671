"""A pair reader's folder as `rulesage train reader` and `rulesage train sentences` ship one: a one-layer
BERT's weights and config with random weights, MiniLM's tokenizer (what training reads), and reader.json
holding the score layer and the given settings; and the scores the trainer's model gives with its weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def tiny_reader(folder: Path, **settings: Any) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rulesage.embed import package_model_dir

    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(package_model_dir())).save_pretrained(str(folder))
    score = {"weight": [round(float(x), 4) for x in torch.randn(32)], "bias": 0.25}
    (folder / "reader.json").write_text(json.dumps({**settings, "score": score}))
    return folder


def trained_scores(folder: Path, max_tokens: int, question: str, texts: list[str]) -> np.ndarray:
    """The model the trainer builds (sentence-transformers' CrossEncoder: encoder, mean, one linear score)
    given the folder's weights and score layer: what the served ONNX graph must give."""
    import torch

    from training.reader.recipe import reader_model

    model = reader_model(folder, max_tokens)
    head = json.loads((folder / "reader.json").read_text())["score"]
    with torch.no_grad():
        model[2].linear.weight.copy_(torch.tensor([head["weight"]]))
        model[2].linear.bias.copy_(torch.tensor([head["bias"]]))
    return np.asarray(model.predict([(question, t) for t in texts], activation_fn=torch.nn.Identity()))
