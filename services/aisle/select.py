"""Which of the game's documents ride along, and how their passages form one ballot (pure).

Each chosen document sends its 8 best passages by meaning; at most 4 documents; errata/faq documents take the
slots first when they run short, then rulebooks, expansions, references; at most 32 candidates, one ballot
ranked by similarity (so the aisle's vote counts exactly like any other arm's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PER_DOCUMENT = 8
MAX_DOCUMENTS = 4
MAX_CANDIDATES = 32
KIND_PRIORITY = {"errata": 0, "faq": 1, "rulebook": 2, "expansion": 3, "reference": 4}


@dataclass(frozen=True)
class Document:
    id: int
    key: str
    kind: str
    own: bool  # owned by the asked game (False: a family-level document such as a shared glossary)


@dataclass(frozen=True)
class Hit:
    passage_id: int
    score: float
    document_id: int


def choose_documents(docs: Sequence[Document], most: int = MAX_DOCUMENTS) -> list[Document]:
    """Errata/faq first, then the game's own books before family-level ones, then by kind, then key."""
    ordered = sorted(
        docs, key=lambda d: (KIND_PRIORITY.get(d.kind, 9) > 1, not d.own, KIND_PRIORITY.get(d.kind, 9), d.key)
    )
    return ordered[:most]


def ballot(per_document: Sequence[Sequence[Hit]], cap: int = MAX_CANDIDATES) -> list[Hit]:
    """Merge each document's best (already cut to 8) into one list ranked by similarity, capped."""
    merged = [h for hits in per_document for h in hits[:PER_DOCUMENT]]
    merged.sort(key=lambda h: (-h.score, h.passage_id))
    return merged[:cap]
