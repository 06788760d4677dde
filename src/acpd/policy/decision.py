"""The result of judging a command, and the order of verdicts (deny > ask > allow)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Verdict = Literal["allow", "ask", "deny"]
RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
VERDICTS: tuple[Verdict, ...] = ("allow", "ask", "deny")
_set: Final = object.__setattr__


def stricter(a: Verdict, b: Verdict) -> Verdict:
    return a if RANK[a] >= RANK[b] else b


def at_least(verdict: Verdict, floor: Verdict) -> bool:
    return RANK[verdict] >= RANK[floor]


@dataclass(frozen=True, slots=True, init=False)
class Decision:
    """What the policy says about one command line.

    `rules` holds the ids of every rule that matched (all of them, not the first), `reasons`
    one human sentence per finding, `policy_hash` the hash of the policy that decided.
    """

    verdict: Verdict
    reasons: tuple[str, ...]
    rules: tuple[str, ...]
    policy_hash: str
    sandbox_lifted: bool = False
    """The verdict holds only because the command runs in the kernel sandbox (unsandboxed it
    would be stricter): the runner then confines it further (git directories read-only)."""

    def __init__(self, verdict: Verdict, reasons: tuple[str, ...], rules: tuple[str, ...],
                 policy_hash: str, sandbox_lifted: bool = False) -> None:
        # Written out (the dataclass's own __init__ is interpreted code even when this module
        # is compiled: a quarter of a simple decision's set-up); frozen, so set as it does.
        _set(self, "verdict", verdict)
        _set(self, "reasons", reasons)
        _set(self, "rules", rules)
        _set(self, "policy_hash", policy_hash)
        _set(self, "sandbox_lifted", sandbox_lifted)

    def to_json(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "reasons": list(self.reasons),
            "rules": list(self.rules),
            "policy_hash": self.policy_hash,
        }


class Findings:
    """Accumulates verdicts while judging; strictest wins, nothing is ever dropped."""

    __slots__ = ("reasons", "rules", "verdict")

    def __init__(self, verdict: Verdict = "allow", reasons: list[str] | None = None,
                 rules: list[str] | None = None) -> None:
        self.verdict: Verdict = verdict
        self.reasons: list[str] = [] if reasons is None else reasons
        self.rules: list[str] = [] if rules is None else rules

    def add(self, verdict: Verdict, rule: str, reason: str) -> None:
        if RANK[verdict] > RANK[self.verdict]:
            self.verdict = verdict
        if rule not in self.rules:
            self.rules.append(rule)
        if reason and reason not in self.reasons:
            self.reasons.append(reason)

    def merge(self, other: Findings) -> None:
        if RANK[other.verdict] > RANK[self.verdict]:
            self.verdict = other.verdict
        for rule in other.rules:
            if rule not in self.rules:
                self.rules.append(rule)
        for reason in other.reasons:
            if reason not in self.reasons:
                self.reasons.append(reason)
