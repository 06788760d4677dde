"""Hot reload of the output filters.

config.toml (its `[tools.filters]` and `[tools.overflow]`) and the user's filters.toml are
watched (watchfiles, as the shell policy's files are). After each batch of changes the
filter set is rebuilt in a worker thread, off the event loop, and a new OutputStage is
published by one reference assignment, `pipeline.output = stage`. A call reads
`pipeline.output` once, so an output in flight is filtered by the old set or the new one,
whole, never a mix of the two.

A bad file on reload:
- a config.toml that does not load (not TOML, a bad value): the current set stays;
- a filters.toml that cannot be used at all (over 1 MiB, unreadable, not UTF-8, not TOML):
  the current set stays;
- a bad rule (a bad or unsafe regex, an unknown strategy): that rule is skipped and the valid
  ones load, as at start;
- a deleted filters.toml: the built-in rules.
Each problem goes to the log and, once, to the next prompt of a session
(`OutputStage.take_warnings`). Per-rule metrics carry over to the new set; a rule its time
budget switched off is tried again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import anyio
import anyio.to_thread

from acpd.tools.filters import FilterMetrics, FilterSettings, build_filter_set, filters_file
from acpd.tools.filters.config import read_filters_file
from acpd.tools.output import OutputStage
from acpd.tools.overflow import OverflowSettings

log = logging.getLogger("acpd.tools.filters")

Settings = tuple[FilterSettings, OverflowSettings]
SettingsLoader = Callable[[], Settings]
"""Reads config.toml again. Raises (any exception, its message shown) when it cannot be used."""

KEPT = "the output filters were not reloaded; the rules in force stay"
_AT_START_ONLY = "; using the built-in filters"
"""What read_filters_file says happens at start; on reload the current set stays instead."""


class HasOutput(Protocol):
    output: OutputStage


@dataclass(frozen=True, slots=True)
class ReloadOutcome:
    published: bool
    """A new filter set is in force (False: the current one was kept)."""
    warnings: tuple[str, ...]


class OutputReloader:
    """Keeps `target.output` (the pipeline's output stage) in step with the files."""

    def __init__(
        self, target: HasOutput, settings: FilterSettings, *, config_dir: Path | None = None,
        config_file: Path | None = None, load_settings: SettingsLoader | None = None,
        debounce_ms: int = 50,
    ) -> None:
        self.target = target
        self.config_dir = config_dir
        self.config_file = config_file
        self.load_settings = load_settings
        self.debounce_ms = debounce_ms
        self._settings = settings
        self._lock = threading.Lock()

    def filters_path(self) -> Path | None:
        """The filters.toml the current settings name (it need not exist)."""
        path = filters_file(self._settings, str(self.config_dir) if self.config_dir else None)
        return Path(path) if path else None

    def watch_targets(self) -> list[Path]:
        return [p for p in (self.config_file, self.filters_path()) if p is not None]

    def rebuild(self) -> ReloadOutcome:
        """Read the files again and publish a new stage, or keep the filter set in force.
        Blocking: run it in a worker thread from async code. Never raises."""
        with self._lock:  # two reloads at once would race for the last word
            current = self.target.output
            try:
                return self._rebuild(current)
            except Exception as exc:  # a reload must never take the daemon down
                log.exception("output filter reload failed")
                return self._keep(current, [f"reload failed: {type(exc).__name__}: {exc}"])

    def _rebuild(self, current: OutputStage) -> ReloadOutcome:
        settings, overflow = self._settings, current.overflow
        if self.load_settings is not None:
            try:
                settings, overflow = self.load_settings()
            except Exception as exc:
                return self._keep(current, [str(exc) or type(exc).__name__])
        config_dir = str(self.config_dir) if self.config_dir else None
        path = filters_file(settings, config_dir)
        text, problems = read_filters_file(path) if path else (None, [])
        if text is None and problems:  # there, but too large, unreadable or not UTF-8
            return self._keep(current, [p.removesuffix(_AT_START_ONLY) for p in problems])
        metrics = current.filters.metrics if current.filters is not None else FilterMetrics()
        filters = build_filter_set(
            text, user_source=path or "filters.toml", settings=settings, metrics=metrics
        )
        if filters.file_rejected:  # not TOML, or nothing in it usable
            return self._keep(current, list(filters.warnings))
        metrics.reset_tripped()
        self._settings = settings
        self.target.output = OutputStage(filters, overflow)  # the one assignment that publishes
        log.info(
            "output filters reloaded from %s: %d rules (%d enabled)%s",
            path if text is not None else "the built-in rules", len(filters.rules),
            sum(r.enabled for r in filters.rules),
            f", {len(filters.warnings)} problem(s)" if filters.warnings else "",
        )
        return ReloadOutcome(True, filters.warnings)

    def _keep(self, current: OutputStage, problems: list[str]) -> ReloadOutcome:
        lines = (*problems, KEPT)
        log.warning("%s: %s", KEPT, "; ".join(problems))
        # The same filter set, in a stage that tells the user why, once.
        self.target.output = OutputStage(current.filters, current.overflow, warnings=lines)
        return ReloadOutcome(False, lines)

    async def watch(self, stop: anyio.Event) -> None:
        """Rebuild after each batch of changes to the watched files, until `stop` is set.
        When a reload names another filters.toml (`filters_path`), that one is watched."""
        from acpd.policy.watch import watch_paths

        while not stop.is_set():
            targets = self.watch_targets()
            moved = False
            batches = cast(
                AsyncGenerator[Any, None],
                watch_paths(targets, debounce_ms=self.debounce_ms, stop_event=stop),
            )
            async with aclosing(batches):
                async for _changes in batches:
                    await anyio.to_thread.run_sync(self.rebuild)
                    if self.watch_targets() != targets:
                        moved = True
                        break
            if not moved:
                return  # stopped, or nothing there to watch
