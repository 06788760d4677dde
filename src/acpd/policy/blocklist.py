"""The unconditional blocklist: no rule, overlay, mode or trust level can lift these.

Constructs (substitutions, here-strings, `$[..]`, `${x@P}`) are found by the parser; this module
holds the names: builtins that change what later words mean, environment variables that inject
code into whatever runs next, and the checks on words (subscript evaluation, /dev/tcp).
"""

from __future__ import annotations

import fnmatch
import re
from functools import lru_cache

BLOCKED_BUILTINS: dict[str, str] = {
    "source": "source runs a script in this shell (it can redefine every command)",
    ".": ". runs a script in this shell (it can redefine every command)",
    "alias": "alias changes what later command names mean",
    "unalias": "unalias changes what later command names mean",
    "enable": "enable loads or swaps shell builtins",
    "hash": "hash -p remaps command names to other binaries",
    "shopt": "shopt changes how the rest of the line is parsed",
    "fc": "fc re-runs commands from history",
    "bind": "bind -x runs commands from key bindings",
    "complete": "complete -C runs commands",
    "compgen": "compgen -C runs commands",
}

SHELLS = frozenset({
    "sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "fish", "csh", "tcsh", "rbash",
    "posh", "ksh93", "pdksh", "oksh", "lksh", "elvish", "nu", "xonsh",
})

BLOCKED_ENV: tuple[str, ...] = (
    "LD_*", "DYLD_*", "BASH_ENV", "ENV", "PATH", "IFS", "PS4", "PS1", "PS0", "PROMPT_COMMAND",
    "SHELLOPTS", "BASHOPTS", "BASH_FUNC_*", "CDPATH", "GLOBIGNORE", "GIT_*", "PAGER",
    "MANPAGER", "SYSTEMD_PAGER", "BAT_PAGER", "DELTA_PAGER", "LESSOPEN", "LESSCLOSE", "EDITOR",
    "VISUAL", "BROWSER", "NODE_OPTIONS", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB",
    "RUBYOPT", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "SSH_ASKPASS", "SUDO_ASKPASS",
)
"""Assignments to these (as a prefix, standalone, via env/export/declare) are denied."""

_SUBSCRIPT = re.compile(r"\[[^\]]*(\$\(|`|\$\[|[<>]\()")
_DEV_NET = re.compile(r"/dev/(tcp|udp)/")


@lru_cache(maxsize=64)
def _env_regex(extra: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for every blocked name pattern (fnmatch, on upper-cased names)."""
    parts = [fnmatch.translate(pat.upper()) for pat in (*BLOCKED_ENV, *extra)]
    return re.compile("|".join(f"(?:{p})" for p in parts))


def env_blocked(name: str, extra: tuple[str, ...] = ()) -> bool:
    return _env_regex(extra).match(name.upper()) is not None


def word_findings(value: str) -> list[tuple[str, str]]:
    """Blocklist hits inside one computed word (quoted or not: bash evaluates subscripts of
    `test -v`, `printf -v`, `declare`, arithmetic... even from single-quoted text)."""
    hits: list[tuple[str, str]] = []
    if "[" in value and _SUBSCRIPT.search(value):
        hits.append(("blocklist.subscript", "substitution hidden in an array subscript"))
    if "/dev/" in value and _DEV_NET.search(value):
        hits.append(("blocklist.dev-tcp", "/dev/tcp or /dev/udp network redirection"))
    return hits
