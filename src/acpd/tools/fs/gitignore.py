"""A small .gitignore matcher: enough of gitignore(5) for grep to skip what git skips.

Supported: comments, blank lines, `!` negation, trailing `/` (directories only), patterns with
a slash anchored at their .gitignore's directory, patterns without one matching at any depth,
`*`, `?`, `[...]`, `**`, backslash escapes. Not supported: .git/info/exclude, core.excludesFile.
The last matching rule wins; an ignored directory is not entered, so nothing in it is
re-included (as in git).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from acpd.tools.fs.globs import glob_to_regex

MAX_GITIGNORE_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def parse_rules(text: str) -> list[Rule]:
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip(" \t\r") if not raw.rstrip("\r").endswith("\\ ") else raw.rstrip("\r")
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\!", "\\#")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        line = line.lstrip("/") if "/" in line else f"**/{line}"
        try:
            regex = re.compile(glob_to_regex(line))
        except re.error:
            continue
        rules.append(Rule(regex, negate, dir_only))
    return rules


@dataclass(slots=True)
class IgnoreStack:
    """Rules of the .gitignore files from the top of a walk down to the current directory."""

    layers: list[tuple[str, list[Rule]]] = field(default_factory=list)

    def push(self, base: str, text: str) -> None:
        """Add the rules of the .gitignore in directory `base` ("" for the top)."""
        rules = parse_rules(text)
        if rules:
            self.layers.append((base, rules))

    def pop_below(self, base: str) -> None:
        """Forget the layers that do not apply to `base` and its children."""
        self.layers = [
            (b, r) for b, r in self.layers if b == "" or base == b or base.startswith(b + "/")
        ]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether `rel` (relative to the top of the walk) is ignored."""
        verdict = False
        for base, rules in self.layers:
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            for rule in rules:
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.fullmatch(sub):
                    verdict = not rule.negate
        return verdict
