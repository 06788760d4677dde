"""find_path and grep: fd-based walks that never follow a symlink out of the sandbox."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

import anyio.to_thread

from acpd.tools.errors import ToolError
from acpd.tools.fs.atomic import is_temp_name
from acpd.tools.fs.config import FileToolsConfig
from acpd.tools.fs.errors import from_os_error, invalid
from acpd.tools.fs.gitignore import MAX_GITIGNORE_BYTES, IgnoreStack
from acpd.tools.fs.globs import compile_glob
from acpd.tools.fs.params import FindPathParams, GrepParams
from acpd.tools.fs.sandbox import Opened, Sandbox, Target
from acpd.tools.fs.walk import SUBDIR_FLAGS, Budget, Item, walk
from acpd.tools.spec import ToolContext, ToolOutput

FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
BINARY_SNIFF = 8192
MAX_LINE_CHARS = 300


def _find(cfg: FileToolsConfig, ctx: ToolContext, args: FindPathParams) -> ToolOutput:
    if args.pattern.startswith("/") or ".." in args.pattern.split("/"):
        raise invalid("pattern is matched relative to path: no leading / and no '..'")
    try:
        regex = compile_glob(args.pattern)
    except re.error as exc:
        raise invalid(f"bad glob pattern: {exc}") from None
    with cfg.sandbox(ctx) as sb:
        top = sb.open_dir(args.path)
        budget = Budget(cfg.walk_limit)
        found: list[str] = []
        total = 0
        try:
            for item in walk(top.fd, budget):
                if is_temp_name(item.name) or not regex.fullmatch(item.rel):
                    continue
                total += 1
                if len(found) < cfg.find_limit:
                    shown = sb.display(os.path.join(top.real, item.rel))
                    found.append(shown + ("/" if item.is_dir else ""))
        except OSError as exc:
            raise from_os_error(exc, args.path) from None
        finally:
            top.close()
    lines = list(found) or [f"no paths match {args.pattern!r}"]
    if total > len(found):
        lines.append(f"[showing {len(found)} of {total} matches]")
    if budget.exhausted:
        lines.append(f"[search stopped after {budget.visited} entries; narrow the path]")
    raw = {"matches": total, "shown": len(found), "complete": not budget.exhausted}
    return ToolOutput("\n".join(lines), raw=raw)


async def find_path(args: FindPathParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Paths under `path` matching the glob, capped at `find_limit`. Raises ToolError."""
    return await anyio.to_thread.run_sync(_find, cfg, ctx, args)


@dataclass(slots=True)
class GrepState:
    regex: re.Pattern[str]
    limit: int
    max_bytes: int
    lines: list[str] = field(default_factory=list)
    matches: int = 0
    files: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def full(self) -> bool:
        return self.matches > self.limit

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _grep_fd(sb: Sandbox, state: GrepState, opened: Opened, shown: str) -> None:
    """Search the regular file open at `opened` (closed here) unless a rule skips it."""
    try:
        st = opened.st
        if not stat.S_ISREG(st.st_mode):
            return state.skip("not regular files")
        if st.st_nlink > 1:
            return state.skip("hard-linked files")
        if sb.policy.refusal(opened.real, opened.root.real) is not None or (
            sb.guard is not None and not sb.guard.allows("read", opened.real)
        ):
            return state.skip("files refused by the read policy")
        if st.st_size > state.max_bytes:
            return state.skip("files over the size limit")
        data = os.read(opened.fd, state.max_bytes + 1)
    finally:
        opened.close()
    if b"\0" in data[:BINARY_SNIFF]:
        return state.skip("binary files")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return state.skip("binary files")
    state.files += 1
    for number, line in enumerate(text.splitlines(), 1):
        if state.regex.search(line):
            state.matches += 1
            if state.full:
                return None
            state.lines.append(f"{shown}:{number}: {line[:MAX_LINE_CHARS]}")
    return None


def _read_gitignore(dir_fd: int) -> str | None:
    try:
        fd = os.open(".gitignore", FILE_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            return None
        return os.read(fd, MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _ignores_above(sb: Sandbox, top: Opened) -> tuple[IgnoreStack, str]:
    """The .gitignore rules from the root down to `top` (inclusive); `top`'s path in the root."""
    prefix = os.path.relpath(top.real, top.root.real)
    prefix = "" if prefix == "." else prefix
    stack = IgnoreStack()
    parts = prefix.split("/") if prefix else []
    for i in range(len(parts)):
        try:
            opened = sb.open_dir(Target(top.root, tuple(parts[:i]), False, "."), check_policy=False)
        except ToolError:
            continue
        try:
            text = _read_gitignore(opened.fd)
        finally:
            opened.close()
        if text:
            stack.push("/".join(parts[:i]), text)
    own = _read_gitignore(top.fd)
    if own:
        stack.push(prefix, own)
    return stack, prefix


def _grep_tree(sb: Sandbox, state: GrepState, top: Opened, budget: Budget) -> None:
    ignores, prefix = _ignores_above(sb, top)

    def rooted(item: Item) -> str:
        return f"{prefix}/{item.rel}" if prefix else item.rel

    def descend(item: Item) -> bool:
        if item.name == ".git" or ignores.ignored(rooted(item), True):
            return False
        try:
            sub = os.open(item.name, SUBDIR_FLAGS, dir_fd=item.dir_fd)
        except OSError:
            return False
        try:
            text = _read_gitignore(sub)
        finally:
            os.close(sub)
        if text:
            ignores.push(rooted(item), text)
        return True

    for item in walk(top.fd, budget, descend):
        if state.full:
            return
        rel = rooted(item)
        ignores.pop_below(os.path.dirname(rel))
        if item.is_dir or not stat.S_ISREG(item.st.st_mode) or is_temp_name(item.name):
            continue
        if ignores.ignored(rel, False):
            state.skip("ignored by .gitignore")
            continue
        try:
            fd = os.open(item.name, FILE_FLAGS, dir_fd=item.dir_fd)
        except OSError:
            continue
        try:
            opened = Opened(fd, sb.real_of(fd), os.fstat(fd), top.root)
        except BaseException:
            os.close(fd)
            raise
        _grep_fd(sb, state, opened, sb.display(opened.real))


def _grep(cfg: FileToolsConfig, ctx: ToolContext, args: GrepParams) -> ToolOutput:
    try:
        regex = re.compile(args.pattern, 0 if args.case_sensitive else re.IGNORECASE)
    except re.error as exc:
        raise invalid(f"bad regular expression: {exc}") from None
    state = GrepState(regex, cfg.grep_limit, cfg.grep_max_file_bytes)
    budget = Budget(cfg.walk_limit)
    with cfg.sandbox(ctx) as sb:
        target = sb.locate(args.path)
        probe = sb.resolve(target, os.O_PATH)
        is_dir = stat.S_ISDIR(probe.st.st_mode)
        probe.close()
        if is_dir:
            top = sb.open_dir(target)
            try:
                _grep_tree(sb, state, top, budget)
            except OSError as exc:
                raise from_os_error(exc, args.path) from None
            finally:
                top.close()
        else:
            opened = sb.open_file(target)
            _grep_fd(sb, state, opened, sb.display(opened.real))
    return _grep_output(state, budget, args.pattern)


def _grep_output(state: GrepState, budget: Budget, pattern: str) -> ToolOutput:
    lines = list(state.lines) or [f"no matches for {pattern!r}"]
    if state.full:
        lines.append(f"[showing the first {state.limit} matches; more exist, narrow the search]")
    else:
        lines.append(f"[{state.matches} matches in {state.files} files searched]")
    if state.skipped:
        lines.append("[skipped: " + ", ".join(f"{n} {w}" for w, n in state.skipped.items()) + "]")
    if budget.exhausted:
        lines.append(f"[search stopped after {budget.visited} entries; narrow the path]")
    raw = {"matches": state.matches, "truncated": state.full, "skipped": state.skipped}
    return ToolOutput("\n".join(lines), raw=raw)


async def grep(args: GrepParams, ctx: ToolContext, cfg: FileToolsConfig) -> ToolOutput:
    """Search text files under `path` (skipping binaries, .gitignored files, hard links and
    files the read policy refuses); results capped at `grep_limit`. Raises ToolError."""
    return await anyio.to_thread.run_sync(_grep, cfg, ctx, args)
