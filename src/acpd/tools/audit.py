"""`audit.jsonl`: one JSON line per tool call, written before the call's result is returned.

The file is opened O_APPEND (never truncated, never rewritten) with mode 0600, and each
record goes out in a single write(2) of the whole line: with O_APPEND the kernel places it at
the end atomically with respect to other appenders, and a process killed with SIGKILL
cannot stop a write(2) halfway, so a daemon crash leaves whole lines only. What can still tear
a line is the machine going down (power, kernel panic) with the page cache unwritten.

fsync: off by default. Without it a line reaches the page cache before the result returns,
which survives any crash of the daemon itself; with it (`[tools.audit] fsync = true`) the
line also survives a crash of the machine, at the price of a disk flush (~0.1-10 ms) on every
call, blocking the daemon's loop meanwhile. The default favours the 0.5 ms overhead budget.

Rotation: once the file passes `max_bytes` (`[tools.audit] max_bytes`, 64 MiB; 0: never) it
is renamed `audit.jsonl.1` (older ones shift up to `.KEEP`, the oldest is removed) and a new
one is started, so a daemon that runs for months cannot fill the disk with it. Several
processes append to one log (the daemon, `acpd tools run`, `acpd undo`): the rename is done
under an flock of `audit.lock` after checking, by the path, that nobody rotated already, and
every writer notices a rotation by another (the path names another file than its descriptor)
and reopens before its next line. A line written meanwhile lands in `.1`: none is lost.

On open, a last line without its newline (torn by a crash, or written by something else) is
detected: it is logged, reported by `inspect()` (for `acpd doctor` and `acpd audit tail`),
and the next record starts on a fresh line so it is never glued to the torn one.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("acpd.audit")

FILE_MODE = 0o600
TAIL_PROBE = 1 << 16
MAX_BYTES = 64 << 20
KEEP = 5
LOCK_FILE = "audit.lock"


@dataclass(frozen=True, slots=True)
class AuditHealth:
    path: Path
    exists: bool
    size: int
    torn: bool
    """The last line has no newline: something died while writing it."""
    torn_bytes: int
    """Length of the torn fragment."""

    def describe(self) -> str:
        if not self.exists:
            return f"{self.path}: no audit log yet"
        if self.torn:
            return (
                f"{self.path}: the last line is torn ({self.torn_bytes} bytes without a "
                "newline, from a crash); later records start on a fresh line"
            )
        return f"{self.path}: {self.size} bytes, whole lines"


def inspect(path: Path) -> AuditHealth:
    """Look at the log's tail; raises OSError when it exists but cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return AuditHealth(path, False, 0, False, 0)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return AuditHealth(path, True, 0, False, 0)
        start = max(0, size - TAIL_PROBE)
        tail = os.pread(fd, size - start, start)
    finally:
        os.close(fd)
    if tail.endswith(b"\n"):
        return AuditHealth(path, True, size, False, 0)
    cut = tail.rfind(b"\n")
    fragment = len(tail) - (cut + 1) if cut >= 0 or start == 0 else len(tail)
    return AuditHealth(path, True, size, True, fragment)


class AuditLog:
    """Appends records to `path`. Thread-compatible: each record is one write(2)."""

    def __init__(self, path: Path, *, fsync: bool = False, strict: bool = False,
                 max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
        """Open (creating it 0600). When that is impossible: raises OSError if `strict`;
        else `problem()` says why (the runner refuses every tool call meanwhile: nothing
        runs that cannot be audited) and each write tries to open it again."""
        self.path = path
        self.fsync = fsync
        self.max_bytes = max_bytes
        self.keep = max(1, keep)
        self._fd = -1
        self._fresh_line = False
        self.health = AuditHealth(path, False, 0, False, 0)
        try:
            self._open()
        except OSError as exc:
            if strict:
                raise
            log.error("cannot open the audit log %s: %s; tool calls fail until it can be "
                      "written", path, exc.strerror or exc)

    def _open(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.health = inspect(self.path)
        self._fd = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE
        )
        self._fresh_line = self.health.torn
        if self.health.torn:
            log.warning("%s", self.health.describe())

    def problem(self) -> str | None:
        """Why no record can be written now (the log cannot be opened), or None."""
        if self._fd >= 0:
            return None
        try:
            self._open()
        except FileExistsError as exc:  # mkdir met a file where a directory should be
            return f"cannot open the audit log {self.path}: {exc.filename} is not a directory"
        except OSError as exc:
            return f"cannot open the audit log {self.path}: {exc.strerror or exc}"
        return None

    def write(self, record: dict[str, Any]) -> None:
        """Append one record as a line. Raises OSError (disk full, a read-only or removed
        directory, ...) with a message that names the file and the cause."""
        try:
            self._write(record)
        except OSError as exc:
            cause = exc.strerror or str(exc)
            raise OSError(exc.errno, f"cannot write the audit log {self.path}: {cause}") from None

    def _write(self, record: dict[str, Any]) -> None:
        if self._fd >= 0:
            self._follow_rotation()
        if self._fd < 0:
            self._open()
        try:
            line = orjson.dumps(record, default=str) + b"\n"
        except TypeError:  # a str that is not UTF-8 (a path or argument with lone surrogates)
            line = orjson.dumps(_utf8_only(record), default=str) + b"\n"
        if self._fresh_line:
            # Terminate the torn fragment: the fragment stays (never rewrite the log), but
            # it is its own line, which readers skip as unparsable.
            line = b"\n" + line
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view) :]
        self._fresh_line = False
        if self.fsync:
            os.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _follow_rotation(self) -> None:
        """Before a line: rotate a log past `max_bytes`, and reopen when the path no longer
        names the open file (another process rotated it, or someone removed it)."""
        mine = os.fstat(self._fd)
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            named = None
        if named is not None and (named.st_ino, named.st_dev) == (mine.st_ino, mine.st_dev):
            if not self.max_bytes or mine.st_size < self.max_bytes:
                return
            self._rotate()
        self.close()

    def _rotate(self) -> None:
        lock = os.open(self.path.parent / LOCK_FILE,
                       os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            mine = os.fstat(self._fd)
            try:
                named = os.stat(self.path)
            except FileNotFoundError:
                return
            if (named.st_ino, named.st_dev) != (mine.st_ino, mine.st_dev):
                return  # another writer rotated it first
            rotated = [self.path.with_name(f"{self.path.name}.{k}")
                       for k in range(1, self.keep + 1)]
            with contextlib.suppress(FileNotFoundError):
                os.unlink(rotated[-1])
            for older, newer in zip(reversed(rotated), reversed(rotated[:-1]), strict=False):
                with contextlib.suppress(FileNotFoundError):
                    os.rename(newer, older)
            os.rename(self.path, rotated[0])
            log.info("audit log passed %d bytes: rotated to %s", self.max_bytes, rotated[0])
        finally:
            os.close(lock)


NOT_ACP_SESSIONS = frozenset({"", "cli", "lsp"})
"""The session names of the faces that have no ACP session (the CLI, the LSP face)."""


def caller_id(session: str) -> str | None:
    """An audit line's `caller_id`: the invoking principal, `acp:<sessionId>` for a call made
    in an ACP session; None outside one (the seed: null for CLI sessions)."""
    return None if session in NOT_ACP_SESSIONS else f"acp:{session}"


def now_iso() -> str:
    """UTC with milliseconds; cheaper than datetime for every call."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def read_records(path: Path) -> Iterator[dict[str, Any] | None]:
    """Every line parsed; None for a line that is not a JSON object (a torn one)."""
    with path.open("rb") as handle:
        for raw in handle:
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                yield None
                continue
            yield value if isinstance(value, dict) else None


def tail_lines(path: Path, count: int) -> list[bytes]:
    """The last `count` whole lines (newline included), read from the end."""
    if count <= 0:
        return []
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        end = handle.tell()
        block = 1 << 16
        data = b""
        pos = end
        while pos > 0 and data.count(b"\n") <= count:
            step = min(block, pos)
            pos -= step
            handle.seek(pos)
            data = handle.read(step) + data
    lines = data.splitlines(keepends=True)
    if pos > 0:
        lines = lines[1:]  # the first one may be cut by where the read began
    return lines[-count:]


def _utf8_only(value: Any) -> Any:
    """`value` with every str made valid UTF-8: a byte smuggled in by surrogateescape (a
    non-UTF-8 file name) is shown as `\\xNN`, any other lone surrogate as U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub(_shown_surrogate, value)
    if isinstance(value, dict):
        return {_utf8_only(k): _utf8_only(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_utf8_only(v) for v in value]
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"
