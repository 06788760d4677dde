"""The tool dependency graph: `requires` (hard gate) and `prefers` (soft boost) per tool.

Rules name tools as /tools shows them (short name) or by id; a rule or prerequisite matches a
tool when it equals either. Cycles in `requires` are broken when the graph is built, never per
turn: a depth-first search finds every tool on a cycle (a tool requiring itself included),
those tools lose their `requires` and one warning names them.

Per turn (`gate`): a tool whose `requires` are not all in the session's completed set is held
back, unless it is exempt (always_on, named in the user's message, or already called this
turn). If that would leave no tool but the always-on ones while holding some back, the gates
are off for the turn (deadlock fallback: the agent is never left with nothing to call) and
the caller says so. `boost` is +boost_per_dep per completed `prefers` entry, at most
max_total_boost.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

log = logging.getLogger("acpd.catalog")


@dataclass(frozen=True, slots=True)
class GateResult:
    held: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Tool key -> the prerequisites it still waits for (the tools left out)."""
    deadlock: bool = False
    """Every candidate was held: the gates were lifted for this turn."""


class DependencyGraph:
    def __init__(
        self, requires: Mapping[str, Iterable[str]], prefers: Mapping[str, Iterable[str]],
        *, boost_per_dep: float = 0.15, max_total_boost: float = 0.20,
    ) -> None:
        self.requires = {k: tuple(dict.fromkeys(v)) for k, v in requires.items() if v}
        self.prefers = {k: tuple(dict.fromkeys(v)) for k, v in prefers.items() if v}
        self.boost_per_dep = boost_per_dep
        self.max_total_boost = max_total_boost
        self.cycles = find_cycle_members(self.requires)
        if self.cycles:
            log.warning(
                "tool dependencies: %s form a requires cycle; their requires are ignored",
                ", ".join(sorted(self.cycles)),
            )
            for name in self.cycles:
                self.requires.pop(name, None)

    def rule_key(self, keys: tuple[str, str], table: Mapping[str, tuple[str, ...]]) -> str | None:
        for key in keys:
            if key in table:
                return key
        return None

    def missing(self, keys: tuple[str, str], completed: Collection[str]) -> tuple[str, ...]:
        """The prerequisites of the tool named by `keys` (name, id) not yet completed."""
        rule = self.rule_key(keys, self.requires)
        if rule is None:
            return ()
        return tuple(r for r in self.requires[rule] if r not in completed)

    def boost(self, keys: tuple[str, str], completed: Collection[str]) -> float:
        rule = self.rule_key(keys, self.prefers)
        if rule is None:
            return 0.0
        met = sum(1 for p in self.prefers[rule] if p in completed)
        return min(met * self.boost_per_dep, self.max_total_boost)

    def gate(
        self, candidates: Iterable[tuple[str, str]], completed: Collection[str],
        exempt: Collection[tuple[str, str]], always_on: Collection[tuple[str, str]],
    ) -> GateResult:
        """Which of `candidates` (name, id) to hold back now; see the module docstring."""
        held: dict[str, tuple[str, ...]] = {}
        others_left = False
        for keys in candidates:
            missing = () if keys in exempt else self.missing(keys, completed)
            if missing:
                held[keys[0]] = missing
            elif keys not in always_on:
                others_left = True
        if held and not others_left:
            log.warning(
                "tool dependencies: every candidate tool waits for a prerequisite (%s); "
                "the gates are off for this turn", ", ".join(sorted(held)),
            )
            return GateResult({}, deadlock=True)
        return GateResult(held)


def find_cycle_members(requires: Mapping[str, Iterable[str]]) -> set[str]:
    """Every node on some cycle of the `requires` graph (iterative DFS, Tarjan's SCCs)."""
    graph = {k: list(v) for k, v in requires.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    members: set[str] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            edges = graph.get(node, [])
            if child < len(edges):
                work.append((node, child + 1))
                nxt = edges[child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1 or node in graph.get(node, []):
                    members.update(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return members
