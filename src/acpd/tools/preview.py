"""What the user sees of a call before deciding: the diff a write will make, what a delete or
a move will take away, the command and its directory.

Rules and limits:
  - A tool may have a `preview` (ToolSpec.preview). The runner calls it once, before the first
    `tool_call`, with a context that acts as approved (a path the policy asks about is shown,
    since the user is being asked about it) and the flag `asking`: file tools read files only
    when the user will be asked; a cheap preview (bash's title and rawInput) runs always.
  - A preview has no side effects: it creates no directory, writes nothing, holds nothing.
  - A preview has a budget (PREVIEW_SECONDS): an editor slow to answer `fs/read_text_file`
    gets a note instead of a diff, and the call goes on to the question.
  - A preview that fails says why in the card ("Preview unavailable: ..."); it never refuses
    the call itself (the tool meets the same problem when it runs and reports it there).
  - A diff is bounded: each side up to DIFF_MAX_CHARS. Beyond that the card shows the changed
    lines with context (an excerpt, named as one) or, when even that is too long, a note with
    the sizes; never a silently cut text.
  - What the user saw is bound to the call (`expected`): a write re-checks it just before it
    writes and fails, writing nothing, when the file changed after the preview.
Secrets in the card are redacted where every card passes (daemon/updates.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from acpd.tools.errors import ToolError
from acpd.tools.spec import (
    ContentItem,
    DiffItem,
    TextItem,
    ToolCallView,
    ToolContext,
    ToolOutput,
    ToolSpec,
)

if TYPE_CHECKING:
    from acpd.tools.pipeline import CallEnv

log = logging.getLogger("acpd.tools.preview")

PREVIEW_SECONDS = 10.0
DIFF_MAX_CHARS = 256 * 1024
"""Per side of a diff shown whole; a larger file shows the changed lines only."""
CONTEXT_LINES = 3


@dataclass(slots=True)
class Preview:
    title: str | None = None
    """Replaces the card's title (None: the tool's title)."""
    raw_input: Any = None
    """Replaces the card's rawInput (None: the call's arguments)."""
    content: list[ContentItem] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    """Absolute paths (None/empty: the tool's locations)."""
    expected: object | None = None
    """What the user was shown, for the tool to re-check before it acts (ToolContext.expected)."""

    def apply(self, view: ToolCallView) -> object | None:
        """Put the preview on the card; returns `expected`."""
        if self.title:
            view.title = self.title[:300]
        if self.raw_input is not None:
            view.raw_input = self.raw_input
        if self.content:
            view.content = list(self.content)
        if self.locations:
            view.locations = list(self.locations)
        return self.expected


PreviewFn = Callable[[Any, ToolContext, bool], Awaitable[Preview]]


async def preview_call(
    spec: ToolSpec, parsed: Any, tool_call_id: str, env: CallEnv, *, asking: bool
) -> Preview | None:
    """The tool's preview, or None when it has none. Never raises but cancellation."""
    if spec.preview is None:
        return None
    ctx = ToolContext(
        tool_call_id, env.cwd, env.roots, env.fs, env.runner, _no_publish, _no_defer,
        env.shell_timeout, env.output_byte_limit, approved=True,
    )
    try:
        with anyio.fail_after(PREVIEW_SECONDS):
            return await spec.preview(parsed, ctx, asking)
    except TimeoutError:
        return Preview(content=[TextItem(
            f"Preview unavailable: it took longer than {PREVIEW_SECONDS:g} s.")])
    except ToolError as err:
        return Preview(content=[TextItem(f"Preview unavailable: {err.message}")])
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:  # a preview bug must not cost the call its question
        log.exception("the preview of %s failed", spec.id)
        return Preview(content=[TextItem(f"Preview unavailable: {type(exc).__name__}")])


def expecting(spec: ToolSpec, expected: object | None) -> ToolSpec:
    """`spec` whose executor sees `expected` (what the user approved) in its context."""
    if expected is None:
        return spec
    inner = spec.execute

    async def execute(args: Any, ctx: ToolContext) -> ToolOutput:
        return await inner(args, dataclasses.replace(ctx, expected=expected))

    return dataclasses.replace(spec, execute=execute)


async def _no_publish(_content: list[ContentItem]) -> None:
    return None


def _no_defer(_cleanup: Callable[[], Awaitable[None]]) -> None:
    return None


# --- diffs --------------------------------------------------------------------------------


def fingerprint(text: str | None, st: os.stat_result | None) -> str | None:
    """What a write re-checks: the text it would replace (as read by the tool: the editor's
    buffer or the disk), else the file's identity and size and time when its text cannot be
    read; None when there is no file."""
    if text is not None:
        return "text:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if st is not None:
        return f"stat:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    return None


def diff_content(path: str, old: str | None, new: str, *, existed: bool,
                 hidden: str | None = None) -> list[ContentItem]:
    """The card content for replacing `old` (None: no file, or not shown) with `new` at
    `path`: a diff first (editors such as CodeCompanion look for it there), then any note."""
    if existed and old is None:
        # The old side says plainly that it is withheld; the new side is what gets written.
        # A diff (not only a note) also keeps the checkpoint card from diffing the file itself.
        why = hidden or "it cannot be read as text"
        note = TextItem(f"Replaces {path}; its current content is not shown ({why}). New "
                        f"content: {_size(new)}.")
        if len(new) > DIFF_MAX_CHARS:
            return [note]
        return [DiffItem(path, f"[the current content is not shown: {why}]\n", new), note]
    if len(old or "") <= DIFF_MAX_CHARS and len(new) <= DIFF_MAX_CHARS:
        return [DiffItem(path, old, new)]
    excerpt = changed_lines(old or "", new)
    if excerpt is None:
        return [TextItem(
            f"The diff of {path} is not shown: {_size(old or '')} -> {_size(new)}, and the "
            f"changed part is over the preview limit of {DIFF_MAX_CHARS} characters.")]
    first, last, total, old_part, new_part = excerpt
    return [DiffItem(path, old_part, new_part), TextItem(
        f"Excerpt: lines {first}-{last} of {total} of {path} with the change; the whole "
        f"file ({_size(old or '')} -> {_size(new)}) is over the preview limit of "
        f"{DIFF_MAX_CHARS} characters.")]


def changed_lines(old: str, new: str) -> tuple[int, int, int, str, str] | None:
    """(first line, last line, old line count, old part, new part) of the lines that differ,
    with CONTEXT_LINES around them; None when that part is itself over the limit."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - CONTEXT_LINES)
    old_end = min(len(a), len(a) - tail + CONTEXT_LINES)
    new_end = min(len(b), len(b) - tail + CONTEXT_LINES)
    old_part, new_part = "".join(a[start:old_end]), "".join(b[start:new_end])
    if len(old_part) > DIFF_MAX_CHARS or len(new_part) > DIFF_MAX_CHARS:
        return None
    offset = sum(len(line) for line in a[:start])  # the same lines begin both texts
    return (start + 1, max(start + 1, old_end), len(a), _inside_key(old, offset, old_part),
            _inside_key(new, offset, new_part))


def _inside_key(whole: str, offset: int, part: str) -> str:
    """`part` (of `whole`, from `offset`) with the rest of a private key replaced when the
    excerpt begins inside one: its BEGIN line is not in the excerpt, so the card's secret
    scan could not tell the base64 lines are a key."""
    from acpd.tools.secrets import key_open_at, redact_key_remainder

    return redact_key_remainder(part) if key_open_at(whole, offset) else part


def _size(text: str) -> str:
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    return f"{len(text.encode('utf-8', 'surrogatepass'))} bytes, {lines} lines"
