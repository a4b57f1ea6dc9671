"""The extractive backend: sentence spans, choosing and abstaining, and the threshold calibration."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rulesage.core.metrics import calibrate_threshold
from services.answer.backends.extractive import (
    RERANK_PRIOR,
    BiEncoderScorer,
    Candidate,
    ExtractiveBackend,
    choose,
    rank_sentences,
    sentences,
)
from services.answer.citations import MIN_QUOTE_CHARS, ShownPassage, ValidatedAnswer, Verdict, validate
from services.answer.loop import Prompt
from tests.support.answer_passages import MOVE, SPELLS


def test_sentences_are_exact_stripped_spans() -> None:
    spans = sentences(MOVE.text)
    got = [MOVE.text[s:e] for s, e in spans]
    assert got[1] == (
        "You can break up your movement on your turn, using some of your speed before and after your action."
    )
    assert got[-1] == "Difficult terrain costs 1 extra foot for every foot you move."
    assert all(t == t.strip() and len(t) >= MIN_QUOTE_CHARS for t in got)


def test_a_short_heading_joins_the_next_sentence() -> None:
    first = sentences(MOVE.text)[0]
    assert MOVE.text[first[0] : first[1]].startswith("Movement. On your turn")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("Ab c.!?\n•-'\u201c")), max_size=300))
def test_sentence_spans_are_in_order_inside_the_text_and_long_enough(text: str) -> None:
    spans = sentences(text)
    end = 0
    for s, e in spans:
        assert end <= s < e <= len(text)
        assert e - s >= MIN_QUOTE_CHARS
        assert text[s:e] == text[s:e].strip()
        end = e


def cand(p: ShownPassage, sentence: str, score: float) -> Candidate:
    start = p.text.index(sentence)
    return Candidate(p, start, start + len(sentence), score)


def test_choose_quotes_the_best_and_a_close_runner_up_verbatim() -> None:
    ranked = [
        cand(MOVE, "On your turn, you can move a distance up to your speed.", 0.71),
        cand(MOVE, "Difficult terrain costs 1 extra foot for every foot you move.", 0.69),
        cand(SPELLS, "Verbal components require the chanting of mystic words.", 0.50),
    ]
    raw = choose(ranked, threshold=0.4)
    assert raw.verdict is Verdict.ANSWERED and raw.confidence == pytest.approx(0.71)
    assert [q.quote for q in raw.quotes] == [ranked[0].text, ranked[1].text]
    checked = validate(raw, [MOVE, SPELLS])
    assert isinstance(checked, ValidatedAnswer)
    assert {c.page for c in checked.citations} == {90}
    assert "p. 90" in checked.answer


def test_choose_abstains_below_the_threshold() -> None:
    raw = choose([cand(SPELLS, "Verbal components require the chanting of mystic words.", 0.3)], 0.4)
    assert raw.verdict is Verdict.NOT_IN_BOOK and raw.quotes == ()
    assert choose([], 0.4).verdict is Verdict.NOT_IN_BOOK


@pytest.fixture(scope="module")
def scorer() -> BiEncoderScorer:
    return BiEncoderScorer()


def test_the_bi_encoder_scorer_ranks_the_answering_sentence_first(scorer: BiEncoderScorer) -> None:
    ranked = rank_sentences("how far can I move on my turn?", [SPELLS, MOVE], scorer)
    assert ranked[0].passage.id == 1
    assert "move a distance up to your speed" in ranked[0].text
    assert all(0.0 <= c.score <= 1.0 for c in ranked)


def test_the_backend_answers_what_the_book_says_and_abstains_on_what_it_does_not(
    scorer: BiEncoderScorer,
) -> None:
    backend = ExtractiveBackend(threshold=0.45, scorer=scorer)
    assert backend.identity.startswith("extractive:bi-encoder-cosine:")
    yes = asyncio.run(backend.final_turn(Prompt("how far can I move on my turn?", "srd", (MOVE, SPELLS))))
    no = asyncio.run(backend.final_turn(Prompt("who shuffles the tarot deck?", "srd", (MOVE, SPELLS))))
    assert yes.verdict is Verdict.ANSWERED
    assert no.verdict is Verdict.NOT_IN_BOOK
    assert (yes.confidence or 0) > (no.confidence or 0)


def test_calibration_picks_the_threshold_that_answers_most_within_the_floors() -> None:
    unanswerable = [0.1, 0.2, 0.3, 0.35, 0.38, 0.4, 0.42, 0.44, 0.46, 0.7]
    answerable = [0.45, 0.6, 0.65, 0.8, 0.9]
    pairs = [(s, False) for s in unanswerable] + [(s, True) for s in answerable]
    cal = calibrate_threshold(pairs)
    assert cal is not None
    # abstaining below 0.45 catches 8/10 unanswerable and nothing answerable; below 0.6 would also meet the
    # floors (9/10, 9 of 10 abstains right) but answers fewer questions
    assert cal.threshold == pytest.approx(0.445)
    assert (cal.abstain_precision, cal.abstain_recall) == (1.0, 0.8)
    assert cal.answered_share == pytest.approx(7 / 15)
    assert cal.n == 15


def test_calibration_midpoint_and_none_when_the_floors_cannot_be_met() -> None:
    pairs = [(0.1, False), (0.2, False), (0.3, False), (0.4, False), (0.6, True), (0.9, True)]
    cal = calibrate_threshold(pairs)
    assert cal is not None
    assert cal.threshold == pytest.approx(0.5)
    assert cal.answered_share == pytest.approx(2 / 6)
    assert (cal.abstain_precision, cal.abstain_recall) == (1.0, 1.0)
    mixed = [(0.5, False), (0.5, True), (0.9, True)]
    assert calibrate_threshold(mixed) is None
    assert calibrate_threshold([(0.5, True)]) is None


def test_scores_on_the_wire_do_not_leak_into_the_extractive_scale(scorer: BiEncoderScorer) -> None:
    # the reranker's scores are blended with the fused order and not on the [0, 1] cosine scale the abstain
    # threshold is calibrated on: only their order counts (a small prior), never their size
    same = "On your turn, you can move a distance up to your speed."
    q = "how far can I move?"
    ranked = rank_sentences(
        q, [ShownPassage(5, same, rerank_score=-3.0), ShownPassage(6, same, rerank_score=19.0)], scorer
    )
    wider = rank_sentences(
        q, [ShownPassage(5, same, rerank_score=-300.0), ShownPassage(6, same, rerank_score=1900.0)], scorer
    )
    assert [c.score for c in ranked] == pytest.approx([c.score for c in wider])
    assert ranked[0].passage.id == 6 and ranked[0].score - ranked[1].score == pytest.approx(
        RERANK_PRIOR * math.log1p(1)
    )
    assert 0.0 < ranked[0].score <= 1.0


def test_stored_passage_vectors_stand_in_for_embedding_the_passage(scorer: BiEncoderScorer) -> None:
    import dataclasses

    from rulesage.ingest.store import embed_text

    q = "how far can I move on my turn?"
    plain = [MOVE, SPELLS]
    embedded = scorer.score_passages(q, plain)  # nothing stored: each drawn as ingest draws it
    assert embedded[0] > 0.2 and embedded[0] > embedded[1]
    vecs = scorer.embedder.embed_passages([embed_text(p.heading_path, p.text) for p in plain])
    stored = [
        dataclasses.replace(p, vector=v, vector_model=scorer.model) for p, v in zip(plain, vecs, strict=True)
    ]
    assert scorer.score_passages(q, stored) == pytest.approx(embedded, abs=1e-5)
    # the stored vector is what is read: a negated one scores 0 (clipped), not the text's relevance
    flipped = [dataclasses.replace(stored[0], vector=-vecs[0]), stored[1]]
    assert scorer.score_passages(q, flipped) == pytest.approx([0.0, embedded[1]], abs=1e-5)
    # a vector drawn by another model is never compared with this model's question: the text is embedded
    alien = [
        dataclasses.replace(p, vector=-v, vector_model="another-model")
        for p, v in zip(plain, vecs, strict=True)
    ]
    assert scorer.score_passages(q, alien) == pytest.approx(embedded, abs=1e-5)


def test_the_rerankers_order_breaks_near_ties_between_passages(scorer: BiEncoderScorer) -> None:
    import dataclasses

    q = "how far can I move on my turn?"
    twin = dataclasses.replace(MOVE, id=3)  # the same text in a second passage
    first = rank_sentences(q, [dataclasses.replace(MOVE, rerank_score=1.0), twin], scorer)
    assert first[0].passage.id == 1  # no rerank score on the twin: no prior either way
    read = [dataclasses.replace(MOVE, rerank_score=-2.0), dataclasses.replace(twin, rerank_score=5.0)]
    ranked = rank_sentences(q, read, scorer)
    assert ranked[0].passage.id == 3  # the reranker read the twin first: its sentence wins the tie
    top, other = (
        ranked[0].score,
        next(c.score for c in ranked if c.passage.id == 1 and c.text == ranked[0].text),
    )
    assert top - other == pytest.approx(RERANK_PRIOR * math.log1p(1), abs=1e-6)


def test_stored_sentence_vectors_stand_in_for_embedding_the_sentences(scorer: BiEncoderScorer) -> None:
    import dataclasses

    from rulesage.ingest.store import embed_text
    from services.answer import sentence_index
    from services.answer.backends.extractive import sentence_inputs

    q = "how far can I move on my turn?"
    per = [(p, sentence_inputs(p)) for p in (MOVE, SPELLS)]
    fresh = scorer.score_sentences(q, per)
    assert fresh == pytest.approx(scorer.score(q, [t for _, ins in per for _, _, t in ins]))
    (row,) = [r for r in sentence_index.rows_for(scorer.embedder, [(1, MOVE.text, MOVE.heading_path)])]
    _, model, sha, flat, blob, passage_vec = row
    # the passage's own vector by the answer's encoder, as the dense arm embeds it (headings, then text)
    own = np.array([float(x) for x in passage_vec.strip("[]").split(",")], np.float32)
    assert float(own @ scorer.embedder.embed_passages([embed_text(MOVE.heading_path, MOVE.text)])[0]) > 0.999
    got = sentence_index.stored((model, sha, flat, blob), MOVE.text)
    assert got is not None and got[1] == [(s, e) for s, e, _ in per[0][1]]
    with_stored = [(dataclasses.replace(MOVE, sentence_vectors=got), per[0][1]), per[1]]
    assert scorer.score_sentences(q, with_stored) == pytest.approx(fresh, abs=2e-3)  # float16 storage
    # drawn from another text, or for other spans, or by another model: embedded afresh, never misread
    assert sentence_index.stored((model, sha, flat, blob), MOVE.text + " Amended.") is None
    moved = (got[0], [(s + 1, e) for s, e in got[1]], got[2])
    alien = ("another-model", got[1], -got[2])
    for bad in (moved, alien):
        assert scorer.score_sentences(q, [(dataclasses.replace(MOVE, sentence_vectors=bad), per[0][1])]) == (
            pytest.approx(fresh[: len(per[0][1])], abs=1e-5)
        )


def test_the_threshold_comes_from_the_shipped_calibration_unless_overridden(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from services.answer.selector import load
    from services.answer.settings import CALIBRATION, AnswerSettings, calibrated_threshold

    shipped = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    value, source = AnswerSettings(rulesage_answer_selector="cosine").extractive_threshold()
    assert value == shipped["threshold"] and "training questions" in source and shipped["when"] in source
    # the default, the trained selector, abstains under its own model's calibrated threshold
    model = load()
    assert AnswerSettings().extractive_threshold() == (
        model.threshold,
        f"{model.calibrated_on}, {model.identity}",
    )
    assert AnswerSettings(rulesage_extractive_threshold=0.3).extractive_threshold() == (
        0.3,
        "RULESAGE_EXTRACTIVE_THRESHOLD",
    )
    broken = tmp_path / "calibration.json"
    broken.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="missing or unreadable"):
        calibrated_threshold(broken)
    broken.write_text('{"threshold": 7}', encoding="utf-8")
    with pytest.raises(ValueError, match="outside"):
        calibrated_threshold(broken)


def test_the_answering_floor_and_what_a_threshold_does() -> None:
    from rulesage.core.metrics import abstain_figures, answering_floor

    pairs = [(0.1, True), (0.2, False), (0.3, True), (0.4, False)] + [(0.5 + i / 100, True) for i in range(8)]
    assert answering_floor(pairs) == pytest.approx(0.1)  # 10 answerable: one may fall under
    assert answering_floor(pairs, share=0.8) == pytest.approx(0.3)
    assert abstain_figures(pairs, 0.35) == {
        "answered_share_of_answerable": 0.8,
        "abstain_precision": round(1 / 3, 3),
        "abstain_recall": 0.5,
    }


def test_a_candidate_answerer_is_named_by_its_setting_and_a_bad_one_fails_the_start(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from pydantic import ValidationError

    from services.answer.backends import make_reader
    from services.answer.selector import MODEL
    from services.answer.settings import AnswerSettings

    candidate = json.loads(MODEL.read_text(encoding="utf-8"))
    candidate["threshold"] = 0.123
    candidate.setdefault("trained", {})["known_cards"] = True
    path = tmp_path / "answerer.json"
    path.write_text(json.dumps(candidate), encoding="utf-8")
    settings = AnswerSettings(rulesage_answer_model=str(path))
    value, source = settings.extractive_threshold()
    assert value == 0.123 and source.endswith(settings.answerer().identity)
    assert settings.answerer().identity != AnswerSettings().answerer().identity
    reader = make_reader(settings)
    assert reader.answerer.reads_cards and not AnswerSettings().answerer().reads_cards
    assert reader.threshold == 0.123
    (tmp_path / "broken.json").write_text("{}", encoding="utf-8")
    for bad in (tmp_path / "broken.json", tmp_path / "absent.json"):
        with pytest.raises(ValidationError, match="RULESAGE_ANSWER_MODEL"):
            AnswerSettings(rulesage_answer_model=str(bad))
