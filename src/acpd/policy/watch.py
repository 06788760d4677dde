"""watchfiles on the config file and the plugin directories (recursive, short debounce).

A target that does not exist yet is watched through its nearest existing parent (at most two
levels up), so creating `<cwd>/.acpd/plugins` later is noticed. Events are filtered to the
targets; editors that save by rename are handled because directories, not files, are watched.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

MAX_UP = 2


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
                      stop_event: Any = None,
                      force_polling: bool | None = None) -> AsyncIterator[set[tuple[Any, str]]]:
    """Yield each debounced batch of changes that touches one of the targets."""
    import watchfiles

    roots = watch_roots(targets)
    if not roots:
        return
    async for changes in watchfiles.awatch(
        *roots, watch_filter=_relevant(targets), debounce=debounce_ms, step=step_ms,
        stop_event=stop_event, recursive=True, force_polling=force_polling,
        ignore_permission_denied=True,
    ):
        yield changes
