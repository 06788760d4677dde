"""Hot reload of the permission rules (`[tools.permissions.<tool>]` in config.toml).

Rules:
- The config file is watched beside the shell policy's files: the watch loop is one of the
  shell policies' watchers (`ShellPolicies.add_watcher`), started with them when the editor's
  connection is up and stopped with them.
- After each batch of changes, and once as soon as the watch is in place (an edit made between
  the start-up read and that instant would otherwise wait for the next edit), the file is read
  and validated again in a worker thread, off the event loop. When the rules differ, a new
  `ToolPolicy` is published by one reference assignment (`pipeline.policy = ...`); a decision
  reads `pipeline.policy` once, and the file tools read the rules once per call, so a call
  never mixes two rule sets.
- A config that does not load (not TOML, a bad value anywhere in it): the rules in force stay,
  the editor gets `_acpd/policy_reloaded` with the error and `keptLastGood: true`, and every
  session is told at its next prompt, as for a broken policy overlay.
- `[tools] enabled` is kept as it was at start (it shapes the tool list the model was shown);
  changing it needs a restart.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio
import anyio.to_thread

from acpd.tools.permissions import ToolPolicy
from acpd.tools.rules import RuleSet

if TYPE_CHECKING:
    from acpd.tools.shellpolicy import ShellPolicies

log = logging.getLogger("acpd.tools.permissions")

Entries = dict[str, list[tuple[str, Literal["allow", "ask", "deny"]]]]
LoadRules = Callable[[], Entries]
"""Reads config.toml again and returns its rules; raises (any exception, its message shown)
when the file cannot be used."""
KEPT = "the permission rules were not reloaded; the rules in force stay"
SCOPE = "tools.permissions"


class HasPolicy(Protocol):
    policy: ToolPolicy


@dataclass(frozen=True, slots=True)
class RulesOutcome:
    changed: bool
    errors: tuple[str, ...]

    @property
    def kept_last_good(self) -> bool:
        return bool(self.errors)


class RulesReloader:
    """Keeps `target.policy` (the pipeline's) in step with config.toml's permission rules."""

    def __init__(self, target: HasPolicy, config_file: Path, load: LoadRules,
                 shell: ShellPolicies | None = None, debounce_ms: int = 50) -> None:
        self.target = target
        self.config_file = config_file
        self.load = load
        self.shell = shell
        self.debounce_ms = debounce_ms
        self._lock = threading.Lock()

    def rebuild(self) -> RulesOutcome:
        """Read the rules again; publish them when they changed. Blocking (run it in a worker
        thread from async code). Never raises."""
        with self._lock:
            current = self.target.policy
            try:
                rules = RuleSet(self.load())
            except Exception as exc:  # a reload must never take the daemon down
                message = str(exc) or type(exc).__name__
                log.warning("%s: %s", KEPT, message)
                return RulesOutcome(False, (message, KEPT))
            if rules.describe() == current.rules.describe():
                return RulesOutcome(False, ())
            self.target.policy = ToolPolicy(current.enabled, rules)  # the one assignment
            log.info("permission rules reloaded from %s: %d rules", self.config_file,
                     sum(len(r) for r in rules.rules.values()))
            return RulesOutcome(True, ())

    def params(self, outcome: RulesOutcome) -> dict[str, Any]:
        """The `_acpd/policy_reloaded` notification for this reload."""
        return {"hash": self.target.policy.rules_hash(), "sources": [str(self.config_file)],
                "errors": list(outcome.errors), "changed": outcome.changed,
                "keptLastGood": outcome.kept_last_good, "scope": SCOPE}

    async def reload(self) -> RulesOutcome:
        outcome = await anyio.to_thread.run_sync(self.rebuild)
        if self.shell is not None and (outcome.changed or outcome.errors):
            line = None
            if outcome.errors:
                line = f"{KEPT}: " + "; ".join(outcome.errors[:-1])
            await self.shell.config_reloaded(self.params(outcome), line[:2000] if line else None)
        return outcome

    async def watch(self, stop: anyio.Event) -> None:
        """Reload after each batch of changes to the config file, until `stop` is set."""
        from acpd.policy.watch import watch_paths

        async for _changes in watch_paths([self.config_file], debounce_ms=self.debounce_ms,
                                          stop_event=stop, ready=True):
            await self.reload()


def rules_loader(reload_tools: Callable[[], Any]) -> LoadRules:
    """The rules of a fresh `[tools]` (the daemon's `load_config(...).tools`)."""

    def load() -> Entries:
        entries: Entries = reload_tools().rule_entries()
        return entries

    return load
