"""Remembered "always allow" / "always reject" answers, persisted per workspace.

Keys come from `permissions.approval_key`: the tool id, and for the shell a digest of the
exact command. One JSON file per workspace under `<data dir>/approvals/`, named by a digest of
the workspace path, written atomically (a 0600 temp file in the same directory, fsync,
rename, fsync of the directory): a crash leaves the old answers or the new ones, never half.
A file that is not ours (another owner, or writable by group or others) is ignored with a
warning, since whoever can write it could approve commands on our behalf.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
from collections.abc import Iterable
from pathlib import Path

from acpd.readcap import read_upto

log = logging.getLogger("acpd.approvals")

FILE_MODE = 0o600
DIR_MODE = 0o700


class Approvals:
    """The answers of one workspace. `path` None keeps them in memory only."""

    def __init__(self, workspace: str, path: Path | None = None) -> None:
        self.workspace = workspace
        self.path = path
        self._lock = threading.Lock()
        self.answers: dict[str, bool] = _load(path) if path is not None else {}

    def get(self, key: str) -> bool | None:
        return self.answers.get(key)

    def set(self, key: str, allowed: bool) -> None:
        """Remember and persist. A failed write is logged and the answer kept in memory:
        the user's decision holds for this daemon either way."""
        with self._lock:
            if self.path is not None:
                # Another daemon on the same workspace may have added answers: merge them.
                self.answers = {**_load(self.path), **self.answers}
            self.answers[key] = allowed
            if self.path is None:
                return
            try:
                write_atomic(self.path, {"workspace": self.workspace, "answers": self.answers})
            except OSError as exc:
                log.warning("cannot save the approval to %s: %s", self.path, exc)

    def forget(self, key: str | None = None) -> None:
        """Drop one answer (or all) and persist."""
        with self._lock:
            if key is None:
                self.answers.clear()
            else:
                self.answers.pop(key, None)
            if self.path is not None:
                try:
                    write_atomic(self.path, {"workspace": self.workspace, "answers": self.answers})
                except OSError as exc:
                    log.warning("cannot save approvals to %s: %s", self.path, exc)


class ApprovalBook:
    """Approvals by workspace, shared by every session of the daemon on that workspace."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._open: dict[str, Approvals] = {}

    def for_workspace(self, workspace: str) -> Approvals:
        real = os.path.realpath(workspace)
        found = self._open.get(real)
        if found is None:
            path = None
            if self.directory is not None:
                digest = hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:32]
                path = self.directory / f"{digest}.json"
            found = self._open[real] = Approvals(real, path)
        return found

    def close_unused(self, in_use: Iterable[str]) -> None:
        """Forget the workspaces no live session works in (`in_use`: their cwds): their
        answers are on disk, read again when a session opens there. Those in use keep
        theirs (every session of a workspace must share one `Approvals`), and so do all
        when there is no directory to keep them in."""
        keep = {os.path.realpath(workspace) for workspace in in_use}
        for real in [r for r, a in self._open.items() if r not in keep and a.path is not None]:
            del self._open[real]


def write_atomic(path: Path, data: object) -> None:
    """Replace `path` with `data` as JSON, mode 0600, all or nothing. Raises OSError."""
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    payload = json.dumps(data, sort_keys=True, indent=1).encode()
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp)
        raise
    os.close(fd)
    try:
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _load(path: Path) -> dict[str, bool]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("cannot read approvals %s: %s", path, exc)
        return {}
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            log.warning("ignoring approvals %s: not owned by us or writable by others", path)
            return {}
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = json.loads(read_upto(handle, (1 << 20) - 1))
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable approvals %s: %s", path, exc)
        return {}
    finally:
        os.close(fd)
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, dict):
        return {}
    return {str(k): v for k, v in answers.items() if isinstance(v, bool)}
