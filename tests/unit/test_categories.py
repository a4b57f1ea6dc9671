"""The category map and its classifier (rulesage.core.categories): parsing, section selection, the call."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from rulesage.core import categories as cat
from rulesage.core.categories import MapError

ROOT = Path(__file__).resolve().parents[2]
MAPS = sorted((ROOT / "data" / "categories").glob("*.toml"))
assert MAPS, "the shipped category maps are missing"


def _map(**over: object) -> dict[str, object]:
    c: dict[str, object] = {
        "name": "triggered_abilities",
        "description": "When and whenever abilities.",
        "examples": ["Which trigger goes on the stack first?"],
        "rules": ["603"],
    }
    c.update(over)
    return {"game": "mtg", "category": [c]}


def test_a_valid_map_parses_with_its_sections() -> None:
    m = cat.parse_map(_map(sections=["Combat > Actions in Combat"]), "m.toml", "mtg")
    (c,) = m.categories
    assert c.sections == (("Combat", "Actions in Combat"),)
    assert c.rules == ("603",)
    assert c.texts[0] == "When and whenever abilities."
    assert c.section_labels() == ["Combat > Actions in Combat", "rule 603"]


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"name": "Bad Name"}, "snake_case"),
        ({"examples": []}, "at least one example"),
        ({"rules": ["six-oh-three"]}, "not a rule number"),
        ({"rules": [], "sections": []}, "maps to no section"),
        ({"sections": ["Combat >  > Attack"]}, "empty heading"),
        ({"colour": "blue"}, "unknown keys"),
        ({"description": ""}, "missing 'description'"),
    ],
)
def test_a_bad_category_is_named_in_the_error(over: dict[str, object], needle: str) -> None:
    with pytest.raises(MapError, match=needle) as err:
        cat.parse_map(_map(**over), "m.toml", "mtg")
    assert "m.toml" in str(err.value)


def test_the_map_must_be_for_the_game_the_shelf_names() -> None:
    with pytest.raises(MapError, match="for game 'mtg'"):
        cat.parse_map(_map(), "m.toml", "dnd-5e-srd")
    with pytest.raises(MapError, match="duplicate name"):
        data = _map()
        data["category"] = [data["category"][0], data["category"][0]]  # type: ignore[index]
        cat.parse_map(data, "m.toml")


def test_heading_paths_select_by_prefix_ignoring_spacing_and_case() -> None:
    assert cat.heading_matches(["Combat", "Actions in Combat", "Dash"], ("combat", "Actions  in Combat"))
    assert not cat.heading_matches(["Combat"], ("Combat", "Actions in Combat"))
    assert not cat.heading_matches(["Spellcasting", "Combat"], ("Combat",))


@pytest.mark.parametrize(
    ("rule", "prefix", "hit"),
    [
        ("603", "603", True),
        ("603.3b", "603", True),
        ("6031", "603", False),
        ("702.19c", "702.19", True),
        ("702.190", "702.19", False),
        ("702.1", "702.19", False),
        ("702.19", "702.1", False),
        ("113.3c", "113.3c", True),
        (None, "603", False),
    ],
)
def test_rule_prefixes_select_the_rule_and_its_sub_rules_only(
    rule: str | None, prefix: str, hit: bool
) -> None:
    assert cat.rule_matches(rule, prefix) is hit


def test_a_leaf_row_is_selected_through_the_rule_it_belongs_to() -> None:
    (c,) = cat.parse_map(_map(), "m.toml").categories
    assert cat.selects(c, [], ("603.3b", "603.3"))
    assert cat.selects(c, [], (None, "603.3"))
    assert not cat.selects(c, ["Combat"], ("510.1", "510"))


def test_a_category_scores_by_its_best_few_texts_not_one_lucky_example() -> None:
    pairs = [("a", 0.9), ("a", 0.1), ("a", 0.1), ("b", 0.6), ("b", 0.6), ("b", 0.6)]
    s = cat.scores(pairs, top=3)
    assert s["a"] == pytest.approx(1.1 / 3) and s["b"] == pytest.approx(0.6)
    assert cat.scores(pairs, top=1)["a"] == pytest.approx(0.9)


def test_the_call_is_the_softmax_winner_or_an_abstention() -> None:
    sure = cat.call({"a": 0.70, "b": 0.55, "c": 0.50}, threshold=0.5, temperature=0.02)
    assert sure.name == "a" and sure.confidence > 0.99 and sure.runner_up == "b"
    assert sum(sure.scores.values()) == pytest.approx(1.0)
    close = cat.call({"a": 0.60, "b": 0.595}, threshold=0.6, temperature=0.02)
    assert close.name is None and close.best == "a" and close.threshold == 0.6
    assert 0.5 < close.confidence < 0.6 and close.runner_up_confidence > 0.4
    assert cat.call({}).name is None


def test_cosine_pairs_normalise_the_question() -> None:
    texts = np.asarray([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    pairs = cat.cosine_pairs(np.asarray([3.0, 4.0]), texts, ["x", "y"])
    assert pairs == [("x", pytest.approx(0.6)), ("y", pytest.approx(0.8))]


def test_learned_examples_join_their_categories_and_need_provenance() -> None:
    m = cat.parse_map({**_map(), "learned": "mtg.learned.jsonl"}, "m.toml", "mtg")
    assert m.learned == "mtg.learned.jsonl"
    rows = [{"category": "triggered_abilities", "question": "who orders  my triggers?", "source": "written"}]
    (c,) = cat.with_learned(m, rows, "mtg.learned.jsonl").categories
    assert c.learned == ("who orders my triggers?",)
    assert c.texts[-1] == "who orders my triggers?" and c.kinds()[-1] == "learned"
    assert len(c.kinds()) == len(c.texts)
    with pytest.raises(MapError, match="row 1: category 'combat' is not in the map"):
        cat.with_learned(m, [{**rows[0], "category": "combat"}], "x.jsonl")
    with pytest.raises(MapError, match="no provenance"):
        cat.with_learned(m, [{"category": "triggered_abilities", "question": "q?"}], "x.jsonl")
    with pytest.raises(MapError, match="unknown keys"):
        cat.parse_map({**_map(), "colour": "red"}, "m.toml")


def _training_questions() -> set[str]:
    out = set()
    for path in (ROOT / "data" / "questions").glob("questions-*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.add(" ".join(json.loads(line)["question"].split()))
    return out


@pytest.mark.parametrize("path", MAPS, ids=lambda p: p.name)
def test_every_shipped_map_parses_and_learns_only_from_the_training_questions(path: Path) -> None:
    m = cat.parse_map(tomllib.loads(path.read_text(encoding="utf-8")), path.name, path.stem)
    assert len(m.categories) >= 10
    assert all(len(c.examples) >= 5 for c in m.categories)
    assert m.learned is not None
    rows = [json.loads(x) for x in (path.parent / m.learned).read_text(encoding="utf-8").splitlines()]
    learned = cat.with_learned(m, rows, m.learned)
    assert sum(len(c.learned) for c in learned.categories) == len(rows) > 100
    # the learned examples are training questions (data/questions, whose rows the training guard keeps apart
    # from the evaluation's), never questions from anywhere else
    training = _training_questions()
    assert all(" ".join(r["question"].split()) in training for r in rows)


def test_the_demo_shelf_names_maps_that_load_with_their_learned_examples() -> None:
    from rulesage.ingest.categories import read_map
    from rulesage.ingest.shelf import load_shelf

    shelf = load_shelf(ROOT / "demo" / "shelf.toml")
    mapped = {g.slug: g.categories for g in shelf.games if g.categories is not None}
    assert set(mapped) == {"dnd-5e-srd", "blades-in-the-dark"}
    for slug, path in mapped.items():
        m, sha = read_map(path, slug)
        assert len(sha) == 64
        assert m.game == slug and all(c.learned for c in m.categories[:3])
