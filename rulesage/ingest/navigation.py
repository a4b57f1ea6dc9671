"""Navigation text — tables of contents, indexes, lists of figures — is not rules text.

Such passages are kept (a citation may still land there) but never searched: their dense lists of headings
look relevant to every arm and crowd real rules out of the shortlist. They are recognised by their dot
leaders ("2.1 Setup . . . . . . 2", "Ability Rolls......189"), which rules text and tables do not use.
"""

from __future__ import annotations

import re

_LEADER = re.compile(r"(?:\.\s?){4,}\s*\S*\d")


def is_navigation(text: str, share: float = 0.5) -> bool:
    """True when at least ``share`` of the non-empty lines carry a dot leader running to a page number."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    leaders = sum(1 for ln in lines if _LEADER.search(ln))
    return leaders >= max(1, share * len(lines))
