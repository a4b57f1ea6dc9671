"""The chat messages a language-model backend is shown for one turn (pure: Prompt in, messages out)."""

from __future__ import annotations

from services.answer.citations import MIN_ANSWER_CHARS, ShownPassage
from services.answer.loop import CardView, PriorView, Prompt

SYSTEM = f"""You are a board-game rules judge. Answer ONLY from the rulebook passages you are given.
Reply with one JSON object, fields in this order:
1. "quotes": the sentences that decide the question, each copied character for character from a PASSAGE \
block (never from the CONTEXT around it), with that passage's passage_id.
2. "answer": the ruling in plain words, at least one full sentence ({MIN_ANSWER_CHARS}+ characters), \
saying only what the quotes support.
3. "verdict": "answered", or "not_in_book" when no passage answers the question (then "quotes" may be \
empty). Saying "not_in_book" is better than guessing."""

TOOL = """If the answer depends on a numbered rule that is referred to but not shown, you may instead put up \
to 5 rule numbers in "lookup_rules" (leave "quotes" empty and "verdict" "not_in_book"): you will be shown \
those rules once and must then answer. Otherwise leave "lookup_rules" empty."""


PRIORS_RULE = """After the passages you may be shown EARLIER RULINGS of this site on similar questions. They \
are examples of how such questions were answered, NOT the rulebook: they never outrank a passage (where \
they disagree, the passage is right), and they can never be quoted or cited (quotes come only from PASSAGE \
blocks)."""

PRIORS_HEAD = (
    "EARLIER RULINGS of this site (examples only, not the rulebook: never outrank the passages above,"
    " never quote or cite them):"
)
CARDS_RULE = """Before the passages you are shown the CARDS the question names: what each card does \
(its Oracle text) and its official rulings. Use them to see which rules apply; they are NOT the rulebook and \
can never be quoted or cited (quotes come only from PASSAGE blocks)."""
CARDS_HEAD = "CARDS named in the question (what they do; not the rulebook, never quote or cite them):"
CARD_RULINGS = 4  # a card's first official rulings; the page shows them all
PRIOR_ANSWER_CHARS = 600  # an earlier answer is a reminder, not a second book: its opening is enough


def _label(p: ShownPassage) -> str:
    parts = [p.doc_title or p.doc_key]
    if p.page_start:
        span = f"p. {p.page_start}" if p.page_end in (0, p.page_start) else f"pp. {p.page_start}-{p.page_end}"
        parts.append(span)
    if p.rule_id:
        parts.append(f"rule {p.rule_id}")
    if p.heading_path:
        parts.append(" > ".join(p.heading_path))
    return ", ".join(parts)


def render_passage(p: ShownPassage, context: tuple[str, str] | None, fetched: bool = False) -> str:
    head = f"### passage_id {p.id}{' (looked up)' if fetched else ''}: {_label(p)}"
    lines = [head]
    before, after = context or ("", "")
    if before:
        lines.append(f"CONTEXT before (read only, do not quote):\n{before}")
    lines.append(f"PASSAGE {p.id} (quote from here):\n{p.text}")
    if after:
        lines.append(f"CONTEXT after (read only, do not quote):\n{after}")
    return "\n".join(lines)


def render_prior(n: int, p: PriorView) -> str:
    answer = p.answer if len(p.answer) <= PRIOR_ANSWER_CHARS else p.answer[: PRIOR_ANSWER_CHARS - 1] + "…"
    return (
        f"--- earlier ruling {n} (rated {p.score:.1f}/3; not a passage, not citable)\n"
        f"Question asked: {p.question}\nRuling given: {answer}"
    )


def render_card(c: CardView, rulings: bool = True) -> str:
    lines = [f"--- {c.name}" + (f" ({c.type_line})" if c.type_line else ""), c.oracle or "(no rules text)"]
    if rulings and c.rulings:
        lines += [f"Official ruling: {r}" for r in c.rulings[:CARD_RULINGS]]
    return "\n".join(lines)


def render_reading(prompt: Prompt) -> str:
    """The trained selector's reading, the same one the extractive backend quotes from: a hint to read
    first, never a passage (each pick names the passage it is copied from)."""
    assert prompt.reading is not None
    by_id = {p.id: p for p in prompt.passages}
    lines = [
        "A trained quote selector read these passages. The sentences it finds most likely to decide the"
        " question, best first (a hint: check them against the passages; quote from the PASSAGE blocks):"
    ]
    for k in prompt.reading.picks:
        p = by_id.get(k.passage_id)
        if p is not None:
            lines.append(f'- passage_id {k.passage_id} ({k.probability:.2f}): "{p.text[k.start : k.end]}"')
    a = prompt.reading.answerability
    verdict = "likely answer" if a >= prompt.reading.threshold else "likely do NOT answer"
    lines.append(f"Its estimate that these passages answer the question: {a:.2f} (they {verdict} it).")
    return "\n".join(lines)


def messages(prompt: Prompt) -> list[dict[str, str]]:
    system = (
        SYSTEM
        + ("\n" + TOOL if prompt.tool_offered else "")
        + ("\n" + CARDS_RULE if prompt.cards else "")
        + ("\n" + PRIORS_RULE if prompt.priors else "")
    )
    fetched = set(prompt.fetched)
    blocks = [render_passage(p, prompt.context.get(p.id), p.id in fetched) for p in prompt.passages]
    user = [f"Game: {prompt.game}" if prompt.game else ""]
    if prompt.cards:  # what the cards do frames which rules matter; the book follows and decides
        user.append(CARDS_HEAD + "\n" + "\n\n".join(render_card(c) for c in prompt.cards))
    user += ["Passages:", "\n\n".join(blocks)]
    if prompt.priors:  # after every passage of the book (looked-up ones included), never among them
        earlier = [render_prior(n, p) for n, p in enumerate(prompt.priors, 1)]
        user.append(PRIORS_HEAD + "\n" + "\n\n".join(earlier))
    if prompt.rejection is not None:
        user.append(
            f"Previous attempt rejected: {prompt.rejection.line()}.\n"
            "Copy each quote exactly, word for word, from one PASSAGE block, with that block's passage_id."
        )
    if prompt.reading is not None and prompt.reading.picks:
        user.append(render_reading(prompt))
    user.append(f"Question: {prompt.question}")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(u for u in user if u)},
    ]
