"""extractive: the embedded default, no language model. It quotes the sentence(s) of the shown passages that
best answer the question, verbatim with their page, and abstains below a relevance threshold.

By default the quote and the abstention come from the service's reading (``Reader``): the trained quote
selector scores every sentence from its MiniLM cosine, its passage's, the careful reader's order and the
question's words (``services.answer.selector``), and the trained answerability model's probability is held to
its calibrated threshold. The design it replaced stays behind RULESAGE_ANSWER_SELECTOR=cosine: a sentence's
score blends its own cosine (with its heading, so a short sentence keeps its topic) and its passage's, and the
best score is held to calibration.json's threshold.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from services.answer.citations import MIN_QUOTE_CHARS, RawAnswer, RawQuote, ShownPassage, Verdict
from services.answer.loop import Pick, Prompt, Reading, ToolRequest, known_names
from services.answer.selector import sigmoid
from services.answer.sentences import sentence_text

if TYPE_CHECKING:
    from services.answer.selector import Answerer
    from services.answer.sentences import SentenceReader

log = logging.getLogger(__name__)

SENTENCE_WEIGHT = 0.7  # the rest is the passage's own relevance
# A sentence of the reranker's k-th passage (0-based) gives up RERANK_PRIOR * ln(1 + k). Chosen on 274
# helper-written questions (never gold) whose answer was among the 8 shown: the best sentence sat in a passage
# holding the quote 0.701 of the time without it, 0.741 with 0.02 (0.01: 0.719, 0.03: 0.730, 0.05: 0.726).
RERANK_PRIOR = 0.02
MAX_SENTENCES = 2  # quoted per answer
SECOND_MARGIN = 0.04  # a second sentence is quoted when it scores within this of the best
# The same with the trained selector, in log-odds. On held-out training asks a margin of 0.5 quotes two
# sentences in 27 % of answers (0.25: 12 %, 1.0: 47 %, 2.0: 92 %: its probabilities sit near 1 at the top).
SECOND_LOGIT_MARGIN = 0.5
MAX_SENTENCE_CHARS = 400


class Scorer(Protocol):
    identity: str

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        """Relevance of each text to the question, in [0, 1]."""
        ...


class BiEncoderScorer:
    """Cosine similarity of the answer encoder's embeddings (rulesage.embed; RULESAGE_ANSWER_ENCODER), clipped
    to [0, 1]."""

    def __init__(self) -> None:
        from services.answer.settings import answer_embedder

        self.embedder = answer_embedder()
        self.model = self.embedder.identity.model
        self.identity = f"bi-encoder-cosine:{self.model}"
        self._question: tuple[str, np.ndarray] | None = None  # the last question's vector (one ask's calls)

    def _q(self, question: str) -> np.ndarray:
        last = self._question
        if last is not None and last[0] == question:
            return last[1]
        q = self.embedder.embed_queries([question])[0]
        self._question = (question, q)
        return q

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        m = self.embedder.embed_passages(list(texts), batch=8)  # short sentences: small batches pad least
        return [float(x) for x in np.clip(m @ self._q(question), 0.0, 1.0)]

    def score_sentences(
        self, question: str, per: Sequence[tuple[ShownPassage, list[tuple[int, int, str]]]]
    ) -> list[float]:
        """Every sentence's relevance, in order: from the passage's stored sentence vectors where this model
        drew them for exactly these spans, embedding only the others."""
        q = self._q(question)
        out: list[float | None] = []
        todo: list[tuple[int, str]] = []
        for p, inputs in per:
            stored = p.sentence_vectors  # (model, spans, matrix)
            spans = [(s, e) for s, e, _ in inputs]
            if stored is not None and stored[0] == self.model and stored[1] == spans:
                out.extend(float(x) for x in np.clip(np.asarray(stored[2], np.float32) @ q, 0.0, 1.0))
                continue
            for _, _, text in inputs:
                todo.append((len(out), text))
                out.append(None)
        if todo:
            for (i, _), v in zip(todo, self.score(question, [t for _, t in todo]), strict=True):
                out[i] = v
        return [float(v) for v in out if v is not None]

    def score_passages(self, question: str, passages: Sequence[ShownPassage]) -> list[float]:
        """The passages' relevance from their stored embeddings where this model drew them (the dense arm's
        vector: the passage's nearest headings, then its text), embedding only the others the same way."""
        from rulesage.ingest.store import embed_text

        q = self._q(question)
        out = [
            float(np.clip(np.asarray(p.vector, dtype=np.float32) @ q, 0.0, 1.0))
            if p.vector is not None and p.vector_model == self.model
            else None
            for p in passages
        ]
        todo = [i for i, v in enumerate(out) if v is None]
        texts = [embed_text(passages[i].heading_path, passages[i].text) for i in todo]
        for i, v in zip(todo, self.score(question, texts), strict=True):
            out[i] = v
        return [float(v) for v in out if v is not None]


def default_scorer() -> Scorer:
    """The bi-encoder cosine. The shipped reranker's scores are not on a [0, 1] scale (20 x cosine + a learned
    correction, then blended with the fused order), so clipping them saturated every sentence at 1 and the
    backend never abstained; the cosine is the scale the threshold is calibrated on."""
    return BiEncoderScorer()


# -- sentences ---------------------------------------------------------------------------------------------
_BREAK = re.compile(r"(?<=[.!?:;])[\"'”’)\]]?\s+(?=[\"'“‘(\[]?[A-Z0-9•\-–—*])|\n\s*\n|\n(?=\s*[•\-–—*]\s)")


def _merge_short(spans: list[tuple[int, int]], text: str, floor: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and (out[-1][1] - out[-1][0] < floor):
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    if len(out) > 1 and out[-1][1] - out[-1][0] < floor:
        last = out.pop()
        out[-1] = (out[-1][0], last[1])
    return out


def _strip(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) of ``text``, each ``text[start:end]`` stripped and at least
    MIN_QUOTE_CHARS long (short fragments join their neighbour); over-long ones split at line breaks."""
    spans: list[tuple[int, int]] = []
    at = 0
    for m in _BREAK.finditer(text):
        spans.append(_strip(text, at, m.start() + len(m.group(0).rstrip())))
        at = m.end()
    spans.append(_strip(text, at, len(text)))
    spans = [(s, e) for s, e in spans if e > s]
    fine: list[tuple[int, int]] = []
    for s, e in spans:
        if e - s <= MAX_SENTENCE_CHARS or "\n" not in text[s:e]:
            fine.append((s, e))
            continue
        lines, at = [], s
        for m in re.finditer(r"\n", text[s:e]):
            lines.append(_strip(text, at, s + m.start()))
            at = s + m.end()
        lines.append(_strip(text, at, e))
        fine.extend(_merge_short([x for x in lines if x[1] > x[0]], text, 40))
    return [sp for sp in _merge_short(fine, text, MIN_QUOTE_CHARS) if sp[1] - sp[0] >= MIN_QUOTE_CHARS]


# -- choosing ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    passage: ShownPassage
    start: int
    end: int
    score: float  # the selector's probability; with the cosine design, the blend of rank_sentences

    @property
    def text(self) -> str:
        return self.passage.text[self.start : self.end]


def sentence_inputs(p: ShownPassage) -> list[tuple[int, int, str]]:
    """Each sentence's span and the text its relevance is drawn from: the passage's nearest heading, then the
    sentence (so a short sentence keeps its topic)."""
    head = p.heading_path[-1] if p.heading_path else ""
    return [(s, e, sentence_text(head, p.text[s:e])) for s, e in sentences(p.text)]


def sentence_cosines(
    question: str, per: Sequence[tuple[ShownPassage, list[tuple[int, int, str]]]], scorer: Scorer
) -> list[float]:
    """Every sentence's relevance, in order, from the vectors ingest stored where the scorer can read them
    (the MiniLM scorer), else by scoring the texts."""
    stored = getattr(scorer, "score_sentences", None)
    if stored:
        return list(stored(question, per))
    return scorer.score(question, [t for _, inputs in per for _, _, t in inputs])


def cosines(
    question: str, per: Sequence[tuple[ShownPassage, list[tuple[int, int, str]]]], scorer: Scorer
) -> tuple[list[float], list[float]]:
    """Every sentence's relevance (in order) and every passage's, from what ingest stored where the scorer
    can read it (the MiniLM scorer), else by scoring the texts."""
    sentence = sentence_cosines(question, per, scorer)
    passages = [p for p, _ in per]
    by_vector = getattr(scorer, "score_passages", None)
    passage = (
        by_vector(question, passages) if by_vector else scorer.score(question, [p.text for p in passages])
    )
    return sentence, passage


def rank_sentences(question: str, passages: Sequence[ShownPassage], scorer: Scorer) -> list[Candidate]:
    """Every sentence of every passage, best first, scored SENTENCE_WEIGHT * sentence + rest * passage, less
    the reranker-order prior.

    The passage's relevance comes from the same scorer (the reranker's scores on the wire are on another
    scale and blended with the fused order, so they are not reused here)."""
    per = [(p, sentence_inputs(p)) for p in passages]
    spans = [(p, s, e) for p, inputs in per for s, e, _ in inputs]
    if not spans:
        return []
    scores, passage_scores = cosines(question, per, scorer)
    per_passage = {p.id: passage_scores[i] for i, p in enumerate(passages)}
    # the careful reader's order, when it read them (passages arrive dealt ends-first, not in order)
    reread = sorted(
        (p for p in passages if p.rerank_score is not None), key=lambda p: -(p.rerank_score or 0.0)
    )
    prior = {p.id: RERANK_PRIOR * math.log1p(k) for k, p in enumerate(reread)}
    out = [
        Candidate(
            p,
            s,
            e,
            SENTENCE_WEIGHT * scores[i] + (1 - SENTENCE_WEIGHT) * per_passage[p.id] - prior.get(p.id, 0.0),
        )
        for i, (p, s, e) in enumerate(spans)
    ]
    return sorted(out, key=lambda c: -c.score)


def reader_order(passages: Sequence[ShownPassage]) -> list[ShownPassage]:
    """The careful reader's order (passages arrive dealt ends-first); unread ones after, as dealt."""
    return sorted(passages, key=lambda p: -(p.rerank_score if p.rerank_score is not None else -1e9))


def read_sentences(
    question: str,
    passages: Sequence[ShownPassage],
    scorer: Scorer,
    answerer: Answerer,
    sentence_reader: SentenceReader | None = None,
    known: Sequence[str] = (),
) -> tuple[list[Candidate], float]:
    """Every sentence, best first, scored by the trained quote selector (a probability) or, with the
    sentence reader, by the selector and the reader over the selector's best; and the trained
    answerability: the probability that the shown passages answer the question (from the selector's own
    scores, the scale its threshold was calibrated on)."""
    from rulesage.core.text import asked_apart
    from services.answer.selector import Shown

    ordered = reader_order(passages)
    per = [(p, sentence_inputs(p)) for p in ordered]
    if not any(inputs for _, inputs in per):
        return [], 0.0
    s_cos, p_cos = cosines(question, per, scorer)
    # A forum post tells its situation first and asks last: each sentence's cosine to the asked sentence
    # alone as well (one more question embedding), when the question is more than that sentence.
    asked = asked_apart(question)
    a_cos = sentence_cosines(asked, per, scorer) if asked is not None else []
    shown, at = [], 0
    for (p, inputs), pc in zip(per, p_cos, strict=True):
        shown.append(
            Shown(
                text=p.text,
                heading=p.heading_path[-1] if p.heading_path else "",
                cosine=pc,
                rerank_score=p.rerank_score,
                errata=p.doc_kind == "errata",
                spans=tuple((s, e) for s, e, _ in inputs),
                sentence_cosines=tuple(s_cos[at : at + len(inputs)]),
                asked_cosines=tuple(a_cos[at : at + len(inputs)]),
            )
        )
        at += len(inputs)
    logits = answerer.select(question, shown)
    order, read = logits, None
    if sentence_reader is not None and len(logits):
        texts = [t for _, inputs in per for _, _, t in inputs]
        order, read = sentence_reader.order(question, texts, logits)
    confidence = answerer.answerable(question, shown, logits, read, known)
    spans = [(p, s, e) for p, inputs in per for s, e, _ in inputs]
    out = [Candidate(p, s, e, sigmoid(float(v))) for (p, s, e), v in zip(spans, order, strict=True)]
    return sorted(out, key=lambda c: -c.score), confidence


READ_PICKS = 3  # sentences a reading hands on: the best, and the runners-up a second quote comes from


class Reader:
    """The quote selector and answerability model over one scorer: one reading per ask, for any backend."""

    def __init__(
        self,
        answerer: Answerer,
        threshold: float,
        source: str,
        scorer: Scorer | None = None,
        sentences: SentenceReader | None = None,
    ):
        self.answerer = answerer
        self.threshold = threshold
        self.source = source
        self.scorer = scorer or default_scorer()
        self.sentences = sentences
        if answerer.needs_reader and sentences is None:
            raise ValueError(
                f"the answerability model {answerer.identity} reads the sentence reader's scores: serve it"
                " beside one (RULESAGE_ANSWER_SENTENCE_READER is off, or none is shipped)"
            )

    def read(self, question: str, passages: Sequence[ShownPassage], known: Sequence[str] = ()) -> Reading:
        """The reading of one ask. ``known``: names the question uses that the card table knows (never
        counted as names the book fails to print)."""
        ranked, sure = read_sentences(question, passages, self.scorer, self.answerer, self.sentences, known)
        picks = tuple(Pick(c.passage.id, c.start, c.end, c.score) for c in ranked[:READ_PICKS])
        return Reading(picks, sure, self.threshold, self.source)


def from_reading(reading: Reading, passages: Sequence[ShownPassage]) -> list[Candidate]:
    by_id = {p.id: p for p in passages}
    return [
        Candidate(by_id[k.passage_id], k.start, k.end, k.probability)
        for k in reading.picks
        if k.passage_id in by_id
    ]


def _where(p: ShownPassage) -> str:
    title = p.doc_title or p.doc_key or "the book"
    return f"{title}, p. {p.page_start}" if p.page_start else title


def choose(
    ranked: Sequence[Candidate],
    threshold: float,
    confidence: float | None = None,
    second: Callable[[Candidate, Candidate], bool] | None = None,
) -> RawAnswer:
    """Quote the best sentence (and one close runner-up), or abstain when the confidence (the best
    sentence's score unless given) is below ``threshold``. ``second(best, c)`` says whether ``c`` is close
    enough to be quoted beside the best (by default: within SECOND_MARGIN and over the threshold)."""
    top = ranked[0].score if ranked else 0.0
    sure = top if confidence is None else confidence
    if not ranked or sure < threshold:
        return RawAnswer((), "", Verdict.NOT_IN_BOOK, confidence=sure)
    best = ranked[0]
    close = second or (lambda b, c: c.score >= max(threshold, b.score - SECOND_MARGIN))
    chosen = [best]
    for c in ranked[1:]:
        if len(chosen) >= MAX_SENTENCES or not close(best, c):
            break
        chosen.append(c)
    chosen.sort(key=lambda c: (c.passage.id != best.passage.id, c.passage.id, c.start))
    # the answer leads with the deciding sentence and its page, once; a close second sentence (a rule's
    # exception, its other half) is cited beside it and shown as a supporting quote, not repeated here
    answer = f"The book says — {_where(best.passage)}: “{best.text}”"
    quotes = tuple(RawQuote(c.passage.id, c.text) for c in chosen)
    return RawAnswer(quotes, answer, Verdict.ANSWERED, confidence=sure)


def _logit(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def selected_second(best: Candidate, c: Candidate) -> bool:
    """With the trained selector: a second sentence is quoted when its odds of holding the answer are within
    SECOND_LOGIT_MARGIN of the best's (the selector cannot tell which of the two decides)."""
    return _logit(c.score) >= _logit(best.score) - SECOND_LOGIT_MARGIN


class ExtractiveBackend:
    """No language model: it never asks for tools, and a retry gets the same (deterministic) answer."""

    def __init__(
        self,
        threshold: float,
        scorer: Scorer | None = None,
        threshold_source: str = "",
        reader: Reader | None = None,
    ) -> None:
        self.threshold = threshold
        self.threshold_source = threshold_source or "given by the caller"
        self.reader = reader
        self.scorer = reader.scorer if reader is not None else scorer or default_scorer()
        trained = f"+{reader.answerer.identity}" if reader is not None else ""
        if reader is not None and reader.sentences is not None:
            trained += f"+{reader.sentences.identity}"
        self.identity = f"extractive:{self.scorer.identity}{trained}"

    def _answer(self, prompt: Prompt) -> RawAnswer:
        # the service's reading, the one every backend is given; read here only when it failed there
        reading = prompt.reading
        if reading is None and self.reader is not None:
            reading = self.reader.read(prompt.question, prompt.passages, known_names(prompt.cards))
        if reading is None:
            return choose(rank_sentences(prompt.question, prompt.passages, self.scorer), self.threshold)
        ranked = from_reading(reading, prompt.passages)
        return choose(ranked, reading.threshold, reading.answerability, second=selected_second)

    async def open_turn(self, prompt: Prompt) -> RawAnswer | ToolRequest:
        return await self.final_turn(prompt)

    async def final_turn(self, prompt: Prompt) -> RawAnswer:
        return await asyncio.to_thread(self._answer, prompt)

    async def close(self) -> None:
        return None
