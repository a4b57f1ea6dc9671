"""The expected figures as data, and the one command that writes them everywhere they are shown.

``figures.json`` (beside this file) holds, as pyserini's ``2cr/*.yaml`` do, each measured **condition**: the
command that reproduces it, the day it ran, and its figures per set (``gold-dev``, ``gold-real-dev``, or a
named subset). It also holds the **tables** drawn from those conditions and the **gate**, whose floors are
each figure of one condition less a margin of a few questions.

Each place that shows figures holds a marked block, rewritten from the data by ``rulesage figures`` and
checked by ``rulesage figures --check`` (and a unit test):

    <!-- figures:TABLE -->            Markdown: the README and the model cards
    ...generated...
    <!-- /figures:TABLE -->

    # <figures:gate>                  TOML: the gate's floors (rulesage/eval/gate.toml)
    ...generated...
    # </figures:gate>

``rulesage eval ... --record CONDITION`` stores a run's figures under its condition, with its command.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIGURES = HERE / "figures.json"
GATE = HERE / "gate.toml"
# Every file holding generated blocks, relative to the repository root.
TARGETS = (
    "README.md",
    "rulesage/encoder/MODEL_CARD.md",
    "rulesage/encoder/query/MODEL_CARD.md",
    "rulesage/encoder/query-cards/MODEL_CARD.md",
    "services/rerank/model/MODEL_CARD.md",
    "services/answer/model/MODEL_CARD.md",
    "rulesage/eval/gate.toml",
)
_MD_BLOCK = re.compile(r"(<!-- figures:([\w.-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.S)
_TOML_BLOCK = re.compile(r"(# <figures:([\w.-]+)>\n)(.*?)(# </figures:\2>)", re.S)


class FiguresError(ValueError):
    """The figures file or a marked block that cannot be rendered: what and where."""


# -- from an eval report ---------------------------------------------------------------------------
def from_report(report: Mapping[str, Any]) -> dict[str, float | int]:
    """A set's figures from `rulesage eval --json`: its scalar figures, each arm's as ``arm.NAME.FIGURE``,
    and ``degraded`` as the count of stages that fell back."""
    out: dict[str, float | int] = {}
    for key, value in report.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        out[key] = value
    for arm, figures in (report.get("per_arm") or {}).items():
        for key, value in (figures or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key != "n":
                out[f"arm.{arm}.{key}"] = value
    degraded = report.get("degraded")
    count = sum(int(v) for v in degraded.values()) if isinstance(degraded, dict) else int(degraded or 0)
    out["degraded"] = count
    return out


def load(path: Path = FIGURES) -> dict[str, Any]:
    data = json.loads(path.read_text())
    for key in ("conditions", "tables"):
        if not isinstance(data.get(key), dict):
            raise FiguresError(f"{path}: no {key!r} object")
    return data


def save(data: dict[str, Any], path: Path = FIGURES) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def record(
    condition: str,
    command: str,
    reports: Mapping[str, Mapping[str, Any]],
    *,
    title: str | None = None,
    path: Path = FIGURES,
    today: date | None = None,
) -> dict[str, Any]:
    """Store eval reports ({set: report}) under ``condition``; its other sets are kept."""
    data = load(path)
    cond = data["conditions"].setdefault(condition, {"title": title or condition, "figures": {}})
    if title:
        cond["title"] = title
    cond["command"] = command
    cond["measured"] = (today or date.today()).isoformat()
    for name, report in reports.items():
        cond["figures"][name] = from_report(report)
    save(data, path)
    return cond


# -- rendering -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    condition: str
    set: str
    metric: str


def _value(data: dict[str, Any], cell: Cell, where: str) -> float | int | None:
    cond = data["conditions"].get(cell.condition)
    if cond is None:
        raise FiguresError(f"{where}: unknown condition {cell.condition!r}")
    figures = cond["figures"].get(cell.set)
    if figures is None:
        raise FiguresError(f"{where}: condition {cell.condition!r} has no set {cell.set!r}")
    return figures.get(cell.metric)


def fmt(value: float | int | None, style: str = "short") -> str:
    """A figure as the tables print it: "short" .907 (shares), "long" 0.907, "ms" 78.9; ints as they are."""
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    if style == "ms":
        return f"{value:.1f}"
    text = f"{value:.3f}"
    return text[1:] if style == "short" and text.startswith("0.") else text


def render_table(data: dict[str, Any], name: str) -> str:
    """A table of the figures file as Markdown: one row a condition, one column a figure; a column's cell
    joins the figure over the table's sets ("a / b") or over the column's own ``cells``. ``strong`` rows
    print in bold; with ``commands`` each row's command follows the table."""
    table = data["tables"].get(name)
    if table is None:
        raise FiguresError(f"unknown table {name!r}")
    sets: list[str] = table.get("sets", [])
    style = table.get("style", "short")
    columns = table["columns"]
    head = [table.get("corner", " / ".join(sets))] + [c["header"] for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table["rows"]:
        cells = [row["label"]]
        for col in columns:
            # a column names its cells ([set, figure], ...) or one figure over the table's sets
            pairs = col.get("cells") or [[s, col["metric"]] for s in sets]
            values = [
                fmt(_value(data, Cell(row["condition"], s, m), f"table {name}"), col.get("style", style))
                for s, m in pairs
            ]
            cells.append(" / ".join(values))
        if row.get("strong"):
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    if table.get("commands"):
        # each row's command (and the day it ran), under the table
        lines.append("")
        for row in table["rows"]:
            cond = data["conditions"][row["condition"]]
            lines.append(f"- {row['label']} ({cond.get('measured', '?')}): `{cond['command']}`")
    return "\n".join(lines) + "\n"


def floors(data: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The gate's floors: each gated figure of the gate's condition less ``margin_questions`` answerable
    questions' worth, rounded down to two places, so one flipped question does not fail the build."""
    gate = data.get("gate")
    if not gate:
        raise FiguresError("no gate in the figures file")
    cond = data["conditions"].get(gate["condition"])
    if cond is None:
        raise FiguresError(f"the gate's condition {gate['condition']!r} is not measured")
    out: dict[str, dict[str, float]] = {}
    for set_name, figures in cond["figures"].items():
        n = figures.get("n_answerable") or figures.get("n")
        if not n:
            raise FiguresError(f"the gate's {set_name} figures have no n_answerable")
        margin = gate["margin_questions"] / n
        out[set_name] = {
            metric: math.floor((figures[metric] - margin) * 100 + 1e-9) / 100 for metric in gate["metrics"]
        }
    return out


def render_gate(data: dict[str, Any]) -> str:
    gate = data["gate"]
    cond = data["conditions"][gate["condition"]]
    lines = [
        f"# Generated by `rulesage figures` from rulesage/eval/figures.json: condition {gate['condition']!r}"
        f" (measured {cond.get('measured', '?')}) less {gate['margin_questions']} questions' worth.",
    ]
    for set_name, values in floors(data).items():
        lines.append(f"[floors.{set_name}]")
        lines += [f"{metric} = {value:.2f}" for metric, value in values.items()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def card_section(data: dict[str, Any], name: str) -> list[str]:
    """A model card's "Figures" section: the table ``name`` within the markers `rulesage figures` rewrites."""
    return [
        "## Figures",
        "",
        "Whole shelf, through the real mesh (rulesage/eval/figures.json; `rulesage figures` rewrites this):",
        "",
        f"<!-- figures:{name} -->",
        render_table(data, name).rstrip(),
        f"<!-- /figures:{name} -->",
    ]


def render_block(data: dict[str, Any], name: str) -> str:
    return render_gate(data) if name == "gate" else render_table(data, name)


def rewrite(text: str, data: dict[str, Any], where: str) -> str:
    """``text`` with each marked block rendered afresh from ``data``."""

    def block(m: re.Match[str]) -> str:
        try:
            body = render_block(data, m.group(2))
        except FiguresError as exc:
            raise FiguresError(f"{where}: {exc}") from None
        return m.group(1) + body + m.group(4)

    pattern = _TOML_BLOCK if where.endswith(".toml") else _MD_BLOCK
    return pattern.sub(block, text)


def blocks(text: str, where: str) -> list[str]:
    pattern = _TOML_BLOCK if where.endswith(".toml") else _MD_BLOCK
    return [m.group(2) for m in pattern.finditer(text)]


def sync(root: Path = ROOT, *, check: bool = False, path: Path | None = None) -> list[str]:
    """Rewrite every target's blocks from the figures file; return the targets that were (with ``check``:
    that would be) changed. Every table of the file must be shown somewhere."""
    data = load(path or root / FIGURES.relative_to(ROOT))
    changed, shown = [], set()
    for rel in TARGETS:
        target = root / rel
        if not target.is_file():
            raise FiguresError(f"{rel}: missing")
        text = target.read_text()
        shown.update(blocks(text, rel))
        new = rewrite(text, data, rel)
        if new != text:
            changed.append(rel)
            if not check:
                target.write_text(new)
    unshown = sorted(set(data["tables"]) - shown)
    if unshown:
        raise FiguresError(f"tables shown nowhere: {', '.join(unshown)}")
    return changed
