"""The expected figures are data (rulesage/eval/figures.json): the README's tables, the model cards' and the
gate's floors are generated from it by `rulesage figures`, and disagree with it only by mistake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rulesage.cli import main
from rulesage.eval import figures

ROOT = Path(__file__).resolve().parents[2]


def test_every_shown_figure_is_the_figures_files() -> None:
    """Edit a table in the README or a card, or a figure in figures.json without `rulesage figures`: this
    fails, naming the stale file."""
    assert figures.sync(ROOT, check=True) == []


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for rel in (*figures.TARGETS, "rulesage/eval/figures.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    return tmp_path


def test_changing_a_figure_updates_the_readme_the_card_and_the_gate(copy: Path) -> None:
    path = copy / "rulesage/eval/figures.json"
    data = json.loads(path.read_text())
    data["conditions"]["encoder/tuned"]["figures"]["gold-real-dev"]["recall_at_8"] = 0.123
    gate = data["gate"]["condition"]
    before = figures.floors(data)["gold-dev"]["recall_at_8"]
    data["conditions"][gate]["figures"]["gold-dev"]["recall_at_8"] = 0.5
    path.write_text(json.dumps(data))

    changed = figures.sync(copy, check=True)
    assert set(changed) == {
        "README.md",
        "rulesage/encoder/MODEL_CARD.md",
        "services/rerank/model/MODEL_CARD.md",  # its reader table's shipped row is this condition
        "rulesage/eval/gate.toml",
    }
    assert (copy / "README.md").read_text() == (ROOT / "README.md").read_text()  # check changes nothing

    assert set(figures.sync(copy)) == set(changed)
    assert ".907 / .123" in (copy / "README.md").read_text()
    assert ".907 / .123" in (copy / "rulesage/encoder/MODEL_CARD.md").read_text()
    gate_toml = (copy / "rulesage/eval/gate.toml").read_text()
    n = data["conditions"][gate]["figures"]["gold-dev"]["n_answerable"]
    floor = figures.floors(data)["gold-dev"]["recall_at_8"]
    assert floor != before and floor <= 0.5 - 2 / n and f"recall_at_8 = {floor:.2f}" in gate_toml
    assert figures.sync(copy, check=True) == []


def test_the_gate_reads_the_generated_floors() -> None:
    import tomllib

    from rulesage.eval import gate

    config = tomllib.loads(gate.CONFIG.read_text())
    assert config["floors"] == figures.floors(figures.load())
    assert set(config["floors"]) == {"gold-dev", "gold-real-dev"}


def test_a_block_naming_an_unknown_table_is_a_clear_error(copy: Path) -> None:
    readme = copy / "README.md"
    readme.write_text(readme.read_text() + "\n<!-- figures:nowhere -->\n<!-- /figures:nowhere -->\n")
    with pytest.raises(figures.FiguresError, match=r"README\.md: unknown table 'nowhere'"):
        figures.sync(copy, check=True)


def test_a_table_shown_nowhere_is_an_error(copy: Path) -> None:
    path = copy / "rulesage/eval/figures.json"
    data = json.loads(path.read_text())
    data["tables"]["orphan"] = data["tables"]["encoder"]
    path.write_text(json.dumps(data))
    with pytest.raises(figures.FiguresError, match="shown nowhere: orphan"):
        figures.sync(copy, check=True)


def test_a_recorded_run_keeps_its_command_and_every_figure(tmp_path: Path) -> None:
    path = tmp_path / "figures.json"
    path.write_text(json.dumps({"conditions": {}, "tables": {}}))
    report = {
        "n": 10,
        "n_answerable": 8,
        "recall_at_8": 0.75,
        "per_arm": {"dense": {"n": 8, "recall_at_8": 0.5}},
        "degraded": {"arm": 1, "fusion": 0, "rerank": 0, "answer": 0},
        "by_game": {"x": {}},
    }
    figures.record("c", "rulesage eval --gold G", {"gold-dev": report}, path=path)
    cond = json.loads(path.read_text())["conditions"]["c"]
    assert cond["command"] == "rulesage eval --gold G"
    assert cond["figures"]["gold-dev"] == {
        "n": 10,
        "n_answerable": 8,
        "recall_at_8": 0.75,
        "arm.dense.recall_at_8": 0.5,
        "degraded": 1,
    }


def test_the_command_line_checks_and_says_what_is_stale(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["figures", "--check"]) == 0


def test_figures_print_as_the_tables_do() -> None:
    assert figures.fmt(0.9066) == ".907"
    assert figures.fmt(0.9, "long") == "0.900"
    assert figures.fmt(1.0) == "1.000"
    assert figures.fmt(None) == "–"
    assert figures.fmt(1340) == "1,340"
    assert figures.fmt(78.94, "ms") == "78.9"
