"""Which changed files a checkpoint card may show: the read tool's rules, as a predicate.

A call's checkpoint diffs what it created, changed and deleted (acpd/checkpoint/card.py). A
file the read tool would refuse (deny_read of the shell's `[paths]` or of `[tools.file]`, a
`[tools.permissions.read]` rule) must not reach the card that way either: `echo x > tls.pem`
would otherwise show the key it replaced. Such files are named, their content withheld.

The rules are the ones current when the card is made; a policy that cannot be loaded hides
every file (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable

from acpd.tools.errors import ToolError
from acpd.tools.fs.config import FileToolsConfig

Hidden = Callable[[str], "str | None"]
"""Why the content of a file (its real, absolute path) may not be shown; None: it may."""

READ_TOOL = ("core__read", "read")


class HiddenFiles:
    def __init__(self, files: FileToolsConfig) -> None:
        self._files = files

    async def at(self, root: str) -> Hidden:
        """The predicate for a workspace `root` (a real path)."""
        files = self._files
        guard = None
        if files.paths is not None:
            try:
                guard = await files.paths.guard_at(root, False, *READ_TOOL, (root,))
            except ToolError as exc:
                reason = f"the read policy could not be loaded: {exc.message}"
                return lambda _real: reason

        def hidden(real: str) -> str | None:
            reason = files.policy.refusal(real, root)
            if reason is None and guard is not None:
                reason = guard.refusal("read", real, real)
            return reason

        return hidden
