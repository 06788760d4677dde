"""Which single program a command line runs: what an "always allow" answer is bound to.

"Always allow" for `git status` should cover `git log` next time, but never a command line
that runs something else as well (`git status; rm -rf ~`), a payload the user did not read
(`bash -c '...'`, `python -c '...'`, `find -exec`), or anything the parser cannot read to the
letter. Those stay bound to a digest of the exact text. A shell policy deny is never lifted
by a remembered answer either way (tools/permissions.py checks it first).
"""

from __future__ import annotations

import os
from typing import Final

from acpd.policy.blocklist import SHELLS

INTERPRETERS: Final = SHELLS | frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl",
    "ruby", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "osascript", "awk", "gawk",
    "mawk", "nawk", "sed", "eval", "source", ".", "exec", "xargs", "sudo", "doas", "su",
})
"""Programs whose behaviour is their argument text: approving the binary would approve any
program written in it."""


def single_binary(command: str) -> str | None:
    """The one program `command` runs, with the wrappers around it (`timeout>make`), or None
    when an approval must bind to the exact text."""
    from acpd.policy.parse import parse
    from acpd.policy.words import literal
    from acpd.policy.wrappers import unwrap

    try:
        script = parse(command)
    except ValueError:
        return None
    if script.has_error or script.blocked or script.functions or len(script.commands) != 1:
        return None
    cmd = script.commands[0]
    if cmd.redirects or cmd.assigns or cmd.keyword or cmd.fallback or cmd.heredoc:
        return None
    home = os.path.expanduser("~")
    words = [literal(word, home) for word in cmd.words]
    if not words or any(word is None for word in words):
        return None
    resolved = unwrap([word for word in words if word is not None])
    if resolved.payloads or resolved.extra_argvs or resolved.assigns or not resolved.argv:
        return None
    programs = [*resolved.chain, resolved.argv[0]]
    if any("/" in name or name in INTERPRETERS for name in programs):
        return None  # a path can name any file; an interpreter runs whatever it is given
    if _destructive(resolved.argv):
        return None  # approving `git push` once must not approve `git stash clear` later
    # The wrappers are part of the key: approving `ls` must not approve `sudo ls`.
    return ">".join(programs)


def _destructive(argv: list[str]) -> bool:
    """A form the argument spec or the git checks mark as destroying work or history."""
    from acpd.policy.checks import CheckContext, git_destructive
    from acpd.policy.programs import known, model

    name, args = argv[0], argv[1:]
    if not known(name):
        return False
    found = model(name, args)
    if found is not None and any(v != "allow" for v, _, _ in found.findings):
        return True
    return name == "git" and git_destructive(name, args, CheckContext("/", ("/",)))
