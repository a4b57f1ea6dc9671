"""The citation check: what a model wrote (unvalidated) against the passages it was shown.

``RawAnswer`` is what structured output decodes into. ``ValidatedAnswer`` is the only thing the servicer
turns into a ruling, and the only way to build one is ``validate()``: its constructor refuses any caller
that does not hold this module's private token. A citation is stored as the source's own span
(``passage.text[start:end]``), found after one-to-one punctuation canonicalisation, so the leniency
applies at match time only and what is stored stays byte-exact.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rulesage.core.text import find_quote

MIN_ANSWER_CHARS = 40
# A quote shorter than this proves nothing ("the", "a move"): it is rejected like a missing one.
MIN_QUOTE_CHARS = 12
MAX_QUOTES = 6


class Verdict(StrEnum):
    ANSWERED = "answered"
    NOT_IN_BOOK = "not_in_book"


@dataclass(frozen=True)
class ShownPassage:
    """A passage as the answer service sees it: the text citations are checked against, and the stamps
    (page, document, version, rule) the program copies onto a citation."""

    id: int
    text: str
    doc_key: str = ""
    doc_title: str = ""
    doc_kind: str = ""
    doc_version: str = ""
    page_start: int = 0
    page_end: int = 0
    heading_path: tuple[str, ...] = ()
    rule_id: str = ""
    section_id: int = 0
    rerank_score: float | None = None
    # The passage's stored embedding (unit vector) and the model that drew it, when the library has them:
    # the extractive scorer reads them instead of embedding the passage again.
    vector: Any = field(default=None, compare=False, repr=False)
    vector_model: str = ""
    # Its sentences' stored vectors: (model, spans [(start, end), ...], float matrix), when drawn at ingest.
    sentence_vectors: Any = field(default=None, compare=False, repr=False)


# -- the unvalidated side: what the model wrote ------------------------------------------------------------
@dataclass(frozen=True)
class RawQuote:
    passage_id: int
    quote: str


@dataclass(frozen=True)
class RawAnswer:
    """A decoded answer, not yet checked. ``confidence`` is set by the backend (never by the model)."""

    quotes: tuple[RawQuote, ...]
    answer: str
    verdict: Verdict
    confidence: float | None = None


class MalformedAnswer(ValueError):
    """The backend's output does not decode into the answer schema."""


def parse_answer(payload: str | Mapping[str, Any], confidence: float | None = None) -> RawAnswer:
    """Decode a JSON answer ``{quotes: [{passage_id, quote}], answer, verdict}``; MalformedAnswer if not."""
    try:
        obj = json.loads(payload) if isinstance(payload, str) else payload
    except json.JSONDecodeError as exc:
        raise MalformedAnswer(f"not JSON: {exc.msg}") from None
    if not isinstance(obj, Mapping):
        raise MalformedAnswer("not a JSON object")
    verdict_raw = obj.get("verdict")
    try:
        verdict = Verdict(str(verdict_raw))
    except ValueError:
        raise MalformedAnswer(f"verdict must be 'answered' or 'not_in_book', not {verdict_raw!r}") from None
    answer = obj.get("answer", "")
    if not isinstance(answer, str):
        raise MalformedAnswer("answer must be a string")
    quotes_raw = obj.get("quotes", [])
    if not isinstance(quotes_raw, list):
        raise MalformedAnswer("quotes must be a list")
    quotes = []
    for q in quotes_raw:
        if not isinstance(q, Mapping):
            raise MalformedAnswer("each quote must be an object {passage_id, quote}")
        pid, text = q.get("passage_id"), q.get("quote")
        if isinstance(pid, str) and pid.strip().isdigit():
            pid = int(pid.strip())
        if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(text, str):
            raise MalformedAnswer("each quote needs an integer passage_id and a string quote")
        quotes.append(RawQuote(pid, text))
    return RawAnswer(tuple(quotes), answer, verdict, confidence)


def answer_schema(passage_ids: Sequence[int], with_lookup: bool = False) -> dict[str, Any]:
    """JSON schema of the model's output: quotes first, then the answer, then the verdict.

    ``passage_ids`` constrains which passages may be named (the check still refuses invented ids: a backend
    may ignore the schema). ``with_lookup`` puts an optional ``lookup_rules`` list first: rule numbers to
    fetch before answering (the one tool round; only the first attempt's schema has it).
    """
    pid: dict[str, Any] = {"type": "integer"}
    if passage_ids:
        pid["enum"] = sorted(set(passage_ids))
    props: dict[str, Any] = {}
    if with_lookup:
        props["lookup_rules"] = {"type": "array", "items": {"type": "string"}, "maxItems": 5}
    props["quotes"] = {
        "type": "array",
        "maxItems": MAX_QUOTES,
        "items": {
            "type": "object",
            "properties": {"passage_id": pid, "quote": {"type": "string"}},
            "required": ["passage_id", "quote"],
            "additionalProperties": False,
        },
    }
    props["answer"] = {"type": "string"}
    props["verdict"] = {"type": "string", "enum": [v.value for v in Verdict]}
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


# -- the validated side ------------------------------------------------------------------------------------
_TOKEN = object()


@dataclass(frozen=True)
class ValidatedCitation:
    """A citation that holds: ``quote == passage.text[start:end]``; the stamps come from the passage."""

    passage_id: int
    quote: str
    start: int
    end: int
    page: int
    doc_key: str
    doc_title: str
    doc_version: str
    rule_id: str


@dataclass(frozen=True)
class ValidatedAnswer:
    """An answer whose every citation was found in a passage that was shown. Only ``validate()`` makes one."""

    verdict: Verdict
    answer: str
    citations: tuple[ValidatedCitation, ...]
    confidence: float | None
    _token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._token is not _TOKEN:
            raise TypeError("a ValidatedAnswer is made by citations.validate(), not by hand")


@dataclass(frozen=True)
class Rejection:
    """Why an answer was refused, with the citation at fault when there is one."""

    reason: str
    passage_id: int | None = None
    quote: str | None = None

    def line(self) -> str:
        if self.quote is None:
            return self.reason
        shown = self.quote if len(self.quote) <= 160 else self.quote[:157] + "..."
        return f"{self.reason}: passage {self.passage_id}: {shown!r}"


NOT_IN_BOOK_TEXT = "Not in the book: the passages found do not answer this question."


def _locate(passage: str, quote: str) -> tuple[int, int] | None:
    """Where the quote stands, tolerating surrounding whitespace and one pair of wrapping quote marks."""
    text = quote.strip()
    at = find_quote(passage, text)
    if at is None and len(text) >= 2 and text[0] in "\"'“‘" and text[-1] in "\"'”’":
        at = find_quote(passage, text[1:-1].strip())
    return at


def _page(p: ShownPassage) -> int:
    return p.page_start or p.page_end


def validate(
    raw: RawAnswer, shown: Mapping[int, ShownPassage] | Iterable[ShownPassage]
) -> ValidatedAnswer | Rejection:
    """Check ``raw`` against the passages shown (by id). Every quote must name a shown passage and be a
    contiguous substring of its text after canonicalisation; an answer needs at least one citation and
    ``MIN_ANSWER_CHARS`` characters. A not-in-the-book verdict needs neither and keeps no citation."""
    by_id = shown if isinstance(shown, Mapping) else {p.id: p for p in shown}
    if raw.verdict is Verdict.NOT_IN_BOOK:
        return ValidatedAnswer(Verdict.NOT_IN_BOOK, NOT_IN_BOOK_TEXT, (), raw.confidence, _token=_TOKEN)
    if not raw.quotes:
        return Rejection("no citation: an answer must quote at least one passage")
    if len(raw.answer.strip()) < MIN_ANSWER_CHARS:
        return Rejection(f"answer too short ({len(raw.answer.strip())} < {MIN_ANSWER_CHARS} characters)")
    if len(raw.quotes) > MAX_QUOTES:
        return Rejection(f"too many quotes ({len(raw.quotes)} > {MAX_QUOTES})")
    out: list[ValidatedCitation] = []
    seen: set[tuple[int, int, int]] = set()
    for q in raw.quotes:
        passage = by_id.get(q.passage_id)
        if passage is None:
            return Rejection("cites a passage that was not shown", q.passage_id, q.quote)
        if len(q.quote.strip()) < MIN_QUOTE_CHARS:
            return Rejection(f"quote too short (under {MIN_QUOTE_CHARS} characters)", q.passage_id, q.quote)
        at = _locate(passage.text, q.quote)
        if at is None:
            return Rejection("quote is not verbatim in that passage", q.passage_id, q.quote)
        start, end = at
        if (passage.id, start, end) in seen:
            continue
        seen.add((passage.id, start, end))
        out.append(
            ValidatedCitation(
                passage_id=passage.id,
                quote=passage.text[start:end],
                start=start,
                end=end,
                page=_page(passage),
                doc_key=passage.doc_key,
                doc_title=passage.doc_title,
                doc_version=passage.doc_version,
                rule_id=passage.rule_id,
            )
        )
    return ValidatedAnswer(Verdict.ANSWERED, raw.answer.strip(), tuple(out), raw.confidence, _token=_TOKEN)
