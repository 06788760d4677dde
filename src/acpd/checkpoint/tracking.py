"""Which scan a checkpoint needs: everything, or only what the file watcher reported.

Rules (store.py calls `scan` under the store's lock):
- A full scan (every path `lstat`ed, see scan.py) when: the caller does not trust the
  watcher for this checkpoint (`trust=False`: the checkpoint after a call that did not run in
  the kernel sandbox, whose processes could write through a hard link made outside the
  workspace or a shared memory map), there is no usable watcher (not Linux, switched off,
  no inotify, the watch limit reached, a mount point under the workspace, a directory seen
  under two names), the last full scan was incomplete, the watcher reports a doubt
  (dropped events, a renamed directory, too many changes: inotify.py), a file gained a hard
  link, or the last full scan is older than `Limits.verify_seconds`.
- Otherwise an incremental scan (`Scanner.scan_dirty`) of: the paths the watcher reported,
  new directories whole, every file with more than one hard link (it can be written through
  its other name without an event here), and every file whose bytes are not saved yet.
- A full scan also checks the watcher: a path it finds changed that no event, no doubt and
  no re-stat set accounts for is a miss; the watcher is then switched off for this workspace
  (full scans from then on), the log and the scan's notes say so.
- Directory modification times are never used to skip a directory: a file edited in place
  changes its own mtime, not its directory's. In-place edits are found by their events
  (IN_MODIFY, IN_CLOSE_WRITE on the directory's watch) or, on a full scan, by their stat.
"""

from __future__ import annotations

import logging
import math
import sys
import time

from acpd.checkpoint.entries import Entry, diff_manifests
from acpd.checkpoint.scan import Limits, Scanner, ScanResult
from acpd.sandbox.inotify import Dirty, Watcher

log = logging.getLogger("acpd.checkpoint")


class Tracker:
    def __init__(self, scanner: Scanner, limits: Limits) -> None:
        self.scanner = scanner
        self.limits = limits
        self.watcher: Watcher | None = None
        self.off: str | None = None
        """Why this workspace is scanned in full every time (None: the watcher may be used)."""
        if not limits.watch:
            self.off = "switched off"
        elif not sys.platform.startswith("linux"):
            self.off = f"no inotify on {sys.platform}"
        self.multi: set[str] = set()
        self.slow: set[str] = set()
        self.carry = Dirty()
        """Events read after a full scan began: the next checkpoint re-stats them."""
        self.last_full = -math.inf
        self.complete = False
        self.kind = ""
        """"full" or "incremental": what the last scan was (for tests and benchmarks)."""

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()

    def scan(self, manifest: dict[str, Entry], *, budget: bool, trust: bool) -> ScanResult:
        dirty: Dirty | None = None
        if self._usable():
            assert self.watcher is not None
            dirty = self._drain(self.watcher)
            fresh = time.monotonic() - self.last_full < self.limits.verify_seconds
            if trust and dirty.doubt is None and fresh:
                result = self.scanner.scan_dirty(
                    manifest, dirty.paths | self.multi | self.slow, dirty.trees, budget=budget)
                if result is not None and result.multi <= self.multi:
                    # Every file of both sets was re-stat'ed: the result's sets are complete.
                    self.multi, self.slow = result.multi, result.slow
                    self.kind = "incremental"
                    return result
                dirty.doubt = "a file gained a hard link, or a mount or link on the way"
        return self._full(manifest, budget, dirty)

    def _usable(self) -> bool:
        return (self.off is None and self.watcher is not None and self.watcher.broken is None
                and self.complete)

    def _drain(self, watcher: Watcher) -> Dirty:
        dirty = watcher.drain()
        dirty.merge(self.carry)
        self.carry = Dirty()
        return dirty

    def _full(self, manifest: dict[str, Entry], budget: bool, before: Dirty | None
              ) -> ScanResult:
        watcher = self._watcher()
        checking = before is not None and before.doubt is None
        pre = self._drain(watcher) if watcher is not None else None
        if watcher is not None:
            watcher.start_sweep()
        self.scanner.watcher = watcher
        result = self.scanner.scan(manifest, budget=budget)
        self.kind = "full"
        if watcher is None:
            return result
        if result.complete:
            watcher.sweep()
        self.carry = watcher.drain()
        if result.foreign is not None:
            self._switch_off(f"{result.foreign!r} is on another file system than the root")
        elif watcher.broken is not None:
            self._switch_off(watcher.broken)
        elif checking and pre is not None and pre.doubt is None and result.complete:
            assert before is not None
            self._check(manifest, result, before, pre)
        self.multi, self.slow = result.multi, result.slow
        self.last_full = time.monotonic()
        self.complete = result.complete
        return result

    def _watcher(self) -> Watcher | None:
        if self.off is not None:
            return None
        if self.watcher is None or self.watcher.broken is not None:
            try:
                self.watcher = Watcher()
            except OSError as exc:
                self._switch_off(f"no inotify: {exc.strerror}")
                return None
        return self.watcher

    def _check(self, manifest: dict[str, Entry], result: ScanResult, before: Dirty,
               pre: Dirty) -> None:
        """Every change a full scan finds must have been reported (or re-stat'ed anyway)."""
        known = self.multi | self.slow
        missed = [c.path for c in diff_manifests(manifest, result.entries, result.touched)
                  if c.path not in known and not before.covers(c.path)
                  and not pre.covers(c.path) and not self.carry.covers(c.path)]
        if missed:
            why = (f"the file watcher missed changes to {len(missed)} paths (first: "
                   f"{missed[0]!r}); this workspace is scanned in full from now on")
            result.note(why)
            self._switch_off(why)

    def _switch_off(self, why: str) -> None:
        if self.off is None:
            log.warning("checkpoints of %s: %s", self.scanner.root, why)
        self.off = why
        self.close()
