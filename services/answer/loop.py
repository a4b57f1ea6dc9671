"""The attempt loop: at most one tool round and one retry, bounded by the shape of the code.

The conversation is a typestate:

- ``Fresh`` can ``send()`` and becomes a checked answer or ``ToolRequested`` (only when a rule lookup is
  offered: a numbered rulebook and a library to fetch from);
- ``ToolRequested`` can ``fulfil()`` the request and becomes ``Final``;
- ``Final`` can ``send()`` (through ``Backend.final_turn``, whose schema has no tool) and ``retry()``,
  which becomes ``Retry``;
- ``Retry`` can only ``send()``.

No state after ``Fresh`` holds a method that can ask for tools, and nothing after ``Retry`` can retry: a
runaway loop cannot be written without changing these types. ``source`` stamps (page, document, version,
rule) are copied from the passages by ``citations.validate``; the model never writes them.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

from services.answer.citations import (
    MalformedAnswer,
    RawAnswer,
    Rejection,
    ShownPassage,
    ValidatedAnswer,
    validate,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_LOOKUP_RULES = 5
UNAVAILABLE_TEXT = (
    "The answer is unavailable right now: the answering model did not respond. The passages found are shown."
)


@dataclass(frozen=True)
class ToolRequest:
    """The model asks for rules by number (the one tool round)."""

    rule_ids: tuple[str, ...]


@dataclass(frozen=True)
class PriorView:
    """An earlier ruling of this site about the same thing: shown to a language model after the book as an
    example, never a passage (it has no passage id, so no citation can name it)."""

    id: str
    question: str
    answer: str
    score: float


@dataclass(frozen=True)
class CardView:
    """A card the question names: what it does and its official rulings. Shown to a language model before
    the book, as what the cards say; never a passage, so no citation can name it."""

    name: str
    type_line: str
    oracle: str
    rulings: tuple[str, ...] = ()
    written: str = ""  # the question's words that named it (a nickname, a near spelling)


class NamedCardLike(Protocol):
    """A card the question names, as the request carries it (``NamedCard``) or a prompt shows it."""

    @property
    def name(self) -> str: ...

    @property
    def written(self) -> str: ...


def known_names(cards: Iterable[NamedCardLike]) -> tuple[str, ...]:
    """The cards' names and the words that named them, lower-cased: names the book never prints."""
    return tuple(sorted({t.lower() for c in cards for t in (c.name, c.written) if t}))


@dataclass(frozen=True)
class Pick:
    """One sentence the trained quote selector reads as deciding the question: a span of a shown passage."""

    passage_id: int
    start: int
    end: int
    probability: float


@dataclass(frozen=True)
class Reading:
    """The trained selector's and answerability model's reading of the shown passages, made once per ask
    and handed to every backend alike: the extractive one quotes from it, a language model is shown it."""

    picks: tuple[Pick, ...]  # best first
    answerability: float  # the probability that the shown passages answer the question
    threshold: float  # under it the extractive backend says "not in the book"
    source: str  # which model, calibrated where


@dataclass(frozen=True)
class Prompt:
    """Everything a backend is shown for one turn."""

    question: str
    game: str
    # The citable passages: the ones the road kept, then any fetched by the tool round.
    passages: tuple[ShownPassage, ...]
    # Section text around each passage (passage id -> (before, after)): read, never quoted.
    context: dict[int, tuple[str, str]] = field(default_factory=dict)
    # Ids of passages fetched by the tool round (shown regardless of the context budget).
    fetched: tuple[int, ...] = ()
    # The previous attempt's rejection, shown on the retry.
    rejection: Rejection | None = None
    # The rule lookup is offered on this turn (schema carries ``lookup_rules``).
    tool_offered: bool = False
    # Earlier rulings about the same thing, nearest first: rendered after every passage, never citable.
    priors: tuple[PriorView, ...] = ()
    # The cards the question names (a game with a card table), in the order it names them.
    cards: tuple[CardView, ...] = ()
    # The trained selector's reading of the passages (None: no selector configured, or it failed).
    reading: Reading | None = None


class Backend(Protocol):
    """An answering backend. ``open_turn`` may answer or ask for rules; ``final_turn`` can only answer.

    Both raise ``MalformedAnswer`` when the output does not decode (counted as a rejected attempt) and any
    other exception when the backend failed (the ruling is UNAVAILABLE).
    """

    identity: str

    async def open_turn(self, prompt: Prompt) -> RawAnswer | ToolRequest: ...

    async def final_turn(self, prompt: Prompt) -> RawAnswer: ...


class Library(Protocol):
    """Where the surrounding sections and numbered rules are read from (Postgres in production)."""

    async def sections(self, section_ids: Sequence[int]) -> dict[int, str]: ...

    async def lookup_rules(self, doc_keys: Sequence[str], rule_ids: Sequence[str]) -> list[ShownPassage]: ...


class BackendUnavailable(RuntimeError):
    """The answering backend failed or timed out."""


_RULE = re.compile(r"\d{1,4}(?:\.\d{1,4}[a-z]?)?")


def clean_rule_ids(raw: Sequence[str]) -> tuple[str, ...]:
    """Rule numbers as the book writes them ('702.19b'), deduplicated, at most MAX_LOOKUP_RULES."""
    out: list[str] = []
    for r in raw:
        m = _RULE.search(r.strip().lower())
        if m and m.group(0) not in out:
            out.append(m.group(0))
    return tuple(out[:MAX_LOOKUP_RULES])


# -- the typestate ---------------------------------------------------------------------------------------
@dataclass
class _Conversation:
    backend: Backend
    timeout_s: float
    timings: list[tuple[str, float]]

    async def call(self, stage: str, turn: Awaitable[T]) -> T:
        t0 = time.perf_counter()
        try:
            return await asyncio.wait_for(turn, self.timeout_s)
        except MalformedAnswer:
            raise
        except TimeoutError as exc:
            raise BackendUnavailable(f"timed out after {self.timeout_s:.0f}s") from exc
        except Exception as exc:
            raise BackendUnavailable(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.timings.append((stage, (time.perf_counter() - t0) * 1000.0))


class Retry:
    """The second and last attempt: tool disabled, the rejection shown. It can only send."""

    def __init__(self, conv: _Conversation, prompt: Prompt) -> None:
        self._conv = conv
        self.prompt = prompt

    async def send(self) -> RawAnswer:
        return await self._conv.call("answer.retry", self._conv.backend.final_turn(self.prompt))


class Final:
    """The first attempt's answering turn (after a tool round, or when no tool was offered). No tools."""

    def __init__(self, conv: _Conversation, prompt: Prompt) -> None:
        self._conv = conv
        self.prompt = prompt

    async def send(self) -> RawAnswer:
        return await self._conv.call("answer.generate", self._conv.backend.final_turn(self.prompt))

    def retry(self, rejection: Rejection) -> Retry:
        return Retry(self._conv, replace(self.prompt, rejection=rejection, tool_offered=False))


class ToolRequested:
    """The model asked for rules by number; fulfilling it is the only way on, and leads to ``Final``."""

    def __init__(self, conv: _Conversation, prompt: Prompt, request: ToolRequest, library: Library) -> None:
        self._conv = conv
        self.prompt = prompt
        self.request = request
        self._library = library

    async def fulfil(self) -> Final:
        t0 = time.perf_counter()
        doc_keys = sorted({p.doc_key for p in self.prompt.passages if p.rule_id and p.doc_key})
        known = {p.id for p in self.prompt.passages}
        try:
            found = (
                await self._library.lookup_rules(doc_keys, self.request.rule_ids)
                if self.request.rule_ids
                else []
            )
        except Exception as exc:  # a failed lookup costs the tool round, not the ruling
            log.warning("lookup_rules failed: %s", exc)
            found = []
        self._conv.timings.append(("answer.lookup", (time.perf_counter() - t0) * 1000.0))
        new = tuple(p for p in found if p.id not in known)
        prompt = replace(
            self.prompt,
            passages=self.prompt.passages + new,
            fetched=tuple(p.id for p in new),
            tool_offered=False,
        )
        return Final(self._conv, prompt)


@dataclass(frozen=True)
class Answered:
    """The first turn answered (or wrote what does not decode); ``final`` is where a retry starts."""

    raw: RawAnswer | MalformedAnswer
    final: Final


class Fresh:
    """The first turn. ``send()`` answers, or (only when a lookup is offered) asks for rules."""

    def __init__(self, conv: _Conversation, prompt: Prompt, library: Library | None) -> None:
        self._conv = conv
        self.prompt = prompt
        self._library = library

    async def send(self) -> Answered | ToolRequested:
        if self._library is None or not any(p.rule_id for p in self.prompt.passages):
            final = Final(self._conv, replace(self.prompt, tool_offered=False))
            return Answered(await _attempt(final.send()), final)
        offered = replace(self.prompt, tool_offered=True)
        final = Final(self._conv, replace(offered, tool_offered=False))
        try:
            reply = await self._conv.call("answer.generate", self._conv.backend.open_turn(offered))
        except MalformedAnswer as exc:
            return Answered(exc, final)
        if isinstance(reply, ToolRequest):
            return ToolRequested(
                self._conv, offered, ToolRequest(clean_rule_ids(reply.rule_ids)), self._library
            )
        assert isinstance(reply, RawAnswer)
        return Answered(reply, final)


async def _attempt(send: Awaitable[RawAnswer]) -> RawAnswer | MalformedAnswer:
    try:
        return await send
    except MalformedAnswer as exc:
        return exc


# -- the loop ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """How an ask ended. ``ruling`` is set when a checked answer (or the model's own abstain) came back;
    ``unavailable`` when the backend failed; neither after two rejected attempts (an abstain)."""

    model: str
    attempts: int
    rejections: tuple[str, ...]
    timings: tuple[tuple[str, float], ...]
    ruling: ValidatedAnswer | None = None
    unavailable: str | None = None
    fetched: tuple[ShownPassage, ...] = ()
    confidence: float | None = None


def _checked(raw: RawAnswer | MalformedAnswer, shown: Sequence[ShownPassage]) -> ValidatedAnswer | Rejection:
    if isinstance(raw, MalformedAnswer):
        return Rejection(f"malformed output: {raw}")
    return validate(raw, shown)


async def run(
    prompt: Prompt,
    backend: Backend,
    library: Library | None = None,
    timeout_s: float = 60.0,
) -> Outcome:
    """Attempt 1 (with at most one tool round), then one retry showing the rejection, then abstain."""
    timings: list[tuple[str, float]] = []
    conv = _Conversation(backend, timeout_s, timings)
    rejections: list[str] = []
    fetched: tuple[ShownPassage, ...] = ()
    attempts = 1

    def done(ruling: ValidatedAnswer | None = None, unavailable: str | None = None) -> Outcome:
        return Outcome(
            model=backend.identity,
            attempts=attempts,
            rejections=tuple(rejections),
            timings=tuple(timings),
            ruling=ruling,
            unavailable=unavailable,
            fetched=fetched,
            confidence=ruling.confidence if ruling else None,
        )

    try:
        first = await Fresh(conv, prompt, library).send()
        if isinstance(first, ToolRequested):
            final = await first.fulfil()
            fetched = tuple(p for p in final.prompt.passages if p.id in set(final.prompt.fetched))
            raw = await _attempt(final.send())
        else:
            raw, final = first.raw, first.final
        shown = final.prompt.passages
        checked = _checked(raw, shown)
        if isinstance(checked, ValidatedAnswer):
            return done(ruling=checked)
        rejections.append(checked.line())
        log.info("answer attempt 1 rejected (%s): %s", backend.identity, checked.line())
        attempts = 2
        retry = final.retry(checked)
        raw = await _attempt(retry.send())
        checked = _checked(raw, retry.prompt.passages)
        if isinstance(checked, ValidatedAnswer):
            return done(ruling=checked)
        rejections.append(checked.line())
        log.info("answer attempt 2 rejected (%s): %s; abstaining", backend.identity, checked.line())
        return done()
    except BackendUnavailable as exc:
        log.warning("answering backend %s unavailable: %s", backend.identity, exc)
        return done(unavailable=f"{UNAVAILABLE_TEXT} ({exc})")
