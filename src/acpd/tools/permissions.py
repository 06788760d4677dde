"""Who may run what: enabled tools, the session mode, permission rules, remembered answers.

Layers, strictest wins, and nothing can lift a deny:
  - not enabled (`[tools] enabled`, globs on ids; default `core__*`): denied and never shown;
  - mode `read-only` denies anything that changes state or reaches outside;
  - a rule that denies denies (even for read-only tools: `deny` on `*.secret` for `read`);
  - an "always reject" answer denies;
  - a rule that asks asks, in any mode, unless the user answered "always allow" before;
  - an "always allow" answer allows;
  - a rule that allows allows (in `ask` mode that is how a command skips the prompt);
  - otherwise read-only tools run, and the rest ask (`ask` mode) or run (`auto` mode).

For bash the shell policy (acpd.policy) judges the command itself, and its verdict replaces
the last step (the mode's blanket "ask"): strictest wins across the policy, the mode and the
rules. A policy deny is final (no remembered answer lifts it); a policy ask asks in every mode
unless the user answered "always allow" for this exact command; a policy allow runs without
asking in `ask` and `auto` modes, unless a rule asks or denies. Read-only mode still denies.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from acpd.tools.rules import RuleSet, Verdict
from acpd.tools.spec import Effect, ToolSpec

if TYPE_CHECKING:
    from acpd.policy.decision import Decision as ShellDecision

SHELL_TOOL = "core__bash"
MODES = ("read-only", "ask", "auto")
DEFAULT_MODE = "ask"
DEFAULT_ENABLED = ("core__*",)
PermissionAnswer = Literal[
    "allow_once", "allow_always", "reject_once", "reject_always", "cancelled", "unavailable"
]
""""unavailable": nobody can be asked (the CLI without a terminal): ConfirmationRequired."""
ApprovedBy = Literal["auto", "user", "rule", "mode", "policy"]


class Remembered(Protocol):
    """What `decide` needs of the remembered answers (approvals.Approvals, or a dict)."""

    def get(self, key: str, /) -> bool | None: ...


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    reason: str
    approved_by: ApprovedBy = "auto"
    shell: ShellDecision | None = None
    """The shell policy's own decision, for bash (its reasons, rules and hash)."""


class ToolPolicy:
    def __init__(
        self, enabled: Sequence[str] = DEFAULT_ENABLED, rules: RuleSet | None = None
    ) -> None:
        self.enabled = tuple(enabled)
        self.rules = rules or RuleSet()
        self._hashes: dict[str, str] = {}

    def is_enabled(self, spec: ToolSpec) -> bool:
        return any(
            fnmatch.fnmatchcase(spec.id, p) or fnmatch.fnmatchcase(spec.name, p)
            for p in self.enabled
        )

    def visible(self, spec: ToolSpec, mode: str) -> bool:
        """Whether the model is shown the tool at all: a tool denied whatever its input is
        hidden (not enabled, a read-only session for a tool that changes state, `deny *`)."""
        if not self.is_enabled(spec):
            return False
        if mode == "read-only" and spec.effect is not Effect.READ_ONLY:
            return False
        return not self.rules.denies_all(spec)

    def decide(
        self, spec: ToolSpec, mode: str, args: dict[str, Any], cwd: str,
        remembered: Remembered, key: str, shell: ShellDecision | None = None,
    ) -> Decision:
        """The verdict for one validated call; `remembered.get(key)` -> bool | None.
        `shell` is the shell policy's decision on the command (bash only)."""
        found = self._decide(spec, mode, args, cwd, remembered, key, shell)
        return found if shell is None else Decision(
            found.verdict, found.reason, found.approved_by, shell
        )

    def _decide(
        self, spec: ToolSpec, mode: str, args: dict[str, Any], cwd: str,
        remembered: Remembered, key: str, shell: ShellDecision | None,
    ) -> Decision:
        if not self.is_enabled(spec):
            return Decision("deny", f"{spec.name} is not enabled ([tools] enabled)", "rule")
        changes = spec.effect is not Effect.READ_ONLY
        if mode == "read-only" and changes:
            return Decision(
                "deny", f"{spec.name} changes state and the session is read-only", "mode"
            )
        which = "shell" if spec.id == SHELL_TOOL or spec.commands is not None else "path"
        if shell is not None and shell.verdict == "deny":
            return Decision("deny", f"the {which} policy denies it: " + _reasons(shell), "policy")
        match = self.rules.match(spec, args, cwd)
        if match is not None and match.verdict == "deny":
            return Decision("deny", f"denied by the rule {match.rule.pattern!r}", "rule")
        answer = remembered.get(key)
        if answer is False:
            return Decision("deny", "rejected earlier with 'always reject'", "user")
        if answer is True:
            return Decision("allow", "approved earlier with 'always allow'", "user")
        if match is not None and match.verdict == "ask":
            return Decision("ask", f"the rule {match.rule.pattern!r} asks first", "user")
        if shell is not None:
            if shell.verdict == "ask":
                return Decision("ask", f"the {which} policy asks first: " + _reasons(shell),
                                "user")
            if match is not None:
                return Decision("allow", f"allowed by the rule {match.rule.pattern!r}", "rule")
            if spec.id == SHELL_TOOL:
                return Decision("allow", "allowed by the shell policy", "policy")
        if match is not None:
            return Decision("allow", f"allowed by the rule {match.rule.pattern!r}", "rule")
        if not changes:
            return Decision("allow", "read-only tool", "auto")
        if mode == "auto":
            return Decision("allow", "auto mode", "mode")
        return Decision("ask", f"{spec.name} needs approval in ask mode", "user")

    def rules_hash(self) -> str:
        """A digest of the enabled tools and the rules (what a reload announces)."""
        canonical = json.dumps({"enabled": self.enabled, "rules": self.rules.describe()},
                               sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def policy_hash(self, mode: str) -> str:
        """A digest of everything that decides (enabled tools, rules, mode): an audit line
        says which policy let a call through."""
        found = self._hashes.get(mode)
        if found is None:
            canonical = json.dumps(
                {"enabled": self.enabled, "rules": self.rules.describe(), "mode": mode},
                sort_keys=True, separators=(",", ":"),
            )
            found = self._hashes[mode] = hashlib.sha256(canonical.encode()).hexdigest()[:16]
        return found


def _reasons(shell: ShellDecision) -> str:
    return "; ".join(shell.reasons) or ", ".join(shell.rules) or shell.verdict


def approval_key(spec: ToolSpec, args: dict[str, Any]) -> str:
    """What an "always" answer is bound to: the tool, and for the shell the binary.

    A shell command that is one plain program (`git status`) binds to that program
    (`core__bash#bin:git`); anything else (lists, redirects, `bash -c`, interpreter code, a
    path, what the parser cannot read to the letter) binds to a digest of the exact text, so
    approving `ls` never approves `ls; rm -rf ~` or `python -c '<other code>'`. It never lifts
    a shell policy deny (`decide` checks that first).

    A file tool call that names a path that may lie outside the workspace (absolute, `~`, or
    with a `..` component: what the path policy asks about) binds to those paths, so "always
    allow" on reading `/etc/hosts` is not "always allow" on reading anything outside.
    """
    paths = [args.get(f) for f in ("path", "source", "destination")]
    named = [p for p in paths if isinstance(p, str)]
    if any(p.startswith(("/", "~")) or ".." in p.split("/") for p in named):
        digest = hashlib.sha256("\0".join(named).encode("utf-8", "surrogatepass")).hexdigest()
        return f"{spec.id}#paths:{digest[:32]}"
    command = args.get("command")
    if isinstance(command, str):
        from acpd.policy.binaries import single_binary

        binary = single_binary(command)
        if binary is not None:
            return f"{spec.id}#bin:{binary}"
        digest = hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"{spec.id}#{digest}"
    return spec.id
