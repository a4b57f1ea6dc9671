"""The careful reader's pure logic: the window, the deal and the guarantees."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rulesage.core.deal import deal, dealt_positions
from services.rerank.guarantees import ERRATA_TOP, RULEBOOK_TOP, Candidate, ranked, select
from services.rerank.window import HEAD_CHARS, JOINER, TAIL_CHARS, WINDOW_CHARS, in_window, window

# -- window -------------------------------------------------------------------------------------------------


def test_window_shape_is_595_joiner_600() -> None:
    assert (HEAD_CHARS, len(JOINER), TAIL_CHARS) == (595, 5, 600)
    text = "".join(chr(0x41 + i % 26) for i in range(3000))
    w = window(text)
    assert len(w) == WINDOW_CHARS
    assert w == text[:595] + " ... " + text[-600:]


def test_short_passages_are_read_whole() -> None:
    for n in (0, 1, 599, 1199, 1200):
        text = "x" * n
        assert window(text) == text


def test_a_rule_deep_inside_a_long_passage_is_inside_the_window() -> None:
    # The Monopoly case: turn rules start 1,812 characters into a 2,052-character passage.
    rule = "TURNS: Starting with the Banker, each player in turn throws the dice."
    text = "a" * 1812 + rule
    text += "b" * (2052 - len(text))
    assert len(text) == 2052
    assert in_window(text, 1812, 1812 + len(rule))
    assert rule in window(text)


def test_the_middle_of_a_long_passage_is_not_read() -> None:
    text = "a" * 700 + "MIDDLE" + "b" * 1400
    assert not in_window(text, 700, 706)
    assert "MIDDLE" not in window(text)


@given(st.text(max_size=5000))
def test_window_never_exceeds_1200_characters(text: str) -> None:
    w = window(text)
    assert len(w) <= WINDOW_CHARS
    assert w.startswith(text[:HEAD_CHARS])
    assert w.endswith(text[-TAIL_CHARS:] if text else "")


@given(st.integers(min_value=1201, max_value=6000), st.data())
def test_in_window_agrees_with_the_window_text(n: int, data: st.DataObject) -> None:
    text = "".join(chr(0x4E00 + i) for i in range(n))  # every character distinct
    start = data.draw(st.integers(0, n - 1))
    end = data.draw(st.integers(start + 1, n))
    assert in_window(text, start, end) == (text[start:end] in window(text))


# -- deal ---------------------------------------------------------------------------------------------------


def test_deal_five_is_1_3_5_4_2() -> None:
    assert deal([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]


def test_deal_eight_is_ends_first() -> None:
    assert deal([1, 2, 3, 4, 5, 6, 7, 8]) == [1, 3, 5, 7, 8, 6, 4, 2]
    assert dealt_positions(8) == [0, 2, 4, 6, 7, 5, 3, 1]


def test_deal_small_cases() -> None:
    assert deal([]) == []
    assert deal(["a"]) == ["a"]
    assert deal(["a", "b"]) == ["a", "b"]


@given(st.lists(st.integers(), max_size=40, unique=True))
def test_deal_puts_the_two_best_at_the_ends_and_the_worst_in_the_middle(items: list[int]) -> None:
    out = deal(items)
    assert sorted(out) == sorted(items)
    if len(items) >= 2:
        assert out[0] == items[0] and out[-1] == items[1]
    # Distance from the nearer end never decreases with rank.
    dist = [min(out.index(x), len(out) - 1 - out.index(x)) for x in items]
    assert dist == sorted(dist)


# -- guarantees ---------------------------------------------------------------------------------------------

BOOK = Candidate("rulebook", "catan")
OTHER = Candidate("rulebook", "catan-seafarers")
EXP = Candidate("expansion", "catan")
ERRATA = Candidate("errata", "catan")


def test_plain_top_k_when_no_guarantee_is_needed() -> None:
    cands = [BOOK, EXP, EXP, EXP]
    sel = select(cands, [0.9, 0.5, 0.7, 0.1], "catan", keep=2)
    assert sel.kept == [0, 2]
    assert sel.fired == []


def test_rulebook_top_keeps_its_place() -> None:
    cands = [EXP, EXP, EXP, OTHER, BOOK, BOOK]
    scores = [0.9, 0.8, 0.7, 0.95, 0.2, 0.3]
    sel = select(cands, scores, "catan", keep=3)
    assert sel.fired == [RULEBOOK_TOP]
    assert 5 in sel.kept and 4 not in sel.kept  # the best-scored passage of the asked game's rulebook
    assert sel.kept == [3, 0, 5]  # the lowest-scored of the plain top 3 made room


def test_another_games_rulebook_does_not_count() -> None:
    cands = [EXP, EXP, OTHER]
    sel = select(cands, [0.9, 0.8, 0.1], "catan", keep=2)
    assert sel.fired == []
    assert sel.kept == [0, 1]


def test_errata_top_is_never_dropped() -> None:
    cands = [BOOK, EXP, EXP, ERRATA, Candidate("faq", "catan")]
    sel = select(cands, [0.9, 0.8, 0.7, 0.1, 0.2], "catan", keep=3)
    assert sel.fired == [ERRATA_TOP]
    assert sel.kept == [0, 1, 4]  # the faq passage scored higher than the errata passage


def test_both_guarantees_fire_and_do_not_displace_each_other() -> None:
    cands = [EXP, EXP, EXP, BOOK, ERRATA]
    sel = select(cands, [0.9, 0.8, 0.7, 0.2, 0.1], "catan", keep=3)
    assert set(sel.fired) == {ERRATA_TOP, RULEBOOK_TOP}
    assert sel.kept == [0, 3, 4]


def test_no_asked_game_means_no_rulebook_guarantee() -> None:
    sel = select([EXP, Candidate("rulebook", "")], [0.9, 0.1], "", keep=1)
    assert sel.fired == [] and sel.kept == [0]


def test_keep_zero_means_eight() -> None:
    sel = select([EXP] * 20, [float(-i) for i in range(20)], "catan", keep=0)
    assert sel.kept == list(range(8))


def test_ties_keep_the_fused_order() -> None:
    assert ranked([0.5, 0.5, 0.9, 0.5]) == [2, 0, 1, 3]


_kinds = st.sampled_from(["rulebook", "expansion", "errata", "faq", "reference"])
_games = st.sampled_from(["catan", "seafarers", ""])


@given(
    st.lists(st.tuples(_kinds, _games, st.floats(-10, 10)), max_size=30),
    st.integers(min_value=2, max_value=10),
)
def test_guarantee_properties(rows: list[tuple[str, str, float]], keep: int) -> None:
    cands = [Candidate(k, g) for k, g, _ in rows]
    scores = [s for _, _, s in rows]
    sel = select(cands, scores, "catan", keep=keep)
    order = ranked(scores)
    assert len(sel.kept) == min(keep, len(rows)) == len(set(sel.kept))
    assert sel.kept == sorted(sel.kept, key=lambda i: (-scores[i], i))
    assert (set(sel.kept) != set(order[:keep])) == bool(sel.fired)
    errata = [i for i in order if cands[i].doc_kind in ("errata", "faq")]
    book = [i for i in order if cands[i].doc_kind == "rulebook" and cands[i].game == "catan"]
    if errata:
        assert errata[0] in sel.kept
    if book:
        assert book[0] in sel.kept
    assert (ERRATA_TOP in sel.fired) == bool(errata and errata[0] not in order[:keep])
    assert (RULEBOOK_TOP in sel.fired) == bool(book and book[0] not in order[:keep])
