"""The file tools under a path policy (`PathGuard`), called as the pipeline calls them after
an allowed decision, so only the run-time checks on real paths stand between a call and the
file system: tree checks for moves, copies and deletes, creations, outside paths, and a
directory swapped for a symlink while reads run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpd.policy.sandbox import PathRules, compile_patterns
from acpd.tools.fs import FileToolsConfig
from acpd.tools.fs.pathguard import PathGuard
from acpd.tools.fs.reading import read_lines
from acpd.tools.fs.resolve import choose_resolver
from acpd.tools.fs.sandbox import Sandbox
from acpd.tools.rules import Rule

from .conftest import SECRET, ResolverKind, Tools, make_ctx
from .test_fs_race import arena, hammer  # noqa: F401 (arena: a fixture)

HOOK = "#!/bin/sh\ntouch PWNED\n"


def rules_for(ws: Path, *, deny_read: tuple[str, ...] = (), deny_write: tuple[str, ...] = (),
              write_roots: tuple[str, ...] = (), outside_read: str = "ask",
              outside_write: str = "deny") -> PathRules:
    home = os.path.expanduser("~")
    return PathRules(
        (os.path.realpath(ws),), compile_patterns(deny_read, home),
        compile_patterns(deny_write, home), compile_patterns((), home),
        compile_patterns(write_roots, home), outside_read,  # type: ignore[arg-type]
        outside_write,  # type: ignore[arg-type]
    )


def guarded(ws: Path, resolver: ResolverKind, guard: PathGuard) -> Tools:
    return Tools(make_ctx(ws), FileToolsConfig(resolver=resolver, guard=guard))


@pytest.fixture
def gitws(ws: Path) -> Path:
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "hookdir").mkdir()
    (ws / "hookdir" / "pre-commit").write_text(HOOK)
    (ws / "hooksrc").write_text(HOOK)
    (ws / "gitlink").symlink_to(".git")
    return ws


MINIMAL = (".git/hooks/**", ".git/config")
"""Only the files: a directory landing at `.git/hooks` is caught by its entries."""


@pytest.mark.parametrize(("tool", "args"), [
    ("move_path", {"source": "hookdir", "destination": ".git/hooks/sub"}),
    ("move_path", {"source": "hookdir", "destination": "gitlink/hooks/sub"}),
    ("copy_path", {"source": "hookdir", "destination": ".git/hooks/sub"}),
    ("copy_path", {"source": "hooksrc", "destination": "gitlink//config2/../hooks/x"}),
    ("write", {"path": "gitlink/hooks/./pre-push", "content": HOOK}),
    ("create_directory", {"path": ".git/hooks/new/deeper"}),
    ("delete_path", {"path": ".git"}),
    ("delete_path", {"path": "gitlink/config"}),
    ("move_path", {"source": ".git", "destination": "elsewhere"}),
    ("move_path", {"source": "gitlink/config", "destination": "c"}),
])
def test_every_entry_a_tree_operation_touches_is_judged(
    gitws: Path, resolver: ResolverKind, tool: str, args: dict[str, str]
) -> None:
    (gitws / ".git" / "hooks").rmdir()  # a move may create it whole
    before = sorted(str(p.relative_to(gitws)) for p in gitws.rglob("*"))
    tools = guarded(gitws, resolver, PathGuard(rules_for(gitws, deny_write=MINIMAL)))
    err = tools.blocked(tool, **args)
    assert "deny_write" in err.message
    after = sorted(str(p.relative_to(gitws)) for p in gitws.rglob("*"))
    assert after == before


def test_the_same_operations_run_where_nothing_is_denied(
    gitws: Path, resolver: ResolverKind
) -> None:
    tools = guarded(gitws, resolver, PathGuard(rules_for(gitws, deny_write=MINIMAL)))
    tools("move_path", source="hookdir", destination="moved/sub")
    tools("copy_path", source="moved", destination="copied")
    tools("create_directory", path=".git/other/new")
    tools("delete_path", path="copied")
    assert (gitws / "moved" / "sub" / "pre-commit").read_text() == HOOK


def test_outside_paths_follow_outside_write_and_write_roots(
    ws: Path, outside: Path, resolver: ResolverKind
) -> None:
    (ws / "abs_link").symlink_to(outside / "secret.txt")
    rules = rules_for(ws, write_roots=(f"{outside}/sub/**",), outside_read="deny")
    tools = guarded(ws, resolver, PathGuard(rules))
    # outside_write = deny, whatever the spelling
    for path in (str(outside / "new.txt"), "../outside/new.txt", "abs_link"):
        assert "outside the workspace" in tools.blocked("write", path=path, content="x").message
    assert (outside / "secret.txt").read_text() == SECRET
    assert not (outside / "new.txt").exists()
    # a write root outside the workspace is allowed, reads there are still denied
    tools("write", path=str(outside / "sub" / "new.txt"), content="fine")
    assert (outside / "sub" / "new.txt").read_text() == "fine"
    tools.blocked("read", path=str(outside / "sub" / "new.txt"))


def test_an_outside_read_needs_the_calls_approval(
    ws: Path, outside: Path, resolver: ResolverKind
) -> None:
    (ws / "out").symlink_to(outside)
    rules = rules_for(ws, deny_read=("**/sub/**",))
    refused = guarded(ws, resolver, PathGuard(rules))
    for path in ("out/secret.txt", str(outside / "secret.txt"), "../outside/secret.txt"):
        assert "needs approval" in refused.blocked("read", path=path).message
    approved = guarded(ws, resolver, PathGuard(rules, approved=True))
    assert approved("read", path="out/secret.txt").text == SECRET
    assert "deny_read" in approved.blocked("read", path="out/sub/secret.txt").message
    listing = approved("list_directory", path="out").text
    assert "secret.txt" in listing and "sub" in listing
    found = approved("grep", pattern="TOP", path=str(outside)).text
    assert found.count("TOP SECRET") == 1  # sub/secret.txt is skipped


def test_permission_rules_meet_the_real_path_at_run_time(
    ws: Path, resolver: ResolverKind
) -> None:
    (ws / "secret").mkdir()
    (ws / "secret" / "x.txt").write_text(SECRET)
    (ws / "s2").symlink_to("secret")
    rule = (Rule.of("secret/**", "deny"),)
    tools = guarded(ws, resolver, PathGuard(None, rule, str(ws), label="[rules]"))
    for path in ("s2/x.txt", "./s2/../secret/x.txt", str(ws / "s2" / "x.txt")):
        assert "secret/**" in tools.blocked("read", path=path).message
    assert "TOP SECRET" not in tools("grep", pattern="TOP", path=".").text
    asks = guarded(ws, resolver, PathGuard(None, (Rule.of("secret/**", "ask"),), str(ws)))
    assert "asks first" in asks.blocked("read", path="s2/x.txt").message
    approved = guarded(ws, resolver, PathGuard(None, (Rule.of("secret/**", "ask"),), str(ws),
                                               approved=True))
    assert approved("read", path="s2/x.txt").text == SECRET


@pytest.mark.slow
@pytest.mark.parametrize("arena", ["relative", "absolute"], indirect=True)
def test_a_swapped_directory_never_leaks_under_a_path_policy(
    arena: Path, resolver: ResolverKind,  # noqa: F811 (the fixture imported above)
) -> None:
    """The path policy lets outside paths be opened (to judge them): a directory swapped for a
    link to the outside is then met on the fd's real path and refused (not approved)."""
    ws = arena
    guard = PathGuard(rules_for(ws))
    with Sandbox([str(ws)], str(ws), resolver=choose_resolver(resolver), guard=guard) as sb:
        def read() -> str:
            opened = sb.open_file("d/f.txt")
            return read_lines(opened.fd, None, None, "d/f.txt")

        seen = hammer(ws, read)
    print(f"\nrace[{resolver}]: {dict(seen)}")
    assert seen["OUTSIDE"] == 0 and seen["other"] == 0
    assert seen["inside"] > 0 and seen["refused:PolicyBlocked"] > 0

