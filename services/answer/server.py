"""answer: Answerer.Answer, a thin servicer over the attempt loop.

Only a ``ValidatedAnswer`` becomes citations in the response (``result_of`` refuses anything else); the
stamps on a citation (page, document, version, rule) come from the passages, never from the model.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
from psycopg_pool import AsyncConnectionPool

from rulesage import db
from rulesage.admission import Gate, Saturated
from rulesage.config import load
from rulesage.core.questions import clean_question
from rulesage.telemetry import Timings
from rulesage.v1 import answer_pb2, answer_pb2_grpc, common_pb2
from services.answer import loop
from services.answer.backends import make_backend, make_reader
from services.answer.backends.extractive import Reader
from services.answer.citations import ShownPassage, ValidatedAnswer, Verdict
from services.answer.context import PgLibrary, build_context, with_vectors
from services.answer.settings import AnswerSettings

log = logging.getLogger(__name__)


def shown_of(p: common_pb2.Passage) -> ShownPassage:
    return ShownPassage(
        id=p.id,
        text=p.text,
        doc_key=p.doc_key,
        doc_title=p.doc_title,
        doc_kind=p.doc_kind,
        doc_version=p.doc_version,
        page_start=p.page_start,
        page_end=p.page_end,
        heading_path=tuple(p.heading_path),
        rule_id=p.rule_id,
        section_id=p.section_id,
        rerank_score=p.rerank_score if p.has_rerank_score else None,
    )


def ruling_result(ruling: ValidatedAnswer) -> answer_pb2.AnswerResult:
    """The verdict, answer and citations of a checked answer; nothing else can make citations."""
    if not isinstance(ruling, ValidatedAnswer):
        raise TypeError("only a ValidatedAnswer becomes a ruling")
    verdict = answer_pb2.ANSWERED if ruling.verdict is Verdict.ANSWERED else answer_pb2.NOT_IN_BOOK
    return answer_pb2.AnswerResult(
        verdict=verdict,
        answer=ruling.answer,
        citations=[
            answer_pb2.Citation(
                passage_id=c.passage_id,
                quote=c.quote,
                start=c.start,
                end=c.end,
                page=c.page,
                doc_key=c.doc_key,
                doc_title=c.doc_title,
                doc_version=c.doc_version,
                rule_id=c.rule_id,
            )
            for c in ruling.citations
        ],
    )


def result_of(outcome: loop.Outcome, backend: object | None = None) -> answer_pb2.AnswerResult:
    if outcome.ruling is not None:
        result = ruling_result(outcome.ruling)
    elif outcome.unavailable is not None:
        result = answer_pb2.AnswerResult(verdict=answer_pb2.UNAVAILABLE, answer=outcome.unavailable)
    else:
        result = answer_pb2.AnswerResult(
            verdict=answer_pb2.NOT_IN_BOOK,
            answer="Not in the book: no answer could be backed by a verbatim quote from the passages found.",
        )
    result.model = outcome.model
    result.attempts = outcome.attempts
    result.rejections.extend(outcome.rejections)
    if outcome.confidence is not None:
        result.confidence = max(0.0, min(1.0, outcome.confidence))
    # the answerability threshold, for the backends that abstain by one (the extractive default)
    threshold = getattr(backend, "threshold", None)
    if isinstance(threshold, float | int):
        result.threshold = float(threshold)
        result.threshold_source = str(getattr(backend, "threshold_source", ""))
    return result


class AnswerService(answer_pb2_grpc.AnswererServicer):
    name = "answer"
    service_names = (answer_pb2.DESCRIPTOR.services_by_name["Answerer"].full_name,)

    def __init__(
        self,
        settings: AnswerSettings | None = None,
        backend: loop.Backend | None = None,
        library: loop.Library | None = None,
        reader: Reader | None = None,
    ) -> None:
        self.settings = settings or load(AnswerSettings)
        self.backend = backend
        self.library = library
        self._pool: AsyncConnectionPool | None = None
        self.reader = reader
        self.gate = Gate(self.settings.rulesage_answer_concurrency, self.settings.rulesage_answer_max_queue)

    def register(self, server: grpc.aio.Server) -> None:
        answer_pb2_grpc.add_AnswererServicer_to_server(self, server)

    async def start(self) -> None:
        if self.library is None:
            try:
                url = self.settings.database_url or db.database_url(start_embedded=False)
            except db.DatabaseError as exc:
                log.warning("answer: no database (%s): no section context, no rule lookup", exc)
            else:
                pool = db.async_pool(url, min_size=1, max_size=2)
                await pool.open(wait=False)
                self._pool = pool
                self.library = PgLibrary(pool)
        # loading the models happens before the service says SERVING; one reader serves every backend
        if self.reader is None and self.settings.rulesage_answer_selector == "trained":
            self.reader = await asyncio.to_thread(make_reader, self.settings)
        if self.backend is None:
            self.backend = await asyncio.to_thread(make_backend, self.settings, self.reader)
        log.info("answer: backend %s", self.backend.identity)

    async def stop(self) -> None:
        close = getattr(self.backend, "close", None)
        if close is not None:
            await close()
        if self._pool is not None:
            await self._pool.close()

    async def _context(self, passages: list[ShownPassage]) -> dict[int, tuple[str, str]]:
        if self.library is None:
            return {}
        try:
            sections = await self.library.sections([p.section_id for p in passages])
        except Exception as exc:  # the context is a help, not a requirement
            log.warning("answer: sections unavailable: %s", exc)
            return {}
        return build_context(passages, sections, self.settings.rulesage_answer_context_chars)

    async def _with_vectors(self, passages: list[ShownPassage]) -> list[ShownPassage]:
        """The passages with their stored embeddings attached where the library has them (a help: the
        extractive scorer embeds the passage itself otherwise)."""
        fetch = getattr(self.library, "vectors", None)
        if fetch is None:
            return passages
        try:
            found = await fetch([p.id for p in passages])
        except Exception as exc:
            log.warning("answer: stored vectors unavailable: %s", exc)
            return passages
        return with_vectors(passages, found)

    async def _read(
        self, question: str, passages: list[ShownPassage], known: tuple[str, ...] = ()
    ) -> loop.Reading | None:
        """The selector's reading every backend is given; a failure leaves it out (never fails the ask).
        ``known``: the names of the cards the question names, which the book is not expected to print."""
        if self.reader is None:
            return None
        try:
            return await asyncio.to_thread(self.reader.read, question, passages, known)
        except Exception as exc:
            log.warning("answer: the quote selector failed: %s", exc)
            return None

    async def Answer(
        self, request: answer_pb2.AnswerRequest, context: grpc.aio.ServicerContext
    ) -> answer_pb2.AnswerResult:
        assert self.backend is not None
        # the one question check (a BadQuestion is INVALID_ARGUMENT, by the runner's interceptor), then its
        # white space folded for the backends
        limit = self.settings.rulesage_max_question_chars
        question = " ".join(clean_question(request.question, limit).split())
        passages = [shown_of(p) for p in request.passages]
        timings = Timings(self.name)
        if not passages:
            result = answer_pb2.AnswerResult(
                verdict=answer_pb2.NOT_IN_BOOK,
                answer="Not in the book: no passage was found for this question.",
                model=self.backend.identity,
            )
            return result
        try:
            async with self.gate.slot():
                with timings.stage("answer.context", passages=len(passages)):
                    ctx, passages = await asyncio.gather(
                        self._context(passages), self._with_vectors(passages)
                    )
                priors = tuple(
                    loop.PriorView(id=r.id, question=r.question, answer=r.answer, score=r.score)
                    for r in request.priors
                )
                cards = tuple(
                    loop.CardView(c.name, c.type_line, c.oracle, tuple(c.rulings), c.written)
                    for c in request.cards
                )
                reading = None
                if self.reader is not None:
                    with timings.stage("answer.read"):
                        reading = await self._read(question, passages, loop.known_names(cards))
                prompt = loop.Prompt(
                    question, request.game, tuple(passages), ctx, priors=priors, cards=cards, reading=reading
                )
                with timings.stage("answer.run", backend=self.backend.identity) as span:
                    outcome = await loop.run(
                        prompt, self.backend, self.library, self.settings.rulesage_answer_timeout_s
                    )
                    span.set_attribute("answer.attempts", outcome.attempts)
        except Saturated as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"answer service saturated: {exc}")
        for stage, ms in outcome.timings:
            timings.add(stage, ms)
        result = result_of(outcome, self.backend)
        result.timings.extend(timings.proto())
        return result
