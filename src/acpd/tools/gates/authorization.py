"""OAP authorization rules (`[tools.authorization]`), merged after the policy rules.

The seed merges them after `[tools.policy]` with first-match-wins, the policy first. acpd's
policy is strictest-wins (DESIGN.md: with merged rule sets, order-dependence lets a broad
allow beat a deny), so the merge here keeps the policy's precedence in the only way that
cannot loosen it: an authorization rule can make a call stricter, never looser.

  - `deny` denies the call, whatever the policy said;
  - `ask` turns an allow into a question (an earlier "always allow" answer for this exact
    call still counts, as it does for permission rules);
  - `allow` never lifts a policy ask or deny; a matching allow is recorded, nothing more.

Every rule that matches is recorded on the call (the audit's `authorization` field), the
strictest effect decides. A rule matches when its `tool` (name, id, or a glob on either)
matches, its `args_match` regex is found in the call's input (for bash the command as the
model wrote it, and once more with line continuations, escapes and quotes removed, so
`s''udo`, `s\\udo` and `su\\<newline>do` cannot dodge a `sudo` rule; for other tools the
arguments as JSON with sorted keys), and one of its `paths` globs matches a path the call
names. Unset fields match all.
The rules are read once at start-up (the seed: changes need a restart).
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any

import orjson

from acpd.policy.decision import RANK, Verdict
from acpd.tools.gates.config import AuthorizationConfig, AuthorizationRule

MAX_INPUT_CHARS = 256 * 1024
"""The input a regex is searched in is cut here (user regexes have no time limit)."""
_CONTINUATION = re.compile(r"\\\r?\n")
_ESCAPE = re.compile(r"\\(.)", re.S)
_QUOTES = re.compile(r"['\"]")


@dataclass(frozen=True, slots=True)
class Match:
    index: int
    rule: AuthorizationRule

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.index, "effect": self.rule.effect, "tool": self.rule.tool}


class Authorization:
    def __init__(self, config: AuthorizationConfig) -> None:
        self.enabled = config.enabled and bool(config.rules)
        self.rules = [(r, re.compile(r.args_match) if r.args_match else None)
                      for r in config.rules]

    def matches(self, tool_id: str, name: str, args: dict[str, Any],
                paths: list[str], cwd: str) -> list[Match]:
        if not self.enabled:
            return []
        inputs: list[str] | None = None
        found: list[Match] = []
        for n, (rule, pattern) in enumerate(self.rules, 1):
            if not _tool_matches(rule.tool, tool_id, name):
                continue
            if pattern is not None:
                inputs = inputs if inputs is not None else _inputs(name, args)
                if not any(pattern.search(text) for text in inputs):
                    continue
            if rule.paths and not _paths_match(rule.paths, paths, cwd):
                continue
            found.append(Match(n, rule))
        return found


def strictest(found: list[Match]) -> Verdict | None:
    if not found:
        return None
    effect: Verdict = found[0].rule.effect
    for match in found[1:]:
        if RANK[match.rule.effect] > RANK[effect]:
            effect = match.rule.effect
    return effect


def _tool_matches(pattern: str, tool_id: str, name: str) -> bool:
    return any(fnmatch.fnmatchcase(v, pattern) for v in (tool_id, name))


def _inputs(name: str, args: dict[str, Any]) -> list[str]:
    command = args.get("command")
    if name == "bash" and isinstance(command, str):
        raw = command[:MAX_INPUT_CHARS]
        plain = _QUOTES.sub("", _ESCAPE.sub(r"\1", _CONTINUATION.sub("", raw)))
        return [raw, plain]
    try:
        return [orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()[:MAX_INPUT_CHARS]]
    except (TypeError, orjson.JSONEncodeError):
        return [str(args)[:MAX_INPUT_CHARS]]


def _paths_match(globs: list[str], paths: list[str], cwd: str) -> bool:
    for path in paths:
        full = os.path.normpath(os.path.join(cwd, path))
        if any(fnmatch.fnmatchcase(full, g) or fnmatch.fnmatchcase(path, g) for g in globs):
            return True
    return False
