"""watchfiles on the config file and the plugin directories (recursive, short debounce).

A target that does not exist yet is watched through its nearest existing parent (at most two
levels up), so creating `<cwd>/.acpd/plugins` later is noticed. Events are filtered to the
targets; editors that save by rename are handled because directories, not files, are watched.

With `ready=True` the first batch is empty and comes as soon as the kernel watch is in place:
a change made before that instant is not seen by the watch, so the caller checks then whether
the files still are what it last built from (`PolicyHandle.stale`) and rebuilds if not. That
closes the window between a first build and the start of its watcher (issue 9, item 6).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

MAX_UP = 2
RUST_TIMEOUT_MS = 5000


def watch_roots(targets: Sequence[Path]) -> list[Path]:
    roots: list[Path] = []
    for target in targets:
        path = Path(os.path.abspath(target))
        probe = path if path.is_dir() and not path.is_symlink() else path.parent
        for _ in range(MAX_UP + 1):
            if probe.is_dir():
                if probe not in roots:
                    roots.append(probe)
                break
            probe = probe.parent
    return roots


def _relevant(targets: Sequence[Path]) -> Any:
    prefixes = [os.path.abspath(t) for t in targets]

    def accept(_change: Any, path: str) -> bool:
        full = os.path.abspath(path)
        for pre in prefixes:
            if full == pre or full.startswith(pre.rstrip("/") + "/") or pre.startswith(
                full.rstrip("/") + "/"
            ):
                return True
        return False

    return accept


async def watch_paths(targets: Sequence[Path], *, debounce_ms: int = 50, step_ms: int = 10,
                      stop_event: Any = None, force_polling: bool | None = None,
                      ready: bool = False) -> AsyncIterator[set[tuple[Any, str]]]:
    """Yield each debounced batch of changes that touches one of the targets; with `ready`,
    first an empty batch once the watch is in place. Ends when `stop_event` is set."""
    from watchfiles import Change
    from watchfiles._rust_notify import RustNotify

    roots = watch_roots(targets)
    if not roots:
        if ready:
            yield set()
        return
    stop = stop_event if stop_event is not None else anyio.Event()
    accept = _relevant(targets)
    polling = bool(force_polling) if force_polling is not None else (
        "WATCHFILES_FORCE_POLLING" in os.environ)
    # The constructor sets the kernel watches up before it returns: from here on, no change
    # to the targets can be missed.
    with RustNotify([str(r) for r in roots], False, polling, 300, True, True) as notify:
        if ready:
            yield set()
        while True:
            try:
                raw = await anyio.to_thread.run_sync(
                    notify.watch, debounce_ms, step_ms, RUST_TIMEOUT_MS, stop)
            except anyio.get_cancelled_exc_class():
                stop.set()  # let the worker thread end
                raise
            if raw == "stop":
                return
            if isinstance(raw, str):  # "timeout" (or a signal): keep waiting
                continue
            changes = {(Change(c), p) for c, p in raw if accept(Change(c), p)}
            if changes:
                yield changes
