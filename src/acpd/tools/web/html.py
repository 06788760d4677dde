"""HTML to readable markdown, and CSS selection, with selectolax's lexbor parser.

Why selectolax (lexbor) and not lxml: measured on a generated 250 KB page, parse + text is on
par (2.6 vs 2.4 ms), CSS selection is faster (1.8 ms vs 2.9 ms for lxml's XPath, and lxml
needs the extra `cssselect` package to take CSS at all), a tree walk is faster (2.1 vs
3.4 ms); lexbor is an HTML5-conformant parser (libxml2's HTML parser is HTML4-era and
mis-nests modern markup), maintained, and its wheel is a third of lxml's (1.6 vs 5.2 MB).

Rules of the conversion: the content root is the first <main>, else <article>, else <body>;
script, style, template, svg, iframe, noscript, head and form controls are dropped; headings
become `#`, list items `- ` or `1. `, links `[text](absolute url)` (http/https only), <pre>
a fenced block kept verbatim, <code> inline backticks, <b>/<strong> `**`, <i>/<em> `*`, table
rows cells joined by ` | `, <br> a line break, <hr> `---`. Whitespace outside <pre> collapses.
The walk uses an explicit stack: any nesting depth is fine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

if TYPE_CHECKING:
    from selectolax.lexbor import LexborHTMLParser, LexborNode

SKIP = frozenset({
    "script", "style", "template", "svg", "math", "iframe", "noscript", "head", "object",
    "canvas", "select", "button", "input", "textarea", "option",
})
BLOCKS = frozenset({
    "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "ul", "ol",
    "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "dl", "dt",
    "dd", "figure", "figcaption", "form", "fieldset", "details", "summary", "address", "hr",
})
_BLANK_RUNS = re.compile(r"\n{3,}")


def parse(html: str) -> LexborHTMLParser:
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(html)


def title_of(tree: LexborHTMLParser) -> str:
    node = tree.css_first("title")
    return " ".join(node.text().split()) if node is not None else ""


def to_markdown(tree: LexborHTMLParser, base_url: str) -> str:
    root = tree.css_first("main") or tree.css_first("article") or tree.body or tree.root
    if root is None:
        return ""
    writer = _Writer(base_url)
    # (node, its tag, leaving?): reading `node.tag` builds a new string each time.
    stack: list[tuple[LexborNode, str, bool]] = [(root, root.tag or "", False)]
    while stack:
        node, tag, leaving = stack.pop()
        if leaving:
            writer.close(node, tag)
            continue
        if tag == "-text":
            writer.text(node.text_content or "")
            continue
        if tag.startswith("-") or tag in SKIP:
            continue
        writer.open(node, tag)
        stack.append((node, tag, True))
        children = [(child, child.tag or "", False) for child in node.iter(include_text=True)]
        children.reverse()
        stack.extend(children)
    return writer.result()


def collapse(text: str) -> str:
    """Runs of whitespace as one space, an edge kept as one space (faster than a regex)."""
    words = text.split()
    if not words:
        return " " if text else ""
    joined = " ".join(words)
    if text[0].isspace():
        joined = " " + joined
    if text[-1].isspace():
        joined += " "
    return joined


@dataclass(slots=True)
class _Writer:
    base_url: str
    parts: list[str] = field(default_factory=list)
    pre: int = 0
    lists: list[list[int]] = field(default_factory=list)
    """One entry per open list: [next number] for <ol>, [] for <ul>."""
    marks: list[int] = field(default_factory=list)
    """Where each open link or emphasis started in `parts`."""

    def text(self, text: str) -> None:
        if self.pre:
            self.parts.append(text)
            return
        text = collapse(text)
        if text.strip() or (self.parts and not self.parts[-1].endswith((" ", "\n"))):
            self.parts.append(text)

    def block(self, prefix: str = "") -> None:
        self.parts.append("\n\n" + prefix)

    def open(self, node: LexborNode, tag: str) -> None:
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.block("#" * int(tag[1]) + " ")
        elif tag == "li":
            self._item()
        elif tag in ("ul", "ol"):
            if not self.lists:
                self.block()
            self.lists.append([1] if tag == "ol" else [])
        elif tag == "pre":
            self.pre += 1
            self.block("```\n")
        elif tag == "code" and not self.pre:
            self.parts.append("`")
        elif tag in ("b", "strong") and not self.pre:
            self.parts.append("**")
        elif tag in ("i", "em") and not self.pre:
            self.parts.append("*")
        elif tag == "a":
            self.marks.append(len(self.parts))
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "hr":
            self.block("---")
        elif tag == "blockquote":
            self.block("> ")
        elif tag == "img":
            alt = " ".join(_attr(node, "alt").split())
            if alt:
                self.parts.append(f"[image: {alt}]")
        elif tag in ("td", "th"):
            if self.parts and not self.parts[-1].endswith("\n"):
                self.parts.append(" | ")
        elif tag == "tr":
            self.parts.append("\n")
        elif tag in BLOCKS:
            self.block()

    def close(self, node: LexborNode, tag: str) -> None:
        if tag == "pre":
            self.pre -= 1
            self.parts.append("\n```")
            self.block()
        elif tag == "code" and not self.pre:
            self.parts.append("`")
        elif tag in ("b", "strong") and not self.pre:
            self.parts.append("**")
        elif tag in ("i", "em") and not self.pre:
            self.parts.append("*")
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            if not self.lists:
                self.block()
        elif tag == "li":
            pass
        elif tag == "a" and self.marks:
            self._link(node, self.marks.pop())
        elif tag in BLOCKS:
            self.block()

    def _item(self) -> None:
        depth = max(len(self.lists) - 1, 0)
        numbering = self.lists[-1] if self.lists else []
        if numbering:
            bullet = f"{numbering[0]}. "
            numbering[0] += 1
        else:
            bullet = "- "
        self.parts.append("\n" + "  " * depth + bullet)

    def _link(self, node: LexborNode, start: int) -> None:
        inner = "".join(self.parts[start:]).strip()
        href = _attr(node, "href").strip()
        target = _absolute(self.base_url, href) if href else ""
        if not inner or not target.lower().startswith(("http://", "https://")):
            return
        del self.parts[start:]
        if self.parts and not self.parts[-1].endswith((" ", "\n")):
            self.parts.append(" ")
        self.parts.append(f"[{inner}]({target})")

    def result(self) -> str:
        text = "".join(self.parts)
        lines = [line.rstrip() for line in text.split("\n")]
        return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


@lru_cache(maxsize=4096)
def _absolute(base: str, href: str) -> str:
    """Pages repeat their links (menus, footers): each is joined once."""
    if href.startswith(("https://", "http://")):
        return href
    return urljoin(base, href)


def _attr(node: LexborNode, name: str) -> str:
    value: Any = node.attributes.get(name)
    return value if isinstance(value, str) else ""


def to_text(tree: LexborHTMLParser) -> str:
    """Plain text, one block per line (faster than markdown)."""
    root = tree.body or tree.root
    if root is None:
        return ""
    tree.strip_tags(list(SKIP))
    text = root.text(separator="\n")
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


# --- web_scrape -------------------------------------------------------------------------------


class BadSelector(ValueError):
    pass


def select(tree: LexborHTMLParser, selector: str, extract: str, limit: int, base_url: str
           ) -> tuple[list[str], int]:
    """The first `limit` extracts of the nodes matching `selector`, and how many matched.
    `extract`: text | html | attr:<name> (href and src are made absolute). Raises
    BadSelector for a selector lexbor cannot read."""
    try:
        nodes = tree.css(selector)
    except Exception as exc:  # lexbor's error types differ by version: any failure is the input
        raise BadSelector(f"bad CSS selector {selector[:200]!r}: {exc}") from None
    found: list[str] = []
    for node in nodes:
        if len(found) >= limit:
            break
        value = _extract(node, extract, base_url)
        if value is not None:
            found.append(value)
    return found, len(nodes)


def _extract(node: LexborNode, extract: str, base_url: str) -> str | None:
    if extract == "text":
        return " ".join(node.text(separator=" ").split())
    if extract == "html":
        return node.html or ""
    name = extract.removeprefix("attr:")
    value: Any = node.attributes.get(name)
    if not isinstance(value, str):
        return None
    return _absolute(base_url, value) if name in ("href", "src") else value
