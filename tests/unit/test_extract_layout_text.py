"""pdftotext -layout text: gutter detection, side-by-side columns, tables kept as rows, form-feed pages."""

from __future__ import annotations

from pathlib import Path

from rulesage.ingest.extract.layout_text import column_order, find_gutter
from rulesage.ingest.parse import parse_document

W = 44  # left column width; the right column starts at W + 6


def side_by_side(left: list[str], right: list[str]) -> list[str]:
    n = max(len(left), len(right))
    left = left + [""] * (n - len(left))
    right = right + [""] * (n - len(right))
    return [(a.ljust(W + 6) + b).rstrip() for a, b in zip(left, right, strict=True)]


LEFT = [
    "Hiding: a halfling who stays still has only",
    "a 10% chance of being seen in the woods,",
    "or 30% chance indoors.",
    "",
    "Climbing needs two free hands and a rope",
    "when the wall is wet.",
]
RIGHT = [
    "Listening at a door takes one full turn and",
    "the GM rolls for the player in secret.",
    "",
    "Sneak attacks double the damage dealt",
    "when the target is unaware.",
    "",
]


def test_gutter_found_where_right_column_starts() -> None:
    start, end = find_gutter(side_by_side(LEFT, RIGHT))
    assert start <= W + 1 and end == W + 6


def test_one_column_page_has_no_gutter() -> None:
    prose = ["This is one long column of text that runs all the way across the page."] * 10
    assert find_gutter(prose) is None


def test_left_column_is_read_before_right() -> None:
    order = [ln for ln in column_order(side_by_side(LEFT, RIGHT)) if ln.strip()]
    joined = " ".join(ln.strip() for ln in order)
    assert "only a 10% chance of being seen in the woods, or 30% chance indoors." in joined
    assert joined.index("Climbing") < joined.index("Listening")


def test_full_width_table_rows_stay_whole(tmp_path: Path) -> None:
    table = [
        "Thief Abilities",
        " Level     Open Locks   Remove Traps      Pick Pockets       Climb Walls     Hide",
        "   1          25            20                 30                80            10",
        "   2          30            25                 35                81            15",
        "   3          35            30                 40                82            20",
        "",
    ]
    page = "\n".join(table + side_by_side(LEFT, RIGHT)) + "\n\f"
    path = tmp_path / "book.txt"
    path.write_text(page + page)
    doc = parse_document(path, key="t", kind="rulebook")
    tables = [p for p in doc.passages if p.kind == "table"]
    assert tables, "the table was not detected"
    flat = " ".join(tables[0].text.split())
    assert "1 25 20 30 80 10 2 30 25 35 81 15 3 35 30 40 82 20" in flat
    assert [p.number for p in doc.pages] == [1, 2]
    assert all(p.method == "form-feed" for p in doc.pages)
    prose = " ".join(" ".join(p.text.split()) for p in doc.passages if p.kind == "prose")
    assert "has only a 10% chance of being seen in the woods, or 30% chance indoors." in prose
    page_two = [p for p in doc.passages if p.page_start == 2]
    assert page_two and all(p.page_end == 2 for p in page_two)
