"""Match small, read big: the section text around a passage, and the messages a model is shown."""

from __future__ import annotations

from services.answer.citations import Rejection, ShownPassage
from services.answer.context import build_context, surroundings
from services.answer.loop import CardView, PriorView, Prompt
from services.answer.prompt import messages

BEFORE = "Combat rounds last six seconds. " * 20
PASSAGE = "On your turn, you can move a distance up to your speed."
AFTER = " Difficult terrain costs 1 extra foot for every foot you move." * 20
SECTION = BEFORE + PASSAGE + AFTER


def test_surroundings_cut_either_side_of_the_passage_within_the_budget() -> None:
    before, after = surroundings(SECTION, PASSAGE, 300)
    assert PASSAGE not in before and PASSAGE not in after
    assert len(before.lstrip("…")) + len(after.rstrip("…")) <= 300
    assert before.endswith("Combat rounds last six seconds.")
    assert after.startswith("Difficult terrain costs")


def test_an_unused_side_gives_its_budget_to_the_other() -> None:
    before, after = surroundings(PASSAGE + AFTER, PASSAGE, 600)
    assert before == ""
    assert len(after.rstrip("…")) > 400


def test_a_passage_stored_with_other_spacing_is_still_found() -> None:
    respaced = PASSAGE.replace(" ", "  \n", 3)
    section = BEFORE + respaced + AFTER
    before, after = surroundings(section, PASSAGE, 200)
    assert "you can move" not in before and after.startswith("Difficult")


def test_a_passage_not_in_its_section_gets_the_section_opening() -> None:
    before, after = surroundings(BEFORE, "Something else entirely, said here.", 100)
    assert before.startswith("Combat rounds") and after == ""


def test_build_context_shares_the_budget_and_skips_passages_without_a_section() -> None:
    a = ShownPassage(id=1, text=PASSAGE, section_id=10)
    b = ShownPassage(id=2, text="No section for me.", section_id=0)
    ctx = build_context([a, b], {10: SECTION}, 400)
    assert set(ctx) == {1}


def test_messages_show_passages_as_citable_and_context_as_read_only() -> None:
    p = ShownPassage(
        id=7,
        text=PASSAGE,
        doc_title="SRD 5.1",
        page_start=90,
        heading_path=("Combat", "Movement"),
        rule_id="",
    )
    prompt = Prompt("how far can I move?", "dnd-5e-srd", (p,), {7: ("before text", "after text")})
    system, user = messages(prompt)
    assert "lookup_rules" not in system["content"]
    body = user["content"]
    assert "passage_id 7: SRD 5.1, p. 90, Combat > Movement" in body
    assert body.index("before text") < body.index(f"PASSAGE 7 (quote from here):\n{PASSAGE}")
    assert "CONTEXT after (read only, do not quote):\nafter text" in body
    assert body.rstrip().endswith("Question: how far can I move?")
    assert "rejected" not in body


def test_the_tool_is_described_only_when_offered_and_the_retry_shows_the_rejection() -> None:
    p = ShownPassage(id=7, text=PASSAGE, rule_id="702.19b")
    offered = messages(Prompt("q?", "mtg", (p,), tool_offered=True))
    assert "lookup_rules" in offered[0]["content"]
    retry = messages(
        Prompt("q?", "mtg", (p,), rejection=Rejection("quote is not verbatim", 7, "made up words"))
    )
    assert "lookup_rules" not in retry[0]["content"]
    assert (
        "Previous attempt rejected: quote is not verbatim: passage 7: 'made up words'" in retry[1]["content"]
    )


def test_earlier_rulings_come_after_every_passage_labelled_as_never_citable() -> None:
    kept = ShownPassage(id=7, text=PASSAGE, doc_title="SRD 5.1")
    fetched = ShownPassage(id=9, text="Rule nine, fetched by the tool round.", rule_id="9")
    prior = PriorView(
        id="abc234defg", question="how far may I walk?", answer="Up to your speed. " * 60, score=2.5
    )
    prompt = Prompt("how far can I move?", "dnd-5e-srd", (kept, fetched), fetched=(9,), priors=(prior,))
    system, user = messages(prompt)
    body = user["content"]
    assert "never outrank a passage" in system["content"] and "never be quoted or cited" in system["content"]
    head = body.index("EARLIER RULINGS of this site (examples only, not the rulebook")
    assert head > body.index("PASSAGE 9 (quote from here)") > body.index("PASSAGE 7 (quote from here)")
    assert head < body.index("Question: how far can I move?")
    earlier = body[head:]
    assert "earlier ruling 1 (rated 2.5/3; not a passage, not citable)" in earlier
    assert "Question asked: how far may I walk?" in earlier and "passage_id" not in earlier
    assert len(earlier) < 900  # a long earlier answer is cut to its opening
    without = messages(Prompt("how far can I move?", "dnd-5e-srd", (kept,)))
    assert "EARLIER RULINGS" not in without[0]["content"] + without[1]["content"]


def test_named_cards_come_before_the_passages_labelled_as_never_citable() -> None:
    kept = ShownPassage(id=7, text="A creature with toughness 0 or less is put into its owner's graveyard.")
    rulings = tuple(f"Ruling {i} on the card." for i in range(1, 7))
    grasp = CardView("Grasp of Darkness", "Instant", "Target creature gets -4/-4 until end of turn.", rulings)
    golem = CardView("Myr Enforcer", "Artifact Creature — Myr", "")
    prompt = Prompt("does it die?", "mtg", (kept,), cards=(grasp, golem))
    system, user = messages(prompt)
    body = user["content"]
    assert "they are NOT the rulebook" in system["content"]
    head = body.index("CARDS named in the question")
    assert head < body.index("PASSAGE 7 (quote from here)") < body.index("Question: does it die?")
    cards = body[head : body.index("Passages:")]
    assert "--- Grasp of Darkness (Instant)\nTarget creature gets -4/-4" in cards
    assert "Official ruling: Ruling 4 on the card." in cards and "Ruling 5" not in cards  # the first few
    assert "--- Myr Enforcer (Artifact Creature — Myr)\n(no rules text)" in cards
    assert "passage_id" not in cards
    without = messages(Prompt("does it die?", "mtg", (kept,)))
    assert "CARDS" not in without[0]["content"] + without[1]["content"]


def test_a_language_model_is_shown_the_selectors_reading_after_the_passages() -> None:
    from services.answer.loop import Pick, Reading

    p = ShownPassage(id=7, text=PASSAGE, doc_title="SRD 5.1", page_start=90)
    gone = Pick(99, 0, 10, 0.4)  # a pick of a passage not shown is never rendered
    reading = Reading((Pick(7, 0, len(PASSAGE), 0.83), gone), 0.61, 0.32, "answerer@abc")
    _, user = messages(Prompt("how far can I move?", "dnd", (p,), reading=reading))
    body = user["content"]
    hint = body.index("trained quote selector")
    assert body.index(f"PASSAGE 7 (quote from here):\n{PASSAGE}") < hint < body.index("Question:")
    assert f'- passage_id 7 (0.83): "{PASSAGE}"' in body and "passage_id 99" not in body
    assert "answer the question: 0.61 (they likely answer it)" in body
    _, low = messages(Prompt("q?", "dnd", (p,), reading=Reading(reading.picks, 0.2, 0.32, "x")))
    assert "(they likely do NOT answer it)" in low["content"]
    _, none = messages(Prompt("q?", "dnd", (p,)))
    assert "trained quote selector" not in none["content"]
