"""`fetch` and `web_scrape` as ToolSpecs (ids core__fetch, core__web_scrape).

Both are `external_side_effect` and `network`: the pipeline asks (ask mode) or refuses
(read-only mode) as for any external effect, and refuses outright unless the shell policy's
`allow_network` is true. Each URL then goes through acpd.net.client's SSRF wall, whose
refusals are PolicyBlocked errors starting "blocked url" or "blocked address".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from acpd.net.settings import FetchSettings, NetHooks
from acpd.tools.spec import Effect, ToolContext, ToolOutput, ToolSpec, redaction

if TYPE_CHECKING:
    from acpd.net.client import FetchResult, SafeFetcher

log = logging.getLogger("acpd.tools")

LOGGED_RESULT = ("url", "final_url", "status", "content_type", "bytes", "truncated",
                 "redirects", "count", "shown")
"""The result fields the audit log keeps (never the page)."""


class FetchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=4096, description="An https:// URL")
    format: Literal["markdown", "text"] = Field(
        "markdown", description="markdown keeps headings, lists and links; text is plain")


class ScrapeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=4096, description="An https:// URL")
    selector: str = Field(min_length=1, max_length=1000, description="A CSS selector")
    extract: str = Field(
        "text", pattern=r"^(text|html|attr:[A-Za-z_:][A-Za-z0-9_:.-]{0,99})$",
        description="text, html, or attr:<name> (href and src come back absolute)")
    limit: int = Field(20, ge=1, le=1000, description="At most this many matches")


def _summary(result: FetchResult) -> dict[str, Any]:
    return {
        "url": result.url, "final_url": result.final_url, "status": result.status,
        "content_type": result.content_type, "bytes": len(result.body),
        "truncated": result.truncated, "redirects": result.redirects,
    }


def _truncation_note(result: FetchResult, limit: int) -> str:
    if not result.truncated:
        return ""
    return (f"\n\n[truncated: the body is longer than max_body_bytes ({limit} bytes); "
            "the rest was not fetched]")


class WebTools:
    """The two executors, sharing one fetcher (and its TLS context), made on first use: the
    client, the parser and the TLS stack are not imported at start-up."""

    def __init__(self, settings: FetchSettings, hooks: NetHooks | None) -> None:
        self.settings, self.hooks = settings, hooks
        self._fetcher: SafeFetcher | None = None

    @property
    def fetcher(self) -> SafeFetcher:
        if self._fetcher is None:
            from acpd.net.client import SafeFetcher

            self._fetcher = SafeFetcher(self.settings, self.hooks)
        return self._fetcher

    async def fetch(self, args: FetchParams, ctx: ToolContext) -> ToolOutput:
        import anyio.to_thread

        from acpd.tools.web.page import ACCEPT, render

        result = await self.fetcher.get(args.url, ACCEPT)
        page = await anyio.to_thread.run_sync(render, result, args.format)
        head = [f"# {page.title}"] if page.title else []
        head.append(f"URL: {result.final_url}")
        if result.redirects:
            head.append(f"(redirected from {result.url})")
        body = "\n".join(head) + "\n\n" + page.text
        note = _truncation_note(result, self.fetcher.settings.max_body_bytes)
        return ToolOutput(body + note, raw=_summary(result), body_end=len(body))

    async def web_scrape(self, args: ScrapeParams, ctx: ToolContext) -> ToolOutput:
        import anyio.to_thread

        from acpd.tools.web.page import ACCEPT, scrape

        result = await self.fetcher.get(args.url, ACCEPT)
        found, count = await anyio.to_thread.run_sync(
            scrape, result, args.selector, args.extract, args.limit)
        lines = [f"{count} matches for {args.selector!r} on {result.final_url}"
                 + (f" (showing {len(found)})" if len(found) < count else "")]
        lines += [f"[{i}] {value}" for i, value in enumerate(found, 1)]
        body = "\n".join(lines)
        note = _truncation_note(result, self.fetcher.settings.max_body_bytes)
        raw = {**_summary(result), "count": count, "shown": len(found), "matches": found}
        return ToolOutput(body + note, raw=raw, body_end=len(body))


def _precheck(settings: FetchSettings, hooks: NetHooks | None) -> Callable[[Any], None]:
    def precheck(args: FetchParams | ScrapeParams) -> None:
        from acpd.net.static import BlockedHost, check_static
        from acpd.tools.errors import ErrorCategory, ToolError

        try:
            check_static(args.url, settings, hooks)
        except BlockedHost as exc:
            raise ToolError(ErrorCategory.POLICY_BLOCKED, str(exc)) from None

    return precheck


def _hooks_from_env() -> NetHooks | None:
    try:
        return NetHooks.from_env()
    except (ValueError, TypeError, AttributeError) as exc:
        log.error("ignoring malformed network test hooks: %s", exc)
        return None


def make_web_specs(settings: FetchSettings | None = None, hooks: NetHooks | None = None
                   ) -> list[ToolSpec]:
    """The two web tools; `hooks` (tests) default to those of ACPD_TEST_NET_HOOKS, if set."""
    settings = settings or FetchSettings()
    hooks = hooks if hooks is not None else _hooks_from_env()
    tools = WebTools(settings, hooks)
    precheck = _precheck(settings, hooks)
    logged = redaction(("url", "format", "selector", "extract", "limit"), LOGGED_RESULT)
    return [
        ToolSpec(
            id="core__fetch", name="fetch",
            description="Fetch a public https:// page and return it as markdown (or plain "
            "text). Internal and private addresses are refused.",
            params=FetchParams, effect=Effect.EXTERNAL_SIDE_EFFECT, kind="fetch",
            execute=tools.fetch, title=lambda a: f"Fetch {a.url}", redaction=logged,
            retry_safe=True, network=True, precheck=precheck,
        ),
        ToolSpec(
            id="core__web_scrape", name="web_scrape",
            description="Fetch a public https:// page and return what a CSS selector matches: "
            "text, html, or an attribute (attr:href).",
            params=ScrapeParams, effect=Effect.EXTERNAL_SIDE_EFFECT, kind="fetch",
            execute=tools.web_scrape, title=lambda a: f"Scrape {a.selector} from {a.url}",
            redaction=logged, retry_safe=True, network=True, precheck=precheck,
        ),
    ]
