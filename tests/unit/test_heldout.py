"""The held-out split as a gold file: only rows no trainer saw, their evidence matched by the gold rule."""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatch
from pathlib import Path

from rulesage.core.text import normalise
from rulesage.eval.gold import found
from training.heldout import DEV_QUESTIONS, gold_rows, rule_quotes
from training.questions import Question, load_questions, split_of

RULE_704_5 = [
    "704.5. The state-based actions are as follows:\n\n704.5a If a player has 0 or less life, that player"
    " loses the game.\n\n704.5f If a creature has toughness 0 or less, it's put into its owner's graveyard."
    " Regeneration can't replace this event.",
    "704.5. The state-based actions are as follows:\n\n704.5k If two or more permanents have the supertype"
    " world, all except the one that has had the world supertype for the shortest amount of time are put"
    " into their owners' graveyards.",
]
RULE_101_2 = [
    "101.2. When a rule or effect allows or directs something to happen, and another effect states that it"
    " can't happen, the \"can't\" effect takes precedence."
]


def question(
    text: str, *, quote: str = "", rule: str = "", source: str = "https://example.org/t/1"
) -> Question:
    return Question(
        game="mtg" if rule else "dnd-5e-srd",
        doc="mtg-cr" if rule else "srd-5.1",
        page=None,
        quote=quote,
        question=text,
        source="questions",
        rule=rule,
        provenance=source,
    )


def held(n: int, **kw: str) -> list[Question]:
    """``n`` questions on distinct quotes or rules that the shared split holds out."""
    out: list[Question] = []
    i = 0
    while len(out) < n:
        i += 1
        q = question(f"Question {i}?", **{k: v.format(i=i) for k, v in kw.items()})
        if split_of(q) == "val":
            out.append(q)
    return out


def test_a_sub_rule_is_quoted_by_its_own_line() -> None:
    assert rule_quotes(RULE_704_5, "704.5f") == [
        "704.5f If a creature has toughness 0 or less, it's put into its owner's graveyard."
        " Regeneration can't replace this event."
    ]


def test_a_whole_rule_is_found_in_any_of_its_rows() -> None:
    # a titled rule: each row's first line of text; a rule printed on its first line: that line
    assert rule_quotes(RULE_704_5, "704.5") == [
        "704.5a If a player has 0 or less life, that player loses the game.",
        "704.5k If two or more permanents have the supertype world, all except the one that has had the world"
        " supertype for the shortest amount of time are put into their owners' graveyards.",
    ]
    assert rule_quotes(RULE_101_2, "101.2") == [RULE_101_2[0].split("\n")[0]]
    assert rule_quotes([], "999.9") == []


def test_only_held_out_real_posts_become_gold_rows_matched_by_the_gold_rule() -> None:
    real = held(3, quote="Cover {i} is granted by any creature in the way, whether friend or foe of yours.")
    written = held(1, quote="Written {i} questions on this quote stay out unless asked for by the caller.")
    written = [Question(**{**q.__dict__, "provenance": "written"}) for q in written]
    trained = next(
        q
        for i in range(100)
        if split_of(q := question(f"T {i}?", quote=f"Trained {i} is on the other side of the split."))
        == "train"
    )
    silent = Question(**{**real[0].__dict__, "answerable": False, "question": "Silent?"})
    rows, counts = gold_rows([*real, *written, trained, silent], {})
    assert len(rows) == 3 and counts["real-posts"] == 3 and counts["written-skipped"] == 1
    assert all(r["answerable"] and r["source"].startswith("https://") for r in rows)
    assert len({r["id"] for r in rows}) == 3
    with_written, _ = gold_rows([*real, *written], {}, written=True)
    assert len(with_written) == 4
    # the evidence finds the passage that holds the quote, through the one gold matching rule
    row = next(r for r in rows if r["question"] == real[0].question)
    passage = {"doc_key": "srd-5.1", "page_start": 96, "page_end": 96, "text": "Intro. " + real[0].quote}
    assert found([passage], row) and not found([{**passage, "doc_key": "other"}], row)


def test_a_rule_row_needs_the_rule_printed() -> None:
    [q] = held(1, rule="{i}.5f")
    rule = q.rule.removesuffix("f")
    texts = [t.replace("704.5", rule) for t in RULE_704_5]
    rows, counts = gold_rows([q], {})
    assert rows == [] and counts["rule-not-printed"] == 1
    rows, _ = gold_rows([q], {(q.doc, q.rule): texts})
    [ev] = rows[0]["evidence"]
    assert ev["rule"] == q.rule and ev["quote"].startswith(f"{q.rule} If a creature has toughness 0")
    sba = {"doc_key": "mtg-cr", "page_start": None, "page_end": None, "text": texts[0]}
    assert found([sba], rows[0]) and not found([{**sba, "text": texts[1]}], rows[0])


def test_every_row_of_a_development_set_becomes_gold_silent_ones_included() -> None:
    trained = next(
        q
        for i in range(100)
        if split_of(q := question(f"T {i}?", quote=f"Trained {i} is on the other side of the split."))
        == "train"
    )
    silent = Question(**{**trained.__dict__, "answerable": False, "quote": "", "question": "Silent?"})
    assert gold_rows([trained, silent], {}) == ([], Counter())
    rows, counts = gold_rows([trained, silent], {}, every=True)
    assert counts == Counter({"real-posts": 1, "silent": 1})
    answered, quiet = sorted(rows, key=lambda r: not r["answerable"])
    assert answered["evidence"][0]["quote"] == trained.quote
    assert quiet["answerable"] is False and quiet["evidence"] == [] and "unanswerable" in quiet["tags"]


def test_no_trainer_reads_the_development_set_and_it_shares_no_post_with_training() -> None:
    root = Path(__file__).resolve().parents[2]
    dev = sorted(root.glob(DEV_QUESTIONS))
    assert not any(fnmatch(str(p.relative_to(root)), "data/questions/questions-*.jsonl") for p in dev)
    trained = load_questions(str(root / "data/questions/questions-*.jsonl"), silent=True)
    texts = {normalise(q.question) for q in trained}
    sources = {q.provenance for q in trained if q.public_post}
    for q in load_questions(str(root / DEV_QUESTIONS), silent=True):
        assert q.public_post, f"a development row is a real post with its URL: {q.question[:60]!r}"
        assert normalise(q.question) not in texts and q.provenance not in sources, q.provenance
