"""The road's typed values: stage outcomes, and the ruling with its wrench as stored and served.

``StageState`` mirrors the contract's ``rulesage.v1.StageState`` (STAGE_STATE_OK <-> "ok"); the road turns
protobuf into these types once, and everything downstream (storage, the gateway's JSON and pages, the CLI,
the evaluation) reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

# The validation context under which a model is being written (the road's ruling before it is stored).
WRITING = "writing"


class StageState(StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    DOWN = "down"
    OVERLOADED = "overloaded"

    @classmethod
    def from_proto_name(cls, name: str) -> StageState:
        """``STAGE_STATE_TIMEOUT`` -> TIMEOUT; an unknown or unset name is FAILED."""
        try:
            return cls(name.removeprefix("STAGE_STATE_").lower())
        except ValueError:
            return cls.FAILED

    @property
    def proto_name(self) -> str:
        return "STAGE_STATE_" + self.name


class Verdict(StrEnum):
    ANSWERED = "answered"
    NOT_IN_BOOK = "not_in_book"
    UNAVAILABLE = "unavailable"


class _Model(BaseModel):
    """Read leniently, written strictly: a stored ruling of an older release may carry keys this release
    does not know (kept as they are), but what this release writes (``validate_write``) refuses every
    unknown key, at every depth, so a renamed key fails where it is written instead of vanishing from the
    page."""

    model_config = ConfigDict(extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _known_keys_when_writing(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, Mapping) and info.context and info.context.get(WRITING):
            known = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
            unknown = sorted(str(k) for k in data if k not in known)
            if unknown:
                raise ValueError(f"{cls.__name__} has no field {', '.join(unknown)}")
        return data

    @classmethod
    def validate_write(cls, data: Mapping[str, Any] | BaseModel) -> Self:
        """``data`` validated as this release writes it: unknown keys refused at every depth."""
        raw = data.model_dump(exclude_unset=True) if isinstance(data, BaseModel) else data
        return cls.model_validate(raw, context={WRITING: True})

    def to_json(self) -> dict[str, Any]:
        """The JSON form, with the keys that were given (stored and served as before)."""
        return self.model_dump(mode="json", exclude_unset=True)


class CategoryCall(_Model):
    """A classifying arm's call on the question: the category (None when it abstained), its confidence
    against the abstain threshold, the sections it maps to, and the runner-up."""

    name: str | None = None
    best: str = ""  # the best-scoring category, called or not
    confidence: float = 0.0
    threshold: float = 0.0
    sections: list[str] = Field(default_factory=list)
    runner_up: str = ""
    runner_up_confidence: float = 0.0


class ArmStatus(_Model):
    arm: str
    state: StageState
    detail: str = ""
    hits: int = 0
    ms: float = 0.0
    category: CategoryCall | None = None


class StageInfo(_Model):
    state: StageState
    detail: str = ""


class RerankInfo(StageInfo):
    model: str = ""


class AnswerInfo(StageInfo):
    attempts: int = 0
    rejections: list[str] = Field(default_factory=list)
    confidence: float | None = None  # the answerability score (extractive: the best sentence's relevance)
    threshold: float | None = None  # the backend abstains under it
    threshold_source: str = ""  # where the threshold was calibrated


class Candidate(_Model):
    id: int
    fused_score: float
    ranks: dict[str, int] = Field(default_factory=dict)
    rerank_score: float | None = None


class PriorsInfo(StageInfo):
    """The prior-rulings lookup of one ask: which earlier rulings the answering model was shown (ids,
    nearest first) and the largest question distance allowed."""

    shown: list[str] = Field(default_factory=list)
    max_distance: float = 0.0


class Timing(_Model):
    stage: str
    ms: float


class NamedCard(_Model):
    """A card the question names, from the game's card table: what it says and its official rulings.
    Context, never a citation: a ruling cites the book."""

    name: str
    written: str = ""  # the question's words for it
    how: str = ""  # name | face | nickname | short | near (a near spelling)
    type_line: str = ""
    mana_cost: str = ""
    oracle: str = ""
    pt: str = ""
    loyalty: str = ""
    other_face: str = ""
    rulings: list[str] = Field(default_factory=list)
    searched: bool = False  # its text joined the search (the lanes lexical.cards and dense.cards)


class Wrench(_Model):
    """Where a ruling came from: which lists voted, each candidate's ranks and scores, the derived
    ceiling, the guarantees that fired, each stage's state, and the timings."""

    fusion: StageInfo | None = None
    arms: list[ArmStatus] = Field(default_factory=list)
    voted: list[str] = Field(default_factory=list)
    k: int = 60
    ceiling: float = 0.0
    ceiling_formula: str = ""
    aliases: list[str] = Field(default_factory=list)
    cards: list[NamedCard] = Field(default_factory=list)  # the cards the question names
    candidates: list[Candidate] = Field(default_factory=list)
    guarantees_fired: list[str] = Field(default_factory=list)
    rerank: RerankInfo | None = None
    answer: AnswerInfo | None = None
    priors: PriorsInfo | None = None
    timings: list[Timing] = Field(default_factory=list)
    search_span_ms: float | None = None
    answer_ms: float | None = None
    total_ms: float | None = None
    trace_id: str = ""


class PassageView(_Model):
    id: int
    text: str
    doc_key: str
    doc_title: str = ""
    doc_kind: str = ""
    doc_version: str = ""
    game: str = ""
    page_start: int | None = None
    page_end: int | None = None
    heading_path: list[str] = Field(default_factory=list)
    rule_id: str = ""
    section_id: int = 0
    fused_score: float = 0.0
    ranks: dict[str, int] = Field(default_factory=dict)
    rerank_score: float | None = None


class Citation(_Model):
    passage_id: int
    quote: str
    start: int
    end: int
    page: int | None = None
    doc_key: str = ""
    doc_title: str = ""
    doc_version: str = ""
    rule_id: str = ""


class Rating(_Model):
    mean: float  # the crowd's, Bayesian-smoothed: (2.0 * 3 + sum) / (3 + count)
    count: int  # crowd ratings (a judge's rating is not a crowd vote)
    sum: int
    effective: float  # what counts: the judge's latest score when a judge rated, else ``mean``
    judged: bool = False  # a judge's rating set ``effective``
    judge_score: int | None = None  # the judge's latest score
    excluded: bool = False  # effective < 1.5 with 5 or more votes: never offered as "asked before"


class PriorRuling(_Model):
    """An earlier ruling of this site about the same thing ("asked before"): never the book, never cited."""

    kind: Literal["earlier_ruling"] = "earlier_ruling"
    id: str
    question: str
    answer: str
    rating: Rating
    distance: float  # cosine distance between the two questions' embeddings
    url: str  # its permalink
    created_at: str


class Ruling(_Model):
    """A ruling as stored and served: the answer, its citations, the kept passages (dealt order) and the
    wrench."""

    id: str | None = None
    game: str
    game_name: str = ""
    question: str
    answer: str
    verdict: Verdict
    citations: list[Citation] = Field(default_factory=list)
    passages: list[PassageView] = Field(default_factory=list)
    cards: list[NamedCard] = Field(default_factory=list)  # the cards the question names (as in the wrench)
    wrench: Wrench
    models: dict[str, str] = Field(default_factory=dict)
    trace_id: str = ""
    public_state: str | None = None
    public_reason: str | None = None
    created_at: Any = None
    retired_at: str | None = None  # set when an admin retired it: readable here, never offered as a prior
    retired_reason: str = ""
    # earlier rulings about the same thing, as of the ask (never stored with it: looked up when read)
    asked_before: list[PriorRuling] = Field(default_factory=list)


class WrenchDerived(_Model):
    """What the page derives from the stored wrench at read time (never stored: an old ruling is judged by
    the arithmetic of its own ask)."""

    voted: list[str]
    ceiling: float
    ceiling_formula: str
    top_fused: float | None
    above_ceiling: bool
    trace_link: str


class RulingPublic(Ruling):
    """A stored ruling as the API serves it."""

    id: str
    rating: Rating
    wrench_derived: WrenchDerived


class GameSummary(_Model):
    slug: str
    name: str
    family: str
    books: int
    rulings: int  # cleared rulings on the wall


class Games(_Model):
    games: list[GameSummary]


class CardFound(_Model):
    name: str
    type_line: str = ""
    mana_cost: str = ""
    similarity: float = 0.0  # trigram similarity of the typed text to the name, 0..1


class CardSearch(_Model):
    """GET /api/cards: cards of one game's card table whose names start with, or are near, what was typed."""

    game: str
    q: str
    cards: list[CardFound] = Field(default_factory=list)
    note: str = ""  # why nothing could be found (the game has no card table), else ""


class RulingSummary(_Model):
    """A ruling as the wall and the review queue list it."""

    id: str
    game: str
    game_name: str
    question: str
    answer: str
    verdict: Verdict
    public_state: str
    public_reason: str | None = None
    created_at: str
    rating: Rating


class Wall(_Model):
    rulings: list[RulingSummary]
    page: int
    pages: int
    total: int


class Queue(_Model):
    rulings: list[RulingSummary]


class RatingResult(_Model):
    id: str
    rating: Rating


class RetireResult(_Model):
    id: str
    retired_at: str
    retired_reason: str


class ReviewResult(_Model):
    id: str
    public_state: str
    public_reason: str


def degraded(
    wrench: Mapping[str, Any], stages: tuple[str, ...] = ("fusion", "rerank", "answer")
) -> list[tuple[str, str, str]]:
    """What of one ruling's road did not really run, from its stored wrench: ("arm", name, state) for every
    arm that did not answer, ("stage", name, state) for each of ``stages`` that fell back or was missing."""
    out = [
        ("arm", str(a.get("arm", "")), str(a.get("state", "")))
        for a in wrench.get("arms") or []
        if a.get("state") != StageState.OK
    ]
    for stage in stages:
        state = (wrench.get(stage) or {}).get("state")
        if state is not None and state != StageState.OK:
            out.append(("stage", stage, str(state)))
    return out
