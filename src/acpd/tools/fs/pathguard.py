"""One path policy for the file tools: the shell policy's `[paths]` and the tool's
`[tools.permissions.<tool>]` rules, judged on real paths.

Rules, in the order they apply:
- The path rules are the shell's own: `PathRules` built with the same compiled patterns
  (`compile_patterns`) from the session's current policy handle, read once per call, so a hot
  reload applies to the very next call and a call never mixes two policies.
- Before a call runs, the pipeline judges each path it names exactly as the shell judges an
  argument (`judge_path`: the path as written and its realpath): deny refuses the call,
  "ask" (outside the workspace) goes to the pipeline's permission prompt (`prejudge`, called
  from `shellpolicy.judge_call`).
- While the call runs, every file it opens and every entry it creates, replaces, moves or
  removes is judged again on its real path: the fd's own path after openat2 resolution, or for
  a new entry the real path of its opened parent plus the name (`PathGuard.check`). A symlink
  created or swapped after the decision is judged on what it points to now.
- Deny patterns of the mode (deny_read / deny_write) refuse; a permission rule of the tool
  that denies refuses; one that asks needs the user's approval of this call. Outside the
  workspace roots, read_roots / write_roots allow (write roots under /tmp excepted: the
  sandbox's private /tmp, which the file tools do not have), then outside_read /
  outside_write decide:
  "ask" at run time is satisfied only by the user's approval of this call (`ToolContext.
  approved`); a path that became an outside path after the decision is refused.
- Hard links: a regular file with more than one link is judged with its other names, by the
  shell's own rule (`policy/hardlinks.py`): one the deny list names refuses, names the scan of
  the workspace cannot all find ask (the prejudge and a read at run time alike). The sandbox
  refuses to read or replace any regular file with more than one link in any case.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from acpd.tools.fs.errors import blocked

if TYPE_CHECKING:
    from acpd.policy.decision import Decision, Verdict
    from acpd.policy.engine import CompiledPolicy
    from acpd.policy.sandbox import PathRules
    from acpd.tools.rules import Rule, RuleSet
    from acpd.tools.shellpolicy import ShellPolicies
    from acpd.tools.spec import ToolContext

Mode = Literal["read", "write"]
PATH_ARGS: dict[str, tuple[tuple[str, tuple[Mode, ...]], ...]] = {
    "core__read": (("path", ("read",)),),
    "core__list_directory": (("path", ("read",)),),
    "core__find_path": (("path", ("read",)),),
    "core__grep": (("path", ("read",)),),
    "core__write": (("path", ("write",)),),
    "core__edit": (("path", ("read", "write")),),
    "core__create_directory": (("path", ("write",)),),
    "core__delete_path": (("path", ("write",)),),
    "core__move_path": (("source", ("read", "write")), ("destination", ("write",))),
    "core__copy_path": (("source", ("read",)), ("destination", ("write",))),
}
"""Each file tool's path arguments and what it does to them (a move removes its source)."""
ENTRY_ARGS: dict[tuple[str, str], str] = {
    ("core__move_path", "source"): "entry", ("core__move_path", "destination"): "dest",
    ("core__delete_path", "path"): "entry", ("core__copy_path", "destination"): "dest",
}
"""Path arguments whose write acts on the directory entry (`judge_path`'s `entry`): a
rename or a deletion of a directory above a hooks directory or a hook's target swaps it."""
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}


def path_rules(policy: CompiledPolicy, roots: tuple[str, ...],
               home: str | None = None) -> PathRules:
    """The shell's path rules of `policy` for these workspace roots. The roots are resolved
    afresh on every call (a file-system fact is never cached); only the compiled rules for
    (policy, resolved roots, home) are."""
    from acpd.policy.sandbox import (
        PathRules,
        compile_patterns,
        normalized_roots,
        resolved_variants,
    )

    home = home or os.path.expanduser("~")
    rules = _compiled(policy, normalized_roots(roots), home)
    paths = policy.policy.paths
    # A pattern's own links, resolved on every call (`~/.aws` a link into the workspace, a
    # dotfiles repository): the file tools judge the real path of what they open.
    more_read = resolved_variants(tuple(paths.deny_read), home)
    more_write = resolved_variants(tuple(paths.deny_write), home)
    if not (more_read or more_write):
        return rules
    return PathRules(rules.roots, rules.deny_read + compile_patterns(more_read, home),
                     rules.deny_write + compile_patterns(more_write, home), rules.read_roots,
                     rules.write_roots, rules.outside_read, rules.outside_write)


@functools.lru_cache(maxsize=32)
def _compiled(policy: CompiledPolicy, roots: tuple[str, ...], home: str) -> PathRules:
    from acpd.policy.sandbox import PathRules, compile_patterns

    p = policy.policy.paths
    return PathRules(
        roots,
        compile_patterns(p.deny_read, home), compile_patterns(p.deny_write, home),
        compile_patterns(p.read_roots, home),
        compile_patterns(tuple(r for r in p.write_roots if not _private_tmp(r)), home),
        p.outside_read, p.outside_write)


def _private_tmp(pattern: str) -> bool:
    """A write root under /tmp: for a sandboxed command that is its workspace's private /tmp
    (docs/sandbox.md); the file tools run outside the sandbox, where it would be the host's
    shared /tmp (other daemons' run directories, the parents of workspaces under /tmp). So
    for them such a path is outside the roots, judged by `outside_write`."""
    return pattern == "/tmp" or pattern.startswith("/tmp/")


@dataclass(frozen=True, slots=True)
class PathGuard:
    """The path policy of one call (see the module docstring)."""

    rules: PathRules | None
    """The shell's path rules; None where no shell policy is configured."""
    tool_rules: tuple[Rule, ...] = ()
    """This tool's `[tools.permissions.<tool>]` rules (allow rules are not needed here)."""
    cwd: str = "/"
    approved: bool = False
    """The user approved this call: an "ask" met while it runs is covered."""
    label: str = "tools.permissions"
    _cwd_real: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_cwd_real", os.path.realpath(self.cwd))

    @property
    def reaches_outside(self) -> bool:
        """May a path outside the workspace roots be opened at all (to be judged)?"""
        return self.rules is not None

    def check(self, mode: Mode, real: str, shown: str) -> None:
        """Raises ToolError(PolicyBlocked) unless `mode` on the real path `real` is allowed."""
        reason = self.refusal(mode, real, shown)
        if reason is not None:
            raise blocked(reason)

    def allows(self, mode: Mode, real: str) -> bool:
        return self.refusal(mode, real, real) is None

    def refusal(self, mode: Mode, real: str, shown: str) -> str | None:
        """Why `mode` on `real` is refused, or None."""
        from acpd.policy.hardlinks import hardlink_finding
        from acpd.policy.sandbox import inside, matches

        rules = self.rules
        where = shown if shown == real else f"{shown} ({real})"
        if rules is not None:
            deny = rules.deny_read if mode == "read" else rules.deny_write
            hit = matches(real, deny, rules.roots)
            if hit is not None:
                return f"{mode} of {where} matches deny_{mode} {hit!r} (the path policy)"
            if mode == "read":
                found = hardlink_finding(real, mode, rules)
                if found is not None and (found[0] == "deny" or not self.approved):
                    return f"{mode} of {where}: {found[2]} (the path policy)"
        reason = self._rule_refusal(real, where)
        if reason is not None or rules is None:
            return reason
        if inside(real, rules.roots):
            return None
        extra = rules.read_roots if mode == "read" else rules.write_roots
        if matches(real, extra, rules.roots):
            return None
        verdict = rules.outside_read if mode == "read" else rules.outside_write
        if verdict == "allow" or (verdict == "ask" and self.approved):
            return None
        if verdict == "ask":
            return (f"{mode} of {where} is outside the workspace and needs approval; this call "
                    "was not approved for it (did the path change after it was approved?)")
        return f"{mode} of {where} is outside the workspace (outside_{mode} = deny)"

    def _rule_refusal(self, real: str, where: str) -> str | None:
        if not self.tool_rules:
            return None
        subjects = [real]
        base = self._cwd_real
        if real == base or real.startswith(base.rstrip("/") + "/"):
            subjects.append(os.path.relpath(real, base))
        worst: Rule | None = None
        for rule in self.tool_rules:
            if rule.action != "allow" and any(rule.regex.match(s) for s in subjects) and (
                worst is None or STRICTNESS[rule.action] > STRICTNESS[worst.action]
            ):
                worst = rule
        if worst is None or (worst.action == "ask" and self.approved):
            return None
        if worst.action == "deny":
            return f"{where} is denied by the rule {worst.pattern!r} ({self.label})"
        return f"{where} matches the rule {worst.pattern!r} ({self.label}), which asks first"


RulesOf = Callable[[], "RuleSet"]


class PathSource:
    """Where the file tools get their `PathGuard`: the shell policies (current handle per
    workspace) and the current permission rules, both read afresh on every call."""

    def __init__(self, shell: ShellPolicies | None = None,
                 tool_rules: RulesOf | None = None) -> None:
        self.shell = shell
        self.tool_rules = tool_rules

    async def guard(self, ctx: ToolContext, tool_id: str, tool_name: str,
                    roots: tuple[str, ...]) -> PathGuard:
        """Raises nothing the caller must handle but ToolError (a policy that cannot be built
        refuses the call: fail closed)."""
        return await self.guard_at(ctx.cwd, ctx.approved, tool_id, tool_name, roots)

    async def guard_at(self, cwd: str, approved: bool, tool_id: str, tool_name: str,
                       roots: tuple[str, ...]) -> PathGuard:
        """`guard` for a directory rather than a call (what a checkpoint card may show)."""
        rules = None
        if self.shell is not None:
            try:
                handle = await self.shell.handle_for(cwd)
                rules = path_rules(handle.current, roots)
            except Exception as exc:
                raise blocked(f"the path policy could not be loaded ({type(exc).__name__}: "
                              f"{exc})") from None
        mine: tuple[Rule, ...] = ()
        if self.tool_rules is not None:
            ruleset = self.tool_rules()
            mine = ruleset.rules.get(tool_id, ()) + ruleset.rules.get(tool_name, ())
        return PathGuard(rules, mine, cwd, approved, f"[tools.permissions.{tool_name}]")


def prejudge(policy: CompiledPolicy, tool_id: str, args: dict[str, Any], cwd: str,
             roots: tuple[str, ...]) -> Decision | None:
    """The shell's verdict on every path a file tool call names, before it runs: None when
    all are allowed, else a deny or ask Decision naming the paths and patterns."""
    from acpd.policy.decision import Decision
    from acpd.policy.sandbox import judge_path

    fields = PATH_ARGS.get(tool_id)
    if not fields:
        return None
    rules = path_rules(policy, roots or (cwd,))
    verdict: Verdict = "allow"
    reasons: list[str] = []
    ids: list[str] = []
    for name, modes in fields:
        value = args.get(name)
        if not isinstance(value, str) or not value:
            continue
        raw = os.path.expanduser(value) if value == "~" or value.startswith("~/") else value
        for mode in modes:
            entry = ENTRY_ARGS.get((tool_id, name)) if mode == "write" else None
            found = judge_path(raw, mode, cwd, rules, entry=entry)
            if found is None:
                continue
            said, rule_id, reason = found
            reasons.append(reason)
            ids.append(rule_id)
            if STRICTNESS[said] > STRICTNESS[verdict]:
                verdict = said
    if verdict == "allow":
        return None
    return Decision(verdict, tuple(dict.fromkeys(reasons)), tuple(dict.fromkeys(ids)),
                    policy.hash)
