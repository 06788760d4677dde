"""Hallucination warnings: a model call that names paths that do not exist.

A heuristic, so it never blocks anything: the call runs as the policy says, and the model
reads a warning after the result naming the paths that were not there when the call was
judged (the seed: warn and continue). Only model calls are checked (the user's own slash
commands are not second-guessed).

Which paths count as missing:
  - tools that read, search or delete (kind read/search/delete): the path itself is missing;
  - other tools (write, edit, move, ...): the path and its parent directory are both
    missing (writing a new file into an existing folder is normal);
  - bash: words that look like paths (they contain a `/` or end in a file extension;
    not options, URLs, variables, globs or assignments) whose path and parent directory are
    both missing, skipping redirection targets (`> out.txt`) which a command creates.
Paths are looked up on the local disk relative to the session's working directory, at most
MAX_PATHS per call, and nothing outside is read: only existence is checked.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Any

from acpd.tools.spec import ToolSpec

MAX_PATHS = 32
MAX_COMMAND_CHARS = 64 * 1024
MUST_EXIST = frozenset({"read", "search", "delete"})
_EXTENSION = re.compile(r"^[\w.-]*\w\.[A-Za-z][A-Za-z0-9]{0,7}$")
_NOT_A_PATH = re.compile(r"[$`*?\[\]{}=<>|;&()~]|://|^-")
_REDIRECT = re.compile(r"^\d*(>>?|&>>?|>\|)$")


def missing_paths(spec: ToolSpec, parsed: Any, args: dict[str, Any], cwd: str) -> list[str]:
    """The paths the call names that do not exist (as the model wrote them), in order."""
    if spec.kind == "execute" and isinstance(args.get("command"), str):
        names = command_paths(args["command"])
        return [p for p in names if _absent(p, cwd, parent_too=True)][:MAX_PATHS]
    try:
        names = list(spec.locations(parsed, cwd))[:MAX_PATHS]
    except Exception:  # a tool's locations() failing is not the model's hallucination
        return []
    strict = spec.kind in MUST_EXIST
    return [_shown(p, cwd) for p in names if _absent(p, cwd, parent_too=not strict)]


def _shown(path: str, cwd: str) -> str:
    """A path under the workspace as the model would write it (relative)."""
    prefix = cwd.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def warning(paths: list[str]) -> str:
    shown = ", ".join(repr(p) for p in paths[:8])
    more = f" and {len(paths) - 8} more" if len(paths) > 8 else ""
    return (
        f"\n[acpd] warning: this call names paths that did not exist when it ran: {shown}"
        f"{more}. They may be invented: check them (list the directory, search) before "
        "relying on them."
    )


def _absent(path: str, cwd: str, *, parent_too: bool) -> bool:
    full = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    try:
        if os.path.lexists(full):
            return False
        return not (parent_too and os.path.isdir(os.path.dirname(full)))
    except (OSError, ValueError):  # a NUL byte, a name too long: not a path on this disk
        return False


def command_paths(command: str) -> list[str]:
    words = _split(command[:MAX_COMMAND_CHARS])
    found: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if _REDIRECT.match(word):
            skip_next = True
            continue
        if _NOT_A_PATH.search(word) or word in found:
            continue
        if "/" in word.strip("/") or _EXTENSION.match(word):
            found.append(word)
        if len(found) >= MAX_PATHS:
            break
    return found


def _split(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unterminated quote: fall back to plain words
        return command.split()
