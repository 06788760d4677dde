"""ACP v2 diffs: v1's `{path, oldText, newText}` as `{changes, patch}`, with the patch in
`git_patch` form (one `diff --git` section, absolute paths; `git apply -p0` applies it).

The patch is left out past PATCH_BUDGET characters or PATCH_LINES lines of old plus new text
(the draft makes it optional). difflib is quadratic in the worst case, so a diff past
INLINE_CHARS or INLINE_LINES (`heavy_diff`) is made in a worker thread by the daemon
(daemon/v2face.py), never on the event loop. Sans-io; difflib is imported on first use.
An `oldText` of null is an added file; anything else a modification.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PATCH_BUDGET = 256 * 1024
PATCH_LINES = 3000
"""Old plus new text, in characters and in lines, above which a diff goes without its patch
(difflib is quadratic in the worst case: ~85 ms for 2000 lines on a quiet 2-core VM)."""
INLINE_CHARS = 16 * 1024
INLINE_LINES = 300
"""A diff past either of these is rendered off the event loop (daemon/v2face.py); below them
a patch costs a few milliseconds at worst (benchmarks/v2_render.py)."""


def diff_content(item: Mapping[str, Any]) -> dict[str, Any]:
    """v1 `{path, oldText, newText}` as v2 `{changes, patch}`."""
    path = str(item.get("path", ""))
    old = item.get("oldText")
    new = str(item.get("newText", ""))
    operation = "add" if old is None else "modify"
    content: dict[str, Any] = {
        "type": "diff",
        "changes": [{"operation": operation, "path": path, "fileType": "text"}],
    }
    patch = git_patch(path, old, new)
    if patch:
        content["patch"] = {"format": "git_patch", "text": patch}
    if "_meta" in item:
        content["_meta"] = item["_meta"]
    return content


def heavy_diff(item: Any) -> bool:
    """A v1 diff whose patch should be made off the event loop (see INLINE_LINES)."""
    if not isinstance(item, dict) or item.get("type") != "diff" or "changes" in item:
        return False
    old, new = str(item.get("oldText") or ""), str(item.get("newText") or "")
    if len(old) + len(new) > INLINE_CHARS:
        return True
    return old.count("\n") + new.count("\n") > INLINE_LINES


def git_patch(path: str, old: str | None, new: str) -> str:
    """One `diff --git` section with absolute paths; "" when nothing changed or the texts are
    past PATCH_BUDGET or PATCH_LINES."""
    if old == new or len(old or "") + len(new) > PATCH_BUDGET:
        return ""
    import difflib

    before = (old or "").splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    if len(before) + len(after) > PATCH_LINES:
        return ""
    hunks = list(difflib.unified_diff(
        _terminated(before), _terminated(after),
        fromfile="/dev/null" if old is None else path, tofile=path, n=3,
    ))
    if not hunks:
        return ""
    head = f"diff --git {path} {path}\n" + ("new file mode 100644\n" if old is None else "")
    return head + "".join(hunks)


def _terminated(lines: list[str]) -> list[str]:
    """difflib joins lines as given: mark a last line without a newline the way git does."""
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
