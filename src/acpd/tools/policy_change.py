"""What a shell policy reload changed, said in words for the user (not only for tools).

The daemon announces every reload with `_acpd/policy_reloaded` (hash, sources, errors), which
only acpd-aware clients show. A reload that changed the policy is also owed, as one agent
message, to every session judged by it, at its next prompt (never in the middle of a turn):
which overlay files came or went, and what they added or removed: rules (verdict, commands,
reason), blocked commands, deny_read/deny_write globs, the allowed-commands list, the network.
At most MAX_ITEMS items are named; the rest are counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpd.policy.rules import Policy, Rule

MAX_ITEMS = 12


def describe_change(before: Policy, after: Policy, old_hash: str, new_hash: str) -> str:
    """One message naming what changed between two policies (their sources, their rules)."""
    items: list[str] = []
    for source in after.sources:
        if source not in before.sources:
            items.append(f"overlay added: {source}")
    for source in before.sources:
        if source not in after.sources:
            items.append(f"overlay removed: {source}")
    old_rules = {r.id: r for r in before.rules}
    new_rules = {r.id: r for r in after.rules}
    items += [f"new rule: {_rule(r)}" for i, r in new_rules.items() if old_rules.get(i) != r]
    items += [f"rule dropped: {_rule(r)}" for i, r in old_rules.items() if i not in new_rules]
    items += _listed("blocked commands", before.blocklist.commands, after.blocklist.commands)
    items += _listed("deny_read", before.paths.deny_read, after.paths.deny_read)
    items += _listed("deny_write", before.paths.deny_write, after.paths.deny_write)
    if before.allowed_commands != after.allowed_commands:
        allowed = after.allowed_commands
        items.append("allowed commands: " + ("any the rules allow" if allowed is None
                                             else ", ".join(allowed) or "none"))
    if before.policy.allow_network != after.policy.allow_network:
        items.append(f"network: {'allowed' if after.policy.allow_network else 'refused'}")
    shown = items[:MAX_ITEMS]
    if len(items) > MAX_ITEMS:
        shown.append(f"and {len(items) - MAX_ITEMS} more changes")
    head = (f"[acpd] The shell policy changed ({old_hash[:12]} -> {new_hash[:12]}) and is in "
            "force for every command from now on, without a restart:")
    return "\n".join([head, *(f"- {item}" for item in shown or ["(no rule-level change)"])])


def _rule(rule: Rule) -> str:
    what = f"{rule.verdict} {' '.join(rule.commands)}"
    if rule.subcommands:
        what += f" {'/'.join(rule.subcommands)}"
    why = f": {rule.reason}" if rule.reason else ""
    where = f" (from {rule.source})" if rule.source else ""
    return f"{rule.id} = {what}{why}{where}"


def _listed(name: str, old: tuple[str, ...], new: tuple[str, ...]) -> list[str]:
    added = [x for x in new if x not in old]
    gone = [x for x in old if x not in new]
    out = [f"{name} added: {', '.join(added)}"] if added else []
    return out + ([f"{name} removed: {', '.join(gone)}"] if gone else [])
