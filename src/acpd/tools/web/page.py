"""A fetched body as text: which bodies are text, their charset, HTML rendered or selected.

HTML (text/html, application/xhtml+xml, or no type and a body that starts like markup) is
rendered to markdown or plain text; other text types (text/*, JSON, XML, JavaScript) are
returned decoded as they are; anything else (images, PDFs, archives) is refused. The charset
is the Content-Type's, else an HTML <meta charset>, else UTF-8; undecodable bytes are replaced.
Parsing is CPU work: callers run these functions off the event loop.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from acpd.net.client import FetchResult
from acpd.tools.errors import ErrorCategory, ToolError

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/x-javascript",
    "application/ld+json", "application/rss+xml", "application/atom+xml", "application/toml",
    "application/yaml", "application/x-yaml",
})
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""",
                           re.IGNORECASE)


@dataclass(slots=True)
class Page:
    title: str
    text: str
    is_html: bool


def is_html(result: FetchResult) -> bool:
    kind = result.content_type
    if kind in HTML_TYPES:
        return True
    return not kind and result.body.lstrip()[:1] == b"<"


def decode(result: FetchResult, html: bool) -> str:
    charset = result.charset
    if charset is None and html:
        found = _META_CHARSET.search(result.body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        codec = codecs.lookup(charset or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return result.body.decode(codec, errors="replace")


def render(result: FetchResult, fmt: str) -> Page:
    """The page as markdown (`fmt` "markdown") or plain text; raises ToolError for a body
    that is not text."""
    from acpd.tools.web import html as markup

    if is_html(result):
        tree = markup.parse(decode(result, True))
        title = markup.title_of(tree)
        body = (markup.to_markdown(tree, result.final_url) if fmt == "markdown"
                else markup.to_text(tree))
        return Page(title, body, True)
    kind = result.content_type
    if kind.startswith("text/") or kind in TEXT_TYPES or kind.endswith(("+json", "+xml")) \
            or (not kind and _looks_textual(result.body)):
        return Page("", decode(result, False), False)
    raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                    f"{result.final_url[:200]} is {kind or 'binary data'}, not text or HTML")


def _looks_textual(body: bytes) -> bool:
    return b"\x00" not in body[:4096]


def scrape(result: FetchResult, selector: str, extract: str, limit: int
           ) -> tuple[list[str], int]:
    from acpd.tools.web import html as markup

    if not is_html(result):
        raise ToolError(ErrorCategory.PERMANENT_FAILURE,
                        f"{result.final_url[:200]} is {result.content_type or 'not HTML'}; "
                        "web_scrape reads HTML pages")
    tree = markup.parse(decode(result, True))
    try:
        return markup.select(tree, selector, extract, limit, result.final_url)
    except markup.BadSelector as exc:
        raise ToolError(ErrorCategory.INVALID_PARAMETERS, str(exc)) from None
