"""The confinement builder on real directories: what is masked, made read-only, writable."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from acpd.sandbox.build import build_confinement
from acpd.sandbox.macos import seatbelt_profile
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules

DEFAULT = PathRules(
    deny_read=("**/.env", "**/.env.*", "**/secrets/**", "**/*.pem", "~/.ssh/**",
               "~/.netrc", "/proc/*/environ"),
    deny_write=(".git/hooks/**", ".git/config", ".git/info/**", ".acpd/**"),
    write_roots=("/tmp/**",),
)


def git_dir(path: Path) -> Path:
    for name in ("hooks", "info", "objects"):
        (path / name).mkdir(parents=True)
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    (path / "config").write_text("[core]\n")
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("KEY")
    (home / ".netrc").write_text("machine x password y")
    return home


def test_deny_read_matches_are_masked_at_any_depth_and_any_case(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / ".env").write_text("S=1")
    (ws / "a" / "b" / ".ENV.local").write_text("S=2")
    (ws / "a" / "cert.PEM").write_text("P")
    (ws / "a" / "secrets" / "deep").mkdir(parents=True)
    (ws / "a" / "secrets" / "deep" / "x.txt").write_text("x")
    (ws / "a" / "fine.txt").write_text("ok")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert set(conf.mask_files) >= {
        str(ws / ".env"), str(ws / "a" / "b" / ".ENV.local"), str(ws / "a" / "cert.PEM"),
        str(home / ".netrc"),
    }
    assert str(ws / "a" / "fine.txt") not in conf.mask_files
    # A directory every path under which is denied is masked whole (and not walked).
    assert str(ws / "a" / "secrets") in conf.mask_dirs
    assert str(home / ".ssh") in conf.mask_dirs
    assert conf.complete and conf.walked > 0


def test_a_symlink_named_like_a_secret_masks_its_target(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    target = tmp_path / "elsewhere.txt"
    target.write_text("secret")
    os.symlink(target, ws / ".env")
    os.symlink(tmp_path / "missing", ws / ".env.dangling")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert str(target) in conf.mask_files
    assert not any("missing" in p for p in conf.mask_files)


def test_git_internals_of_every_repository_found_are_read_only(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    git_dir(ws / ".git")
    git_dir(ws / "vendor" / "lib" / ".git")
    git_dir(ws / ".git" / "modules" / "sub")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    for repo in (ws / ".git", ws / "vendor" / "lib" / ".git", ws / ".git" / "modules" / "sub"):
        for name in ("hooks", "config", "info"):
            assert str(repo / name) in conf.read_only, (repo, name)
    assert str(ws / ".git" / "objects") not in conf.read_only


def test_write_roots_are_bound_only_when_they_are_real_directories(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir()
    rules = PathRules(write_roots=("/tmp/**", f"{cache}/**", f"{tmp_path}/nope/**",
                                   f"{tmp_path}/c*/**", "build/**"))
    conf = build_confinement((str(ws),), rules, cwd=str(ws), home=str(home))
    assert conf.write_paths == (str(cache),)
    assert conf.private_tmp
    assert any("is a glob" in n for n in conf.notes)


def test_the_walk_bound_makes_the_profile_incomplete_and_says_so(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(50):
        (ws / f"f{i}.txt").write_text("x")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home), walk_limit=10)
    assert not conf.complete
    assert any("stopped after 10 entries" in n for n in conf.notes)


def test_each_build_sees_the_disk_as_it_is_now(tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    (ws / ".env").write_text("new")
    second = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert str(ws / ".env") not in first.mask_files
    assert str(ws / ".env") in second.mask_files


def test_sockets_dirs_are_hidden_and_the_resolver_comes_back_with_network(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    off = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert "/run" in off.mask_dirs and not off.network
    on = build_confinement((str(ws),), PathRules(allow_network=True), cwd=str(ws),
                           home=str(home))
    assert on.network
    resolver = os.path.dirname(os.path.realpath("/etc/resolv.conf"))
    assert on.reexpose == ((resolver,) if resolver.startswith("/run/") else ())


def test_the_profile_round_trips_and_bad_profiles_are_refused(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("x")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert Confinement.from_json(conf.to_json()) == conf
    for bad in ("", "[]", '{"version": 2}', '{"version": 1, "cwd": "rel", "roots": ["/"]}',
                '{"version": 1, "cwd": "/", "roots": []}',
                '{"version": 1, "cwd": "/", "roots": ["/"], "mask_files": ["x"]}',
                '{"version": 1, "cwd": "/", "roots": ["/"], "network": "yes"}'):
        with pytest.raises(ValueError):
            Confinement.from_json(bad)


def test_policy_objects_give_their_path_rules() -> None:
    from acpd.policy.reload import PolicyHandle

    rules = PathRules.of(PolicyHandle(None).current)
    assert "**/.env" in rules.deny_read and ".git/hooks/**" in rules.deny_write
    assert rules.allow_network is False


def test_the_seatbelt_profile_text(tmp_path: Path) -> None:
    """macOS only in production: this checks the generated text, nothing runs it here."""
    conf = Confinement(cwd="/w", roots=("/w",), write_paths=("/c",), read_only=("/w/.git/hooks",),
                       mask_files=('/w/.e"nv',), mask_dirs=("/w/secrets",))
    text = seatbelt_profile(conf, "/t")
    assert text.startswith("(version 1)\n(deny default)\n")
    assert '(allow file-write* (subpath "/w") (subpath "/c") (subpath "/t"))' in text
    assert '(deny file-write* (literal "/w/.git/hooks") (subpath "/w/.git/hooks"))' in text
    assert '(deny file-read* file-write* (literal "/w/.e\\"nv") (subpath "/w/secrets"))' in text
    assert text.rstrip().endswith("(deny network*)")
    assert "(allow network*)" in seatbelt_profile(
        Confinement(cwd="/w", roots=("/w",), network=True), "/t")


def test_git_directories_are_pinned_and_missing_hooks_get_an_empty_read_only_dir(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    repo = git_dir(ws / ".git")
    (repo / "hooks").rmdir()
    (ws / "wt").mkdir()
    (ws / "wt" / ".git").write_text("gitdir: /elsewhere\n")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert conf.pinned == (str(repo),)
    assert str(repo / "hooks") in conf.mask_dirs
    assert str(ws / "wt" / ".git") in conf.read_only


def test_a_reused_listing_never_hides_a_new_file(tmp_path: Path, home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Listings are reused only while a directory's inode and ctime are unchanged; creating
    a file changes its directory's ctime, and setting the mtime back does not undo that."""
    from acpd.sandbox import walk

    monkeypatch.setattr(walk, "RACY_NS", 0)  # reuse at once (the test cannot wait ticks out)
    ws = tmp_path / "ws"
    deep = ws / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "x.txt").write_text("x")
    build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert (str(deep), "a/b/c") in walk._listings
    before = os.stat(deep)
    (deep / ".env").write_text("new")
    os.utime(deep, ns=(before.st_atime_ns, before.st_mtime_ns))  # hide the change: mtime back
    assert str(deep / ".env") in build_confinement(
        (str(ws),), DEFAULT, cwd=str(ws), home=str(home)).mask_files
    os.rename(deep / ".env", deep / "y.txt")
    os.rename(ws / "a" / "b", ws / "a" / "b2")  # a moved tree is read under its new path
    (ws / "a" / "b2" / "c" / ".env.prod").write_text("s")
    conf = build_confinement((str(ws),), DEFAULT, cwd=str(ws), home=str(home))
    assert conf.mask_files[:1] == (str(ws / "a" / "b2" / "c" / ".env.prod"),)


def test_seatbelt_commands_use_the_workspace_temp_directory(tmp_path: Path) -> None:
    """A temp directory per command was made and never removed (one per bash call on
    macOS); the daemon's private one for the workspace serves instead."""
    from acpd.sandbox.launch import confined_argv
    from acpd.sandbox.status import SandboxStatus

    private = tmp_path / "private-tmp"
    private.mkdir()
    conf = Confinement(cwd="/w", roots=("/w",), tmp_dir=str(private))
    status = SandboxStatus(True, "sandbox-exec", "test", "/usr/bin/sandbox-exec")
    before = set(os.listdir(tempfile.gettempdir()))
    argv = confined_argv(conf, ["true"], status)
    assert f"TMPDIR={private}" in argv
    assert not {n for n in set(os.listdir(tempfile.gettempdir())) - before
                if n.startswith("acpd-sbx-")}
