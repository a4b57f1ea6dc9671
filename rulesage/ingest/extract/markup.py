"""Markdown (markdown-it-py), HTML (BeautifulSoup + lxml) and DocBook XML (lxml) -> blocks.

Headings keep their levels (the section structure); markup is stripped and entities decoded, the visible
text kept as the reader sees it (white space collapsed as a browser would). No pages.
"""

from __future__ import annotations

import re
from pathlib import Path

from rulesage.ingest.extract.blocks import CELL_SEP, Block
from rulesage.ingest.extract.cleanup import clean_chars
from rulesage.ingest.model import ExtractionError


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", clean_chars(text)).strip()


def extract_markup(path: Path, text: str) -> list[Block]:
    suffix = path.suffix.lower()
    if suffix in {".md", ".markdown"}:
        return markdown_blocks(text)
    if suffix in {".html", ".htm"}:
        return html_blocks(text)
    if suffix == ".xml":
        return docbook_blocks(text, path.name)
    raise ExtractionError(f"{path.name}: unsupported markup {suffix}")


# -- Markdown ------------------------------------------------------------------------------------------


def _inline_text(token) -> str:  # type: ignore[no-untyped-def]
    out: list[str] = []
    for child in token.children or []:
        if child.type in {"text", "code_inline", "html_inline"}:
            out.append(child.content if child.type != "html_inline" else "")
        elif child.type in {"softbreak", "hardbreak"}:
            out.append("\n")
        elif child.type == "image":
            out.append("")
    return "".join(out)


def markdown_blocks(text: str) -> list[Block]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    blocks: list[Block] = []
    i = 0
    row: list[str] = []
    rows: list[str] = []
    in_table = False
    heading_level = 0
    list_depth = 0
    items: list[str] = []
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            heading_level = int(tok.tag[1])
        elif tok.type == "heading_close":
            heading_level = 0
        elif tok.type == "table_open":
            in_table, rows = True, []
        elif tok.type == "table_close":
            in_table = False
            if rows:
                blocks.append(Block("table", "\n".join(rows)))
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "tr_close":
            rows.append(CELL_SEP.join(row))
        elif tok.type in {"bullet_list_open", "ordered_list_open"}:
            list_depth += 1
        elif tok.type in {"bullet_list_close", "ordered_list_close"}:
            list_depth -= 1
            if list_depth == 0 and items:
                blocks.append(Block("para", "\n".join(items)))
                items = []
        elif tok.type == "inline":
            content = _flat(_inline_text(tok))
            if in_table:
                row.append(content)
            elif heading_level:
                if content:
                    blocks.append(Block("heading", content, level=heading_level))
            elif content:
                if list_depth:
                    items.append(content)
                else:
                    blocks.append(Block("para", content))
        elif tok.type in {"fence", "code_block"} and tok.content.strip():
            blocks.append(Block("para", clean_chars(tok.content.strip("\n"))))
        i += 1
    return blocks


# -- HTML ----------------------------------------------------------------------------------------------

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCK_TAGS = {
    "p",
    "li",
    "dd",
    "dt",
    "pre",
    "blockquote",
    "figcaption",
    "caption",
    "td",
    "th",
    "div",
    "section",
}
_SKIP_TAGS = {"script", "style", "head", "nav", "noscript", "template", "svg"}


def html_blocks(text: str) -> list[Block]:
    from bs4 import BeautifulSoup, NavigableString, Tag

    soup = BeautifulSoup(text, "lxml")
    root = soup.body or soup
    blocks: list[Block] = []

    def has_block_child(el: Tag) -> bool:
        return any(
            isinstance(c, Tag)
            and (c.name in _BLOCK_TAGS or c.name in _HEADINGS or c.name in {"table", "ul", "ol", "dl"})
            for c in el.descendants
        )

    def visit(el: Tag) -> None:
        loose: list[str] = []

        def flush_loose() -> None:
            t = _flat("".join(loose))
            if t:
                blocks.append(Block("para", t))
            loose.clear()

        for child in el.children:
            if isinstance(child, NavigableString):
                if type(child).__name__ in {"Comment", "Doctype", "Declaration", "ProcessingInstruction"}:
                    continue
                loose.append(str(child))
                continue
            if not isinstance(child, Tag) or child.name in _SKIP_TAGS:
                continue
            if child.name in _HEADINGS:
                flush_loose()
                t = _flat(child.get_text(" "))
                if t:
                    blocks.append(Block("heading", t, level=_HEADINGS[child.name]))
            elif child.name == "table":
                flush_loose()
                rows = []
                for tr in child.find_all("tr"):
                    cells = [_flat(c.get_text(" ")) for c in tr.find_all(["td", "th"])]
                    if any(cells):
                        rows.append(CELL_SEP.join(cells))
                if rows:
                    blocks.append(Block("table", "\n".join(rows)))
            elif child.name in _BLOCK_TAGS or child.name in {"ul", "ol", "dl", "br", "hr"}:
                flush_loose()
                if child.name in _BLOCK_TAGS and not has_block_child(child):
                    t = _flat(child.get_text())
                    if t:
                        blocks.append(Block("para", t))
                else:
                    visit(child)
            elif has_block_child(child):
                flush_loose()
                visit(child)
            else:
                loose.append(child.get_text())
        flush_loose()

    visit(root)
    return blocks


# -- DocBook XML ---------------------------------------------------------------------------------------

_DB_SECTIONS = {
    "sect1",
    "sect2",
    "sect3",
    "sect4",
    "sect5",
    "section",
    "chapter",
    "article",
    "appendix",
    "refentry",
    "refsect1",
    "refsect2",
    "simplesect",
    "book",
    "part",
    "glossary",
    "preface",
}
_DB_PARAS = {
    "para",
    "simpara",
    "formalpara",
    "programlisting",
    "screen",
    "literallayout",
    "note",
    "tip",
    "warning",
    "important",
    "caution",
    "glossdef",
}


def docbook_blocks(text: str, name: str = "document") -> list[Block]:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, recover=False)
    try:
        root = etree.fromstring(text.encode("utf-8"), parser)
    except etree.XMLSyntaxError as exc:
        raise ExtractionError(f"{name}: invalid XML ({exc})") from exc
    blocks: list[Block] = []

    def local(el) -> str:  # type: ignore[no-untyped-def]
        tag = el.tag if isinstance(el.tag, str) else ""
        return tag.rsplit("}", 1)[-1]

    def text_of(el) -> str:  # type: ignore[no-untyped-def]
        return _flat("".join(t for t in el.itertext() if isinstance(t, str)))

    visible = text_of  # itertext() yields text and tails only: comments and PIs stay out

    def visit(el, depth: int) -> None:  # type: ignore[no-untyped-def]
        for child in el:
            tag = local(child)
            if not tag or tag in {
                "sect1info",
                "sectioninfo",
                "articleinfo",
                "chapterinfo",
                "info",
                "indexterm",
                "remark",
            }:
                continue
            if tag == "title" and local(el) in _DB_SECTIONS | {"table"}:
                if local(el) != "table":
                    t = visible(child)
                    if t:
                        blocks.append(Block("heading", t, level=depth))
                continue
            if tag in _DB_SECTIONS:
                visit(child, depth + 1)
            elif tag in {"table", "informaltable"}:
                rows = [
                    CELL_SEP.join(visible(e) for e in row if local(e) == "entry")
                    for row in child.iter()
                    if local(row) == "row"
                ]
                title = next((visible(t) for t in child if local(t) == "title"), "")
                if title:
                    blocks.append(Block("para", title))
                if rows:
                    blocks.append(Block("table", "\n".join(rows)))
            elif tag in {"varlistentry", "glossentry"}:
                term = " ".join(visible(t) for t in child if local(t) in {"term", "glossterm"})
                body = [c for c in child if local(c) not in {"term", "glossterm"}]
                if term:
                    blocks.append(Block("heading", term, level=depth + 1))
                for c in body:
                    visit_para_like(c, depth + 1)
            elif tag in _DB_PARAS:
                visit_para_like(child, depth)
            elif tag in {
                "itemizedlist",
                "orderedlist",
                "variablelist",
                "glosslist",
                "listitem",
                "glossdiv",
                "simplelist",
                "blockquote",
                "procedure",
                "step",
            }:
                visit(child, depth)
            else:
                t = visible(child)
                if t:
                    blocks.append(Block("para", t))

    def visit_para_like(el, depth: int) -> None:  # type: ignore[no-untyped-def]
        nested = [
            c
            for c in el
            if local(c)
            in {
                "itemizedlist",
                "orderedlist",
                "variablelist",
                "para",
                "simpara",
                "table",
                "informaltable",
                "listitem",
            }
        ]
        if nested:
            head = _flat(el.text or "")
            if head:
                blocks.append(Block("para", head))
            visit(el, depth)
            return
        t = visible(el)
        if t:
            blocks.append(Block("para", t))

    visit(root, 1)
    return blocks
