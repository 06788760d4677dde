"""Permission rules per tool (`[[tools.permissions.<tool>]] pattern = "..." action = "..."`).

A rule is a glob matched case-insensitively on the tool's input: the command for bash, each
path for the file tools (a move or a copy has two). Among the rules that match, the strictest
wins (deny > ask > allow), whatever their order: adding an allow rule can never open what a
deny rule closed. Paths are matched in two normalised forms, relative to the workspace and
absolute, so `./x`, `x` and `/ws/x` all meet a rule written `x`, and in the same two forms of
the real path (symlinks resolved), so `s2/x` where `s2 -> secret` meets a rule written
`secret/**`. That is the decision, before the call runs; while it runs the file tools match
the deny and ask rules again on the real path of each file they open (tools/fs/pathguard.py),
so a link created or swapped after the decision is caught too.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from acpd.tools.spec import ToolSpec

Verdict = Literal["allow", "ask", "deny"]
STRICTNESS: dict[Verdict, int] = {"allow": 0, "ask": 1, "deny": 2}
PATH_FIELDS = ("path", "source", "destination")
EVERYTHING = ("*", "**")


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: str
    action: Verdict
    regex: re.Pattern[str]

    @classmethod
    def of(cls, pattern: str, action: Verdict) -> Rule:
        return cls(pattern, action, re.compile(fnmatch.translate(pattern), re.IGNORECASE))


@dataclass(frozen=True, slots=True)
class RuleMatch:
    verdict: Verdict
    rule: Rule
    subject: str


class RuleSet:
    """Rules by tool (short name or namespaced id; both may be used)."""

    def __init__(self, rules: Mapping[str, Iterable[tuple[str, Verdict]]] | None = None) -> None:
        self.rules: dict[str, tuple[Rule, ...]] = {
            tool: tuple(Rule.of(p, a) for p, a in entries)
            for tool, entries in (rules or {}).items()
        }

    def for_tool(self, spec: ToolSpec) -> tuple[Rule, ...]:
        return self.rules.get(spec.id, ()) + self.rules.get(spec.name, ())

    def match(self, spec: ToolSpec, args: dict[str, Any], cwd: str) -> RuleMatch | None:
        """The strictest rule matching any of the call's subjects; None when none matches."""
        rules = self.for_tool(spec)
        if not rules:
            return None
        best: RuleMatch | None = None
        for subject in subjects(args, cwd):
            for rule in rules:
                if rule.regex.match(subject) and (
                    best is None or STRICTNESS[rule.action] > STRICTNESS[best.verdict]
                ):
                    best = RuleMatch(rule.action, rule, subject)
        return best

    def denies_all(self, spec: ToolSpec) -> bool:
        """A `deny` on "*": the tool is off whatever the input, so it is never shown."""
        return any(r.action == "deny" and r.pattern in EVERYTHING for r in self.for_tool(spec))

    def describe(self) -> dict[str, list[list[str]]]:
        """A canonical form, for the policy hash."""
        return {
            tool: [[r.pattern, r.action] for r in rules]
            for tool, rules in sorted(self.rules.items())
        }


def subjects(args: dict[str, Any], cwd: str) -> list[str]:
    """What rules are matched on: the command, or each path in both normalised forms."""
    command = args.get("command")
    if isinstance(command, str):
        return [command]
    found: list[str] = []
    real_cwd = os.path.realpath(cwd)
    for field in PATH_FIELDS:
        value = args.get(field)
        if isinstance(value, str) and value and "\x00" not in value:
            if value == "~" or value.startswith("~/"):
                value = os.path.expanduser(value)
            absolute = os.path.normpath(os.path.join(cwd, value))
            found += _forms(absolute, cwd)
            real = os.path.realpath(absolute)
            if real != absolute:
                found += _forms(real, real_cwd)
    # A tool with neither still meets the rules written for all its calls ("*").
    return list(dict.fromkeys(found)) or [""]


def _forms(absolute: str, cwd: str) -> list[str]:
    """`absolute` relative to `cwd` when inside it, and as it is."""
    inside = absolute == cwd or absolute.startswith(cwd.rstrip("/") + "/")
    return [os.path.relpath(absolute, cwd) if inside else absolute, absolute]
