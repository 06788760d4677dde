"""The transactional shell (opt-in, `[tools.shell] transactional`): snapshot what a write
command targets, run it, and put the originals back when it exits with one of the configured
codes.

A `CommandRunner` wrapper, so the editor-terminal and the local path get it alike. Targets
come from the policy's parser (`acpd.policy.writes`); only those inside the workspace roots are
snapshotted. Directory changes count: each target is computed in every directory a `cd`/`pushd`
on the line may lead to (a superset); when a target cannot be computed (a variable, `cd -`,
`git -C`, a command whose targets its words do not name) nothing is snapshotted and the result
says that no snapshot was possible, rather than claiming a rollback. Each original is copied
into a private temp directory before the command runs; a rollback restores only the targets
that changed (copied next to the target, renamed over it: atomic per path), removes what the
command created where nothing was, and names exactly those paths. A rollback that cannot
restore every path is a hard error, reported as such. `snapshot_required` refuses to run a
write command whose snapshot failed (too big, unreadable, a target that cannot be computed).
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio.to_thread

from acpd.tools.capabilities import (
    CommandRequest,
    CommandResult,
    CommandRunner,
    OnOutput,
    OnTerminal,
)
from acpd.tools.errors import ErrorCategory, ToolError


@dataclass(frozen=True, slots=True)
class TransactionSettings:
    rollback_exit_codes: frozenset[int] = frozenset({1, 2})
    snapshot_required: bool = False
    max_snapshot_bytes: int = 0
    """0: unlimited."""


class SnapshotFailed(Exception):
    pass


@dataclass(slots=True)
class Snapshot:
    directory: str
    saved: list[tuple[str, str | None]] = field(default_factory=list)
    """(target, copy in `directory`) or (target, None) when the target did not exist."""
    outside: list[str] = field(default_factory=list)
    """Targets outside the workspace roots: never snapshotted, never restored."""

    def rollback(self) -> list[str]:
        """Restore every target the command changed; returns those (a target it left as it
        was is neither touched nor named). Raises OSError when one cannot be restored."""
        restored: list[str] = []
        for target, copy in reversed(self.saved):
            if _same(target, copy):
                continue
            _remove(target)  # what the command left there, even if it is now a directory
            if copy is not None:
                staged = os.path.join(os.path.dirname(target),
                                      f".{os.path.basename(target)}.acpd-rollback")
                _remove(staged)
                _copy(copy, staged)
                os.replace(staged, target)
            restored.append(target)
        return restored

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def take_snapshot(targets: Sequence[str], roots: Sequence[str], limit: int) -> Snapshot:
    """Copy each target inside `roots`; raises SnapshotFailed (the copies are removed)."""
    snap = Snapshot(tempfile.mkdtemp(prefix="acpd-snapshot-"))
    total = 0
    try:
        for n, target in enumerate(targets):
            if not _inside(target, roots):
                snap.outside.append(target)
                continue
            if not os.path.lexists(target):
                snap.saved.append((target, None))
                continue
            total += _size(target)
            if limit and total > limit:
                raise SnapshotFailed(f"the targets exceed max_snapshot_bytes ({limit})")
            copy = os.path.join(snap.directory, str(n))
            _copy(target, copy)
            snap.saved.append((target, copy))
    except SnapshotFailed:
        snap.discard()
        raise
    except OSError as exc:
        snap.discard()
        raise SnapshotFailed(f"cannot snapshot: {exc}") from None
    return snap


class TransactionalRunner:
    """Wraps a runner: snapshot before a write command, roll back on the configured codes."""

    def __init__(self, inner: CommandRunner, settings: TransactionSettings) -> None:
        self.inner = inner
        self.settings = settings

    async def run(
        self, request: CommandRequest, on_terminal: OnTerminal, on_output: OnOutput
    ) -> CommandResult:
        from acpd.policy.writes import write_targets

        plan = write_targets(request.command, request.cwd)
        if not plan.writes:
            return await self.inner.run(request, on_terminal, on_output)
        snap: Snapshot | None = None
        problem: str | None = None
        try:
            if plan.dynamic:
                raise SnapshotFailed("some write targets cannot be computed before it runs")
            snap = await anyio.to_thread.run_sync(
                take_snapshot, plan.targets, request.roots or (request.cwd,),
                self.settings.max_snapshot_bytes,
            )
        except SnapshotFailed as exc:
            if self.settings.snapshot_required:
                raise ToolError(
                    ErrorCategory.POLICY_BLOCKED,
                    f"SnapshotFailed: {exc}; snapshot_required refuses to run it",
                ) from None
            problem = str(exc)
        try:
            result = await self.inner.run(request, on_terminal, on_output)
            if problem is not None:
                result.notes.append(f"[no snapshot was possible: {problem}; nothing can be "
                                    "rolled back]")
            elif snap is not None and result.exit_code in self.settings.rollback_exit_codes:
                await _roll_back(snap, result)
            return result
        finally:
            if snap is not None:
                await anyio.to_thread.run_sync(snap.discard)


async def _roll_back(snap: Snapshot, result: CommandResult) -> None:
    try:
        restored = await anyio.to_thread.run_sync(snap.rollback)
    except OSError as exc:
        result.notes.append(f"[ROLLBACK FAILED, files may be half restored: {exc}]")
        result.rollback = ["failed"]
        return
    result.rollback = restored
    what = ", ".join(restored) if restored else "nothing to restore: no snapshotted file changed"
    result.notes.append(f"[rolled back after exit code {result.exit_code}: {what}]")
    if snap.outside:
        result.notes.append(
            f"[outside the workspace, not snapshotted nor restored: {', '.join(snap.outside)}]"
        )


def _inside(path: str, roots: Sequence[str]) -> bool:
    real = os.path.realpath(os.path.dirname(path))
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip("/") + "/"):
            return True
    return False


def _same(target: str, copy: str | None) -> bool:
    """The target is as it was snapshotted (absent then and now, or the same content)."""
    if copy is None:
        return not os.path.lexists(target)
    if not os.path.lexists(target):
        return False
    if os.path.islink(copy) or os.path.islink(target):
        return (os.path.islink(copy) and os.path.islink(target)
                and os.readlink(copy) == os.readlink(target))
    if os.path.isdir(copy) or os.path.isdir(target):
        if not (os.path.isdir(copy) and os.path.isdir(target)):
            return False
        names = sorted(os.listdir(copy))
        if names != sorted(os.listdir(target)):
            return False
        return all(_same(os.path.join(target, n), os.path.join(copy, n)) for n in names)
    try:
        return filecmp.cmp(copy, target, shallow=False) and (
            os.stat(copy).st_mode == os.stat(target).st_mode
        )
    except OSError:
        return False


def _size(path: str) -> int:
    if os.path.isdir(path) and not os.path.islink(path):
        return sum(os.lstat(os.path.join(d, f)).st_size
                   for d, _, files in os.walk(path) for f in files)
    return os.lstat(path).st_size


def _copy(source: str, dest: str) -> None:
    if os.path.isdir(source) and not os.path.islink(source):
        shutil.copytree(source, dest, symlinks=True)
    else:
        shutil.copy2(source, dest, follow_symlinks=False)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)
