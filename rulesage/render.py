"""A ruling as plain text for the terminal (`rulesage ask`)."""

from __future__ import annotations

import textwrap
from typing import Any

VERDICT_LABEL = {"answered": "Ruling", "not_in_book": "Not in the book", "unavailable": "Answer unavailable"}


def _where(c: dict[str, Any]) -> str:
    bits = [c.get("doc_title") or c.get("doc_key") or "?"]
    if c.get("rule_id"):
        bits.append(f"rule {c['rule_id']}")
    if c.get("page"):
        bits.append(f"p. {c['page']}")
    return ", ".join(bits)


def ruling_text(r: dict[str, Any]) -> str:
    w = r.get("wrench", {})
    lines = [
        f"{VERDICT_LABEL.get(r['verdict'], r['verdict'])} — {r.get('game_name') or r['game']}",
        f"Q: {r['question']}",
        "",
        textwrap.fill(r["answer"], 100),
    ]
    for c in r.get("citations", []):
        lines.append(f'  > "{c["quote"]}" — {_where(c)}')
    if r.get("cards"):
        lines.append("")
        lines.append("Cards in this question (what they do; not the book):")
        for card in r["cards"]:
            head = " · ".join(x for x in (card["name"], card.get("type_line", ""), card.get("pt", "")) if x)
            lines.append(f"  - {head}: {(card.get('oracle') or '(no rules text)').replace(chr(10), ' ')}")
            for ruling in card.get("rulings", [])[:3]:
                lines.append(
                    textwrap.fill(ruling, 100, initial_indent="      ruling: ", subsequent_indent="        ")
                )
    if r["verdict"] != "answered" and r.get("passages"):
        lines.append("")
        lines.append("Passages found:")
        for p in r["passages"][:8]:
            page = f"p. {p['page_start']}" if p.get("page_start") else (p.get("rule_id") or "")
            lines.append(f"  - {p['doc_title']} {page}: {p['text'][:120].replace(chr(10), ' ')}…")
    lines += [
        "",
        "wrench:",
        f"  voted: {', '.join(w.get('voted', [])) or 'none'}   ceiling {w.get('ceiling_formula', '')}",
        "  arms: "
        + "; ".join(f"{a['arm']} {a['state']} {a['hits']} hits {a['ms']:.0f} ms" for a in w.get("arms", [])),
        f"  rerank: {w.get('rerank', {}).get('state', '?')} {w.get('rerank', {}).get('detail', '')}".rstrip(),
        f"  guarantees fired: {', '.join(w.get('guarantees_fired', [])) or 'none'}",
        f"  search span {w.get('search_span_ms', 0):.0f} ms · answer {w.get('answer_ms', 0):.0f} ms · "
        f"total {w.get('total_ms', 0):.0f} ms · trace {r.get('trace_id') or '-'}",
    ]
    if r.get("id"):
        lines.append(f"  permalink id: {r['id']}")
    return "\n".join(lines)
