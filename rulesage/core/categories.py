"""The category map and its classifier (pure): a game's question categories, each mapped to the book's own
sections, and the call that puts one question in one of them or abstains.

A map (``data/categories/<game>.toml``, named by the game's ``categories`` key in ``shelf.toml``) lists
categories, each with a description and example questions in players' words, and the sections that hold
its answers: heading paths (``"Combat > Actions in Combat"`` selects every passage whose heading path starts
with those headings) and, for numbered rulebooks, rule-number prefixes (``"603"`` selects 603.1, 603.3b...).

The classifier needs no language model: the question's sentence vector against the vectors of every
category's description and examples. A category's score is the mean cosine of its best few texts (one lucky
example does not decide), the confidence is the softmax of the scores, and the call abstains when the
confidence is under the threshold. It is "dumb and reliable" by design: when it is sure, every passage of
the mapped sections gets a vote; when it is unsure, the leg stays out of the election.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

NAME = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
RULE_PREFIX = re.compile(r"^\d{3}(\.\d+[a-z]?)?$")
SEPARATOR = " > "
TOP_TEXTS = 3  # a category's score: the mean cosine of its TOP_TEXTS best description/example texts
TEMPERATURE = 0.02  # softmax temperature over cosine scores (MiniLM cosines differ by hundredths)
# Abstain under this confidence: the lowest threshold whose votes were right at least 80 % of the time on the
# held-out fifth of the training questions of the mapped games (training/category/calibrate.py: 0.818 at
# 0.95, voting on 56 % of them; 0.697 at 0.5).
THRESHOLD = 0.95
MAX_EXAMPLES = 64
MAX_TEXT = 1500


class MapError(ValueError):
    """A category map is unreadable or invalid; the message names the file and the category."""


@dataclass(frozen=True)
class Category:
    name: str
    description: str
    examples: tuple[str, ...]
    sections: tuple[tuple[str, ...], ...] = ()  # heading paths, each a tuple of headings
    rules: tuple[str, ...] = ()
    learned: tuple[str, ...] = ()  # training questions answered inside these sections (with_learned)

    @property
    def texts(self) -> tuple[str, ...]:
        """What the classifier reads for this category: its description, its examples, its learned ones."""
        return (self.description, *self.examples, *self.learned)

    def kinds(self) -> tuple[str, ...]:
        """Each text's kind, in the order of ``texts``."""
        return ("description", *("example",) * len(self.examples), *("learned",) * len(self.learned))

    def heading_paths(self) -> list[str]:
        """The sections as written in the map (and stored): headings joined by " > "."""
        return [SEPARATOR.join(s) for s in self.sections]

    def section_labels(self) -> list[str]:
        return labels(self.heading_paths(), self.rules)


def labels(heading_paths: Sequence[str], rules: Sequence[str]) -> list[str]:
    """A category's sections as the wrench shows them: its heading paths, then "rule 603"..."""
    return [*heading_paths, *(f"rule {r}" for r in rules)]


@dataclass(frozen=True)
class CategoryMap:
    game: str
    categories: tuple[Category, ...]
    learned: str | None = None  # the learned examples' file, relative to the map (training/category/learn.py)


def _norm(heading: str) -> str:
    return " ".join(heading.split()).casefold()


def _strings(value: object, what: str, key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise MapError(f"{what}: {key!r} must be a list of non-empty strings")
    return [" ".join(v.split()) for v in value]


def parse_map(data: Mapping[str, object], source: str, game: str | None = None) -> CategoryMap:
    """Validate a decoded map. ``game``: the slug the shelf names it for (the map's own ``game`` must
    agree)."""
    slug = data.get("game")
    if not isinstance(slug, str) or not slug.strip():
        raise MapError(f"{source}: missing 'game' (the shelf slug the map is for)")
    slug = slug.strip()
    if game is not None and slug != game:
        raise MapError(f"{source}: the map is for game {slug!r}, but the shelf names it for {game!r}")
    learned = data.get("learned")
    if learned is not None and (not isinstance(learned, str) or not learned.strip()):
        raise MapError(f"{source}: 'learned' must name a file beside the map")
    unknown_top = set(data) - {"game", "category", "learned"}
    if unknown_top:
        raise MapError(f"{source}: unknown keys {sorted(unknown_top)}")
    raw = data.get("category")
    if not isinstance(raw, list) or not raw:
        raise MapError(f"{source}: no [[category]] tables")
    out: list[Category] = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        what = f"{source}: category #{i + 1}"
        if not isinstance(c, dict):
            raise MapError(f"{what}: not a table")
        name = c.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            raise MapError(f"{what}: 'name' must be snake_case (a-z, 0-9, _), got {name!r}")
        what = f"{source}: category {name!r}"
        if name in seen:
            raise MapError(f"{what}: duplicate name")
        seen.add(name)
        description = c.get("description")
        if not isinstance(description, str) or not description.strip():
            raise MapError(f"{what}: missing 'description'")
        examples = _strings(c.get("examples"), what, "examples")
        if not examples:
            raise MapError(f"{what}: give at least one example question")
        if len(examples) > MAX_EXAMPLES:
            raise MapError(f"{what}: {len(examples)} examples (at most {MAX_EXAMPLES})")
        if any(len(t) > MAX_TEXT for t in [description, *examples]):
            raise MapError(f"{what}: a description or example is over {MAX_TEXT} characters")
        sections = []
        for s in _strings(c.get("sections"), what, "sections"):
            parts = tuple(p.strip() for p in s.split(SEPARATOR.strip()))
            if not all(parts):
                raise MapError(f"{what}: empty heading in section {s!r}")
            sections.append(parts)
        rules = _strings(c.get("rules"), what, "rules")
        for r in rules:
            if not RULE_PREFIX.match(r):
                raise MapError(f"{what}: rule prefix {r!r} is not a rule number such as 603 or 702.19")
        if not sections and not rules:
            raise MapError(f"{what}: maps to no section (give 'sections' or 'rules')")
        unknown = set(c) - {"name", "description", "examples", "sections", "rules"}
        if unknown:
            raise MapError(f"{what}: unknown keys {sorted(unknown)}")
        out.append(
            Category(name, " ".join(description.split()), tuple(examples), tuple(sections), tuple(rules))
        )
    return CategoryMap(slug, tuple(out), learned.strip() if isinstance(learned, str) else None)


def with_learned(cmap: CategoryMap, rows: Iterable[Mapping[str, object]], source: str) -> CategoryMap:
    """The map with its learned examples: rows ``{"category", "question", "source"}``, each naming a
    category of the map (a row naming another is an error: the map and its learned file disagree)."""
    by: dict[str, list[str]] = {c.name: [] for c in cmap.categories}
    for i, row in enumerate(rows, 1):
        name, question = row.get("category"), row.get("question")
        if not isinstance(name, str) or name not in by:
            raise MapError(f"{source}: row {i}: category {name!r} is not in the map")
        if not isinstance(question, str) or not question.strip() or len(question) > MAX_TEXT:
            raise MapError(f"{source}: row {i}: the question is empty or over {MAX_TEXT} characters")
        if not isinstance(row.get("source"), str) or not str(row.get("source")).strip():
            raise MapError(f"{source}: row {i}: no provenance ('source': a URL, or 'written')")
        by[name].append(" ".join(question.split()))
    cats = tuple(
        Category(c.name, c.description, c.examples, c.sections, c.rules, tuple(by[c.name]))
        for c in cmap.categories
    )
    return CategoryMap(cmap.game, cats, cmap.learned)


def heading_matches(path: Sequence[str], section: Sequence[str]) -> bool:
    """True when the passage's heading path starts with the section's headings (spacing and case aside)."""
    if len(path) < len(section):
        return False
    return all(_norm(a) == _norm(b) for a, b in zip(path, section, strict=False))


def rule_matches(rule_id: str | None, prefix: str) -> bool:
    """True when ``rule_id`` is the rule ``prefix`` or one of its sub-rules (603 -> 603.3b, not 6031)."""
    if not rule_id:
        return False
    if rule_id == prefix:
        return True
    if not rule_id.startswith(prefix):
        return False
    nxt = rule_id[len(prefix)]
    # 603 -> "603.1"; 702.19 -> "702.19a" or "702.19.": never 702.1 -> 702.19
    return nxt == "." or (nxt.isalpha() and not prefix[-1].isalpha())


def selects(category: Category, heading_path: Sequence[str], rule_ids: Sequence[str | None]) -> bool:
    """Does the category's section list hold a passage with this heading path and these rule numbers
    (its own and the rule it belongs to)?"""
    if any(heading_matches(heading_path, s) for s in category.sections):
        return True
    return any(rule_matches(r, p) for r in rule_ids for p in category.rules)


@dataclass(frozen=True)
class Call:
    """The classifier's call: ``name`` None when it abstained."""

    name: str | None
    confidence: float
    threshold: float
    best: str
    runner_up: str = ""
    runner_up_confidence: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)


def scores(pairs: Iterable[tuple[str, float]], top: int = TOP_TEXTS) -> dict[str, float]:
    """Each category's score from (category, cosine of one of its texts to the question) pairs: the mean
    cosine of its ``top`` nearest texts."""
    by: dict[str, list[float]] = {}
    for owner, c in pairs:
        by.setdefault(owner, []).append(float(c))
    return {k: float(np.mean(sorted(v, reverse=True)[:top])) for k, v in by.items()}


def cosine_pairs(question: np.ndarray, texts: np.ndarray, owners: Sequence[str]) -> list[tuple[str, float]]:
    """(owner, cosine) for unit-normalised text rows against the question (what the arm's SQL returns)."""
    q = np.asarray(question, dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)
    cos = np.asarray(texts, dtype=np.float32) @ q
    return list(zip(owners, cos.tolist(), strict=True))


def call(score: Mapping[str, float], threshold: float = THRESHOLD, temperature: float = TEMPERATURE) -> Call:
    """Softmax the scores into confidences; the best category, or an abstention under ``threshold``."""
    if not score:
        return Call(None, 0.0, threshold, "")
    names = sorted(score, key=lambda k: (-score[k], k))
    s = np.asarray([score[k] for k in names], dtype=np.float64)
    p = np.exp((s - s.max()) / temperature)
    p = p / p.sum()
    best, conf = names[0], float(p[0])
    runner, runner_conf = (names[1], float(p[1])) if len(names) > 1 else ("", 0.0)
    return Call(
        best if conf >= threshold else None,
        conf,
        threshold,
        best,
        runner,
        runner_conf,
        dict(zip(names, p.tolist(), strict=True)),
    )
