"""The loaded policy's decision table: what the judge needs to know about a program name,
looked up once per simple command instead of a dozen set tests and memo lookups.

Built when the policy is compiled (for every name the policy, the argument specs and the
blocklists mention) and rebuilt with it on reload: a table belongs to one immutable
`CompiledPolicy`, so a reload swaps it atomically with the rest. A name outside the table (an
unknown program) gets its entry computed from the same sources on demand; those entries are
kept in a bounded memo of the policy (pure: derived from the policy and the name only).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Final

from acpd.policy import programs
from acpd.policy.argspec import spec_for
from acpd.policy.blocklist import BLOCKED_BUILTINS, SHELLS
from acpd.policy.rulematch import CompiledRule

_PATH_COMMANDS: Final = frozenset({"dd", "find"})
_MEMO_MAX: Final = 4096


class Entry:
    """One program name under one policy."""

    __slots__ = ("candidates", "conditioned", "has_paths", "modeled", "outside_overlay",
                 "spec_scan", "special", "vopts")

    def __init__(self, candidates: tuple[CompiledRule, ...], vopts: frozenset[str],
                 spec_scan: bool, has_paths: bool, modeled: bool, special: bool,
                 conditioned: bool, outside_overlay: bool) -> None:
        self.candidates = candidates
        """The rules naming it (by name, then by glob), in policy order."""
        self.vopts = vopts
        """Its options that take a value."""
        self.spec_scan = spec_scan
        """`vopts` are exactly its path spec's (a scan with them is the one `path_args`
        would make)."""
        self.has_paths = has_paths
        self.modeled = modeled
        """It has an argument spec (`programs.model`)."""
        self.special = special
        """A blocked builtin or command, a shell, a network program or cd/pushd: the judge
        looks at those cases one by one (every other name skips them)."""
        self.conditioned = conditioned
        """A non-allow rule with conditions names it: a dynamic argument asks."""
        self.outside_overlay = outside_overlay
        """The plugins list allowed commands and it is not among them."""


class ProgramTable:
    def __init__(self, by_name: dict[str, list[CompiledRule]], glob_rules: list[CompiledRule],
                 grammar: dict[str, frozenset[str]], blocked: frozenset[str],
                 network: frozenset[str], conditioned: frozenset[str],
                 allowed: frozenset[str] | None, extra_names: Iterable[str]) -> None:
        self._by_name = by_name
        self._glob_rules = glob_rules
        self._grammar = grammar
        self._special = frozenset({*BLOCKED_BUILTINS, *blocked, *SHELLS, *network, "cd",
                                   "pushd"})
        self._conditioned = conditioned
        self._allowed = allowed
        names = {*by_name, *grammar, *blocked, *network, *BLOCKED_BUILTINS, *SHELLS,
                 *programs.names(), *extra_names}
        self._fixed: dict[str, Entry] = {name: self._build(name) for name in names}
        self._memo: dict[str, Entry] = {}

    def get(self, base: str) -> Entry:
        entry = self._fixed.get(base)
        if entry is None:
            entry = self._memo.get(base)
            if entry is None:
                entry = self._build(base)
                if len(self._memo) >= _MEMO_MAX:
                    self._memo.clear()
                self._memo[base] = entry
        return entry

    def _build(self, base: str) -> Entry:
        candidates = list(self._by_name.get(base, ()))
        if self._glob_rules:
            seen = {id(cr) for cr in candidates}
            candidates += [cr for cr in self._glob_rules if id(cr) not in seen and any(
                fnmatch.fnmatchcase(base, g) for g in cr.globs)]
        vopts = self._grammar.get(base, frozenset())
        spec = spec_for(base)
        if spec is not None:
            vopts = vopts | spec.value_options
        return Entry(tuple(candidates), vopts,
                     spec is not None and vopts == spec.value_options,
                     base in _PATH_COMMANDS or spec is not None, programs.known(base),
                     base in self._special, base in self._conditioned,
                     self._allowed is not None and base not in self._allowed)
