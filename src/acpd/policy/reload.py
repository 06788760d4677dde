"""PolicyHandle: the current immutable policy, rebuilt off the hot path and swapped atomically.

A decision reads `handle.current` once (one attribute load) and judges with that object only,
so it never mixes two policies. A rebuild reads the config file and every plugin overlay,
validates them (rule examples included), and publishes by one reference assignment. On any
error the last good policy stays; the outcome (hash, sources, errors) goes to `on_reload`.

Every build first takes a `fingerprint` of its inputs (the config file and each plugin folder:
names, modes, owners, sizes, mtimes and contents). A watcher started after a build calls
`stale()` once its kernel watch is in place and rebuilds when the files changed in between:
an overlay written a few ms after the first decision is never lost.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpd.policy.decision import Decision
from acpd.policy.engine import CompiledPolicy, compile_policy
from acpd.policy.overlays import MAX_OVERLAY_BYTES, MAX_PLUGINS, Overlay, discover, merge
from acpd.policy.rules import Policy, PolicyError, Trust, load_base
from acpd.readcap import read_upto

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReloadReport:
    policy_hash: str
    sources: tuple[str, ...]
    errors: tuple[str, ...]
    changed: bool
    kept_last_good: bool

    def to_json(self) -> dict[str, object]:
        """The `_acpd/policy_reloaded` notification params."""
        return {"policyHash": self.policy_hash, "sources": list(self.sources),
                "errors": list(self.errors), "changed": self.changed,
                "keptLastGood": self.kept_last_good}


@dataclass(slots=True)
class _Known:
    """The last good pieces a rebuild falls back to when a piece is broken."""

    base: Policy | None = None
    overlays: dict[str, Overlay] = field(default_factory=dict)


def _feed(digest: Any, path: Path, *, content: bool) -> None:
    try:
        st = path.lstat()
        digest.update(f"{path}\0{st.st_mode}\0{st.st_uid}\0{st.st_size}\0{st.st_mtime_ns}"
                      f"\0{st.st_ino}\0".encode("utf-8", "surrogateescape"))
        if content and not os.path.isdir(path):
            with open(path, "rb") as handle:
                digest.update(read_upto(handle, MAX_OVERLAY_BYTES))
    except OSError as exc:
        digest.update(f"{path}\0error {exc.errno}\0".encode("utf-8", "surrogateescape"))


def fingerprint(config: Path | None, plugin_dirs: Sequence[Path]) -> str:
    """A digest of everything a build reads: any change to the inputs changes it."""
    digest = hashlib.sha256()
    if config is not None:
        _feed(digest, config, content=True)
    for root in plugin_dirs:
        _feed(digest, root, content=False)
        try:
            names = sorted(os.listdir(root))[: MAX_PLUGINS + 1]
        except OSError:
            continue
        for name in names:
            _feed(digest, root / name, content=False)
            _feed(digest, root / name / "plugin.toml", content=True)
    return digest.hexdigest()


def build_policy(config: Path | None, plugin_dirs: Sequence[Path],
                 known: _Known | None = None) -> tuple[CompiledPolicy, list[str], bool]:
    """Base (+ user config) + overlays, compiled and validated.

    A broken piece is replaced by its last good version from `known` (a broken config keeps
    the last good base, a broken plugin its last good overlay; a plugin that never loaded is
    skipped), so errors never loosen the policy. Returns (policy, errors, fell_back).
    """
    known = known if known is not None else _Known()
    errors: list[str] = []
    fell_back = False
    try:
        base, _ = load_base(config)
        compile_policy(base)
    except PolicyError as exc:
        errors.append(str(exc))
        fell_back = True
        base = known.base if known.base is not None else load_base(None)[0]
    overlays, failures = discover(plugin_dirs)
    failed_folders: list[str] = []
    for folder, message in failures:
        errors.append(message)
        if folder is not None:
            failed_folders.append(folder)
    good: dict[str, Overlay] = {}
    for ov in overlays:
        try:
            compile_policy(merge(base, [ov]))
            good[ov.folder] = ov
        except PolicyError as exc:
            errors.append(str(exc))
            failed_folders.append(ov.folder)
    for folder in failed_folders:
        for key, ov in known.overlays.items():
            if key == folder or key.startswith(folder.rstrip("/") + "/"):
                good[key] = ov
                fell_back = True
    policy = compile_policy(merge(base, list(good.values())))
    known.base = base
    known.overlays = good
    return policy, errors, fell_back


class PolicyHandle:
    def __init__(self, config: Path | None = None, plugin_dirs: Sequence[Path] = (),
                 on_reload: Callable[[ReloadReport], None] | None = None) -> None:
        self.config = config
        self.plugin_dirs = tuple(plugin_dirs)
        self.on_reload = on_reload
        self._lock = threading.Lock()
        self._known = _Known()
        self._fingerprint = fingerprint(config, self.plugin_dirs)
        policy, errors, fell_back = build_policy(config, self.plugin_dirs, self._known)
        self._current: CompiledPolicy = policy
        self.last_report = ReloadReport(policy.hash, policy.policy.sources, tuple(errors),
                                        True, fell_back)

    @classmethod
    def from_policy(cls, policy: CompiledPolicy) -> PolicyHandle:
        handle = cls.__new__(cls)
        handle.config, handle.plugin_dirs, handle.on_reload = None, (), None
        handle._lock = threading.Lock()
        handle._known = _Known(policy.policy)
        handle._fingerprint = fingerprint(None, ())
        handle._current = policy
        handle.last_report = ReloadReport(policy.hash, policy.policy.sources, (), True, False)
        return handle

    @property
    def current(self) -> CompiledPolicy:
        return self._current

    def judge(self, command: str, *, cwd: str, roots: tuple[str, ...] | None = None,
              trust: Trust | None = None, sandboxed: bool = False) -> Decision:
        policy = self._current  # read once: the whole decision uses this object
        return policy.judge(command, cwd=cwd, roots=roots, trust=trust, sandboxed=sandboxed)

    def publish(self, policy: CompiledPolicy) -> None:
        self._current = policy

    def stale(self) -> bool:
        """Have the inputs changed since the last build started? (Blocking: it reads them.)"""
        return fingerprint(self.config, self.plugin_dirs) != self._fingerprint

    def rebuild(self) -> ReloadReport:
        """Rebuild from disk (blocking; run it in a worker thread from async code)."""
        with self._lock:
            old = self._current
            self._fingerprint = fingerprint(self.config, self.plugin_dirs)
            try:
                policy, errors, fell_back = build_policy(self.config, self.plugin_dirs,
                                                         self._known)
            except Exception as exc:  # never let a reload take the daemon down
                log.exception("policy rebuild failed")
                report = ReloadReport(old.hash, old.policy.sources,
                                      (f"rebuild failed: {type(exc).__name__}: {exc}",),
                                      False, True)
            else:
                self._current = policy  # the one reference assignment that publishes
                report = ReloadReport(policy.hash, policy.policy.sources, tuple(errors),
                                      policy.hash != old.hash, fell_back)
            self.last_report = report
        if self.on_reload is not None:
            try:
                self.on_reload(report)
            except Exception:
                log.exception("policy reload callback failed")
        return report

    async def arebuild(self) -> ReloadReport:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.rebuild)

    def watch_targets(self) -> list[Path]:
        targets = [p for p in self.plugin_dirs]
        if self.config is not None:
            targets.append(self.config)
        return targets

    async def watch(self, *, debounce_ms: int = 50, step_ms: int = 10,
                    stop_event: object | None = None, force_polling: bool | None = None) -> None:
        """Watch the config file and plugin directories; rebuild after each batch of changes.
        Runs until stop_event (an anyio.Event) is set."""
        from acpd.policy.watch import watch_paths

        async for changes in watch_paths(self.watch_targets(), debounce_ms=debounce_ms,
                                         step_ms=step_ms, stop_event=stop_event,
                                         force_polling=force_polling, ready=True):
            if changes or await self.astale():
                await self.arebuild()

    async def astale(self) -> bool:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.stale)
