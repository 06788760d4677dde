"""The sandbox's pieces: resolver choice and fallback, magic links, globs, policy, gitignore."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from acpd.tools.errors import ErrorCategory, ToolError
from acpd.tools.fs import syscalls
from acpd.tools.fs.gitignore import IgnoreStack
from acpd.tools.fs.globs import ReadPolicy, compile_glob
from acpd.tools.fs.resolve import Openat2Resolver, WalkResolver, choose_resolver
from acpd.tools.fs.sandbox import Sandbox, clean_path
from tests.tools.conftest import ResolverKind


def test_auto_falls_back_to_the_walk_when_openat2_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for code in (errno.ENOSYS, errno.EPERM):
        def refuse(*_args: object, _code: int = code, **_kw: object) -> int:
            raise OSError(_code, os.strerror(_code))

        monkeypatch.setattr(syscalls, "openat2", refuse)
        assert syscalls.openat2_available.__wrapped__() is False
    monkeypatch.setattr("acpd.tools.fs.resolve.openat2_available", lambda: False)
    assert isinstance(choose_resolver("auto"), WalkResolver)
    with pytest.raises(OSError):
        choose_resolver("openat2")
    monkeypatch.setattr("acpd.tools.fs.resolve.openat2_available", lambda: True)
    assert isinstance(choose_resolver("auto"), Openat2Resolver)


def test_openat2_is_used_on_this_kernel_when_it_exists() -> None:
    if os.uname().machine in ("x86_64", "aarch64") and syscalls.openat2_available():
        assert isinstance(choose_resolver(), Openat2Resolver)
    else:
        assert isinstance(choose_resolver(), WalkResolver)


def test_magic_links_are_refused(resolver: ResolverKind, ws: Path) -> None:
    # With /proc/self as the root, "root" and "cwd" are magic links to "/" and the cwd.
    with Sandbox(["/proc/self"], str(ws), resolver=choose_resolver(resolver)) as sb:
        for path in ("root/etc/hostname", "cwd/hello.txt", "/proc/self/root/etc/passwd"):
            with pytest.raises(ToolError) as info:
                sb.open_file(path).close()
            assert info.value.category is ErrorCategory.POLICY_BLOCKED


def test_resolvers_agree(ws: Path, outside: Path) -> None:
    (ws / "a").symlink_to("src")
    (ws / "src" / "b").symlink_to("../a/main.py")
    (ws / "esc").symlink_to("src/../../outside")
    (ws / "dot").symlink_to(".")
    cases = ["a/main.py", "src/b", "dot/dot/a/b", "esc/secret.txt", "src/../hello.txt",
             "missing", "hello.txt/x", "a/../../ws/hello.txt", "dot/.."]
    root = os.open(ws, os.O_PATH | os.O_DIRECTORY)
    try:
        for case in cases:
            outcomes = []
            for resolver in (Openat2Resolver(), WalkResolver()):
                if isinstance(resolver, Openat2Resolver) and not syscalls.openat2_available():
                    continue
                try:
                    fd = resolver.open(root, case, os.O_PATH)
                except OSError as exc:
                    outcomes.append(errno.errorcode[exc.errno or 0])
                else:
                    outcomes.append(os.readlink(f"/proc/self/fd/{fd}"))
                    os.close(fd)
            assert len(set(outcomes)) == 1, (case, outcomes)
    finally:
        os.close(root)


def test_clean_path_handles_double_slash() -> None:
    assert os.path.normpath("//etc/shadow") == "//etc/shadow"
    assert clean_path("//etc/shadow") == "/etc/shadow"
    assert clean_path("a//b///c/") == "a/b/c/"


def test_globs() -> None:
    def ok(pattern: str, path: str) -> bool:
        return compile_glob(pattern).fullmatch(path) is not None

    assert ok("**/*.py", "a.py") and ok("**/*.py", "x/y/a.py") and not ok("*.py", "x/a.py")
    assert ok("src/**", "src/a/b") and not ok("src/**", "srcx/a")
    assert ok("a/**/b", "a/b") and ok("a/**/b", "a/x/y/b")
    assert ok("file[0-9].txt", "file3.txt") and not ok("file[!0-9].txt", "file3.txt")
    assert ok("?.md", "a.md") and not ok("?.md", "/.md")


def test_read_policy_deny_first_then_allow() -> None:
    policy = ReadPolicy(deny=("**/.env", "secrets/**"), allow=("/ws/**",))
    assert policy.refusal("/ws/a.txt", "/ws") is None
    assert policy.refusal("/ws/.ENV", "/ws") is not None
    assert policy.refusal("/ws/secrets/k", "/ws") is not None
    assert policy.refusal("/ws/secrets", "/ws", is_dir=True) is not None
    assert policy.refusal("/other/a.txt", "/other") == "/other/a.txt matches no allow_read pattern"
    assert ReadPolicy(allow=("/ws/A.txt",)).refusal("/ws/a.txt", "/ws") is not None


def test_gitignore_rules() -> None:
    stack = IgnoreStack()
    stack.push("", "# comment\n*.log\n!keep.log\n/build/\ndocs/*.tmp\n\\#hash\n")
    stack.push("sub", "local.txt\n")
    assert stack.ignored("a.log", False) and stack.ignored("x/y/a.log", False)
    assert not stack.ignored("keep.log", False)
    assert stack.ignored("build", True) and not stack.ignored("build", False)
    assert not stack.ignored("x/build", True)
    assert stack.ignored("docs/a.tmp", False) and not stack.ignored("docs/x/a.tmp", False)
    assert stack.ignored("#hash", False)
    assert stack.ignored("sub/local.txt", False) and not stack.ignored("local.txt", False)
    stack.pop_below("other")
    assert not stack.ignored("sub/local.txt", False)
