"""The attempt loop with a scripted backend: one tool round, one retry showing the rejection, then abstain."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from services.answer import loop
from services.answer.citations import MalformedAnswer, RawAnswer, RawQuote, ShownPassage, Verdict
from services.answer.loop import Prompt, ToolRequest

RULE = ShownPassage(
    id=1,
    text="702.19b Once all those blocking creatures are assigned lethal damage, any excess damage is "
    "assigned as its controller chooses among those blocking creatures and the player the creature is "
    "attacking.",
    doc_key="cr",
    doc_version="2022-04-29",
    rule_id="702.19b",
    page_start=0,
)
PROSE = ShownPassage(
    id=2, text="Each player draws seven cards at the start of the game.", doc_key="book", page_start=4
)
FETCHED = ShownPassage(
    id=50,
    text="510.1c A blocked creature assigns its combat damage to the creatures blocking it.",
    doc_key="cr",
    doc_version="2022-04-29",
    rule_id="510.1c",
)
GOOD_ANSWER = "Excess damage beyond lethal can be assigned to the player the creature attacks."


def good(pid: int = 1, quote: str = "any excess damage is assigned as its controller chooses") -> RawAnswer:
    return RawAnswer((RawQuote(pid, quote),), GOOD_ANSWER, Verdict.ANSWERED)


BAD = RawAnswer((RawQuote(1, "excess damage goes to the player"),), GOOD_ANSWER, Verdict.ANSWERED)


@dataclass
class Scripted:
    """A backend that replays replies and records every turn it was given."""

    replies: list[object]
    identity: str = "scripted"
    turns: list[tuple[str, Prompt]] = field(default_factory=list)

    def _next(self) -> object:
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    async def open_turn(self, prompt: Prompt) -> RawAnswer | ToolRequest:
        self.turns.append(("open", prompt))
        reply = self._next()
        assert isinstance(reply, RawAnswer | ToolRequest)
        return reply

    async def final_turn(self, prompt: Prompt) -> RawAnswer:
        self.turns.append(("final", prompt))
        reply = self._next()
        if reply == "sleep":
            await asyncio.sleep(5)
        assert isinstance(reply, RawAnswer), "final_turn can only answer"
        return reply


@dataclass
class Shelf:
    """An in-memory library (the Postgres one is tested in tests/integration)."""

    rules: list[ShownPassage]
    lookups: list[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)

    async def sections(self, section_ids: Sequence[int]) -> dict[int, str]:
        return {}

    async def lookup_rules(self, doc_keys: Sequence[str], rule_ids: Sequence[str]) -> list[ShownPassage]:
        self.lookups.append((tuple(doc_keys), tuple(rule_ids)))
        return [p for p in self.rules if p.rule_id in rule_ids and p.doc_key in doc_keys]


def run(
    prompt: Prompt, backend: Scripted, library: Shelf | None = None, timeout_s: float = 5.0
) -> loop.Outcome:
    return asyncio.run(loop.run(prompt, backend, library, timeout_s))


PROMPT = Prompt("where does trample damage go?", "mtg", (RULE, PROSE))


def test_a_valid_first_answer_takes_one_attempt() -> None:
    backend = Scripted([good()])
    out = run(PROMPT, backend)
    assert out.ruling is not None and out.ruling.verdict is Verdict.ANSWERED
    assert out.attempts == 1 and out.rejections == ()
    assert [kind for kind, _ in backend.turns] == ["final"]  # no library: no tool offered


def test_a_rejection_is_retried_once_with_the_reason_shown_and_the_tool_disabled() -> None:
    backend = Scripted([BAD, good()])
    out = run(PROMPT, backend, Shelf([FETCHED]))
    assert out.ruling is not None
    assert out.attempts == 2
    assert len(out.rejections) == 1 and "not verbatim" in out.rejections[0]
    (first_kind, first), (retry_kind, retry) = backend.turns
    assert first_kind == "open" and first.tool_offered
    assert retry_kind == "final" and not retry.tool_offered
    assert retry.rejection is not None and retry.rejection.quote == "excess damage goes to the player"


def test_two_rejections_abstain_after_exactly_one_retry_and_store_nothing() -> None:
    backend = Scripted([BAD, BAD, good()])
    out = run(PROMPT, backend)
    assert out.ruling is None and out.unavailable is None  # NOT_IN_BOOK
    assert out.attempts == 2 and len(out.rejections) == 2
    assert len(backend.turns) == 2
    assert len(backend.replies) == 1  # the third reply was never asked for


def test_one_tool_round_fetches_rules_then_answers_without_tools() -> None:
    shelf = Shelf([FETCHED])
    backend = Scripted(
        [
            ToolRequest(("Rule 510.1c.", "510.1C")),
            good(50, "assigns its combat damage to the creatures blocking it"),
        ]
    )
    out = run(PROMPT, backend, shelf)
    assert shelf.lookups == [(("cr",), ("510.1c",))]  # cleaned, deduplicated, numbered documents only
    assert [kind for kind, _ in backend.turns] == ["open", "final"]
    final = backend.turns[1][1]
    assert not final.tool_offered and final.fetched == (50,)
    assert out.ruling is not None
    (c,) = out.ruling.citations
    assert (c.passage_id, c.rule_id, c.doc_version) == (50, "510.1c", "2022-04-29")
    assert out.fetched == (FETCHED,)
    assert [s for s, _ in out.timings] == ["answer.generate", "answer.lookup", "answer.generate"]


def test_the_retry_after_a_tool_round_keeps_the_fetched_rules_and_has_no_tool() -> None:
    backend = Scripted(
        [ToolRequest(("510.1c",)), BAD, good(50, "assigns its combat damage to the creatures blocking it")]
    )
    out = run(PROMPT, backend, Shelf([FETCHED]))
    assert [kind for kind, _ in backend.turns] == ["open", "final", "final"]
    retry = backend.turns[2][1]
    assert 50 in {p.id for p in retry.passages} and not retry.tool_offered
    assert out.ruling is not None and out.attempts == 2


def test_no_tool_is_offered_for_a_book_without_numbered_rules() -> None:
    backend = Scripted([good(2, "Each player draws seven cards")])
    out = run(Prompt("how many cards?", "g", (PROSE,)), backend, Shelf([FETCHED]))
    assert [kind for kind, _ in backend.turns] == ["final"]
    assert out.ruling is not None


def test_a_citation_of_a_passage_never_shown_is_rejected_even_when_the_library_has_it() -> None:
    backend = Scripted([good(50, "assigns its combat damage to the creatures blocking it")] * 2)
    out = run(PROMPT, backend, Shelf([FETCHED]))
    assert out.ruling is None and out.attempts == 2
    assert all("not shown" in r for r in out.rejections)


def test_malformed_output_counts_as_a_rejected_attempt() -> None:
    backend = Scripted([MalformedAnswer("not JSON"), good()])
    out = run(PROMPT, backend)
    assert out.attempts == 2 and out.rejections[0].startswith("malformed output")
    assert out.ruling is not None


def test_the_models_own_abstain_is_accepted_without_a_retry() -> None:
    backend = Scripted([RawAnswer((), "", Verdict.NOT_IN_BOOK)])
    out = run(PROMPT, backend)
    assert out.ruling is not None and out.ruling.verdict is Verdict.NOT_IN_BOOK and out.attempts == 1


def test_a_failing_backend_is_unavailable_and_invents_nothing() -> None:
    out = run(PROMPT, Scripted([ConnectionError("refused")]))
    assert out.ruling is None
    assert out.unavailable is not None and "unavailable" in out.unavailable


def test_a_backend_past_its_deadline_is_unavailable() -> None:
    out = run(PROMPT, Scripted(["sleep"]), timeout_s=0.05)
    assert out.unavailable is not None and "timed out" in out.unavailable


def test_the_states_after_the_first_turn_cannot_ask_for_tools_or_retry_twice() -> None:
    assert not hasattr(loop.Final, "fulfil") and not hasattr(loop.Retry, "retry")
    assert {n for n in vars(loop.Retry) if not n.startswith("_")} == {"send"}


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (["702.19b"], ("702.19b",)),
        (["rule 702.19B.", "702.19b", "cheese"], ("702.19b",)),
        (["1", "2"], ("1", "2")),
    ],
)
def test_rule_ids_are_cleaned(raw: list[str], want: tuple[str, ...]) -> None:
    assert loop.clean_rule_ids(raw) == want
