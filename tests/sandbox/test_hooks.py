"""Red-team 11, F1 and F2 (sandbox side): what git runs later, outside the sandbox, cannot be
changed from inside it. Real repositories (`git init`, `git config`), real bubblewrap through
`acpd sandbox run` (and the local runner's sandbox parent), real files:

- F1: a hooks directory that `core.hooksPath` puts in the work tree (relative, absolute, set in
  the user's config or through an included file, missing entirely, or the work tree's top
  itself) is read-only; a hook name that is missing cannot be created;
- F2: a hook that is a symlink (or a hard link) to a workspace file: that file is read-only;
- benign work (other files, `git commit` in the sandbox, running the hook) still works;
- what cannot be kept (a replaceable link on the way, a hard link outside the workspace, a
  config that cannot be parsed) makes the profile incomplete, and says why.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import anyio
import pytest

from acpd.sandbox.build import build_confinement
from acpd.sandbox.rules import PathRules
from acpd.sandbox.status import sandbox_status
from tests.sandbox.conftest import sandbox_env, sandbox_run

pytestmark = pytest.mark.skipif(
    not (sandbox_status().available and sandbox_status().kind == "bwrap"),
    reason="needs bubblewrap")

HOOK = "#!/bin/sh\necho HOOK-RAN\n"
EVIL = "#!/bin/sh\ntouch /tmp/pwn\n"


def rewrites(path: str) -> list[str]:
    """Every way to change an existing hook file (each its own command)."""
    return [
        f"echo 'touch /tmp/pwn' >> {path}",
        f"printf '{EVIL!s}' > {path}".replace("\n", "\\n"),
        f"cp evil.sh {path}",
        f"mv evil.sh {path}",
        f"rm -f {path} && cp evil.sh {path}",
        f"sed -i '1a touch /tmp/pwn' {path}",
        f"truncate -s 0 {path}",
        f"chmod 000 {path}",
        f"ln -sf evil.sh {path}",
        f"mv {path} {path}.old && cp evil.sh {path}",
        f"python3 -c \"open('{path}', 'a').write('touch /tmp/pwn')\"",
    ]


def creations(path: str) -> list[str]:
    """Every way to make a hook file where there is none."""
    return [
        f"echo 'touch /tmp/pwn' > {path} && chmod +x {path}",
        f"cp evil.sh {path}",
        f"mv evil.sh {path}",
        f"ln -s evil.sh {path}",
        f"install -m 755 evil.sh {path}",
        f"mkdir {path}",
        f"touch {path}",
    ]


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def repo(tmp_path: Path, home: Path) -> Path:
    """A repository with one commit, a file to edit and `evil.sh` to plant."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main", ".")
    git(ws, "config", "user.email", "a@b")
    git(ws, "config", "user.name", "a")
    (ws / "a.txt").write_text("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-qm", "init")
    (ws / "evil.sh").write_text(EVIL)
    (ws / "evil.sh").chmod(0o755)
    return Path(os.path.realpath(ws))


def hook_file(path: Path, text: str = HOOK) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def state(*paths: Path) -> dict[str, object]:
    """What git would see at each path: kind, link target, mode, content; a directory's
    entries (recursively)."""
    out: dict[str, object] = {}
    for path in paths:
        try:
            st = path.lstat()
        except FileNotFoundError:
            out[str(path)] = None
            continue
        if stat.S_ISLNK(st.st_mode):
            out[str(path)] = ("link", os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            out[str(path)] = ("dir", sorted(os.listdir(path)))
            out.update(state(*sorted(path.iterdir())))
        else:
            out[str(path)] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
    return out


def run(ws: Path, home: Path, tmp_path: Path, command: str, **env: str
        ) -> subprocess.CompletedProcess[str]:
    return sandbox_run(ws, home, tmp_path, command, env=sandbox_env(home, tmp_path, **env))


def refused_all(ws: Path, home: Path, tmp_path: Path, commands: list[str], *watched: Path
                ) -> None:
    """Every command runs (one sandbox, each in a subshell with a fresh evil.sh); none
    changes what `watched` hold (none puts back what another changed)."""
    before = state(*watched)
    (ws / "evil.src").write_text(EVIL)
    script = "".join(f"(cp evil.src evil.sh; chmod 755 evil.sh; {c}) 2>/dev/null; "
                     for c in commands)
    done = run(ws, home, tmp_path, script + "echo RAN")
    assert "RAN" in done.stdout, done.stderr
    assert state(*watched) == before


def commit_works(ws: Path, home: Path, tmp_path: Path, hook_runs: bool = True) -> None:
    """Benign work in the same sandbox: other files are written, git commits (running the
    pre-commit hook inside the sandbox, where it is allowed to run)."""
    done = run(ws, home, tmp_path, "set -e; echo b >> a.txt; mkdir -p src; echo x > src/n.txt; "
               "mv src/n.txt src/m.txt; git add a.txt src/m.txt; git commit -qm b; echo DONE")
    assert done.returncode == 0 and "DONE" in done.stdout, done.stderr
    assert ("HOOK-RAN" in done.stdout + done.stderr) == hook_runs
    assert git(ws, "log", "-1", "--format=%s").strip() == "b"
    assert (ws / "src" / "m.txt").read_text() == "x\n"


# F1: core.hooksPath directories


@pytest.mark.slow
@pytest.mark.parametrize("where", ["relative", "absolute", "home", "include", "includeif",
                                   "nested"])
def test_a_hooks_path_in_the_work_tree_is_read_only(repo: Path, home: Path, tmp_path: Path,
                                                     where: str) -> None:
    rel = "tools/git/hooks" if where == "nested" else ".husky"
    hooks = repo / rel
    hook_file(hooks / "pre-commit")
    hook_file(hooks / "_" / "husky.sh", "# sourced by every hook\n")
    if where in ("relative", "nested"):
        git(repo, "config", "core.hooksPath", rel)
    elif where == "absolute":
        git(repo, "config", "core.hooksPath", str(hooks))
    elif where == "home":
        (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {rel}\n")
    else:
        shared = tmp_path / "shared.gitconfig"  # outside the workspace: read-only anyway
        shared.write_text(f"[core]\n\thooksPath = {rel}\n")
        header = "[include]" if where == "include" else '[includeIf "gitdir:/"]'
        with open(repo / ".git" / "config", "a") as handle:
            handle.write(f"{header}\n\tpath = {shared}\n")
    top = rel.split("/")[0]
    commands = [*rewrites(f"{rel}/pre-commit"), *creations(f"{rel}/post-checkout"),
                f"echo 'touch /tmp/pwn' >> {rel}/_/husky.sh", f"rm -rf {rel}", f"mv {rel} old",
                f"mv {rel}/pre-commit {rel}/pre-push",
                # A mount moves with a renamed parent: the parents are pinned.
                f"mv {top} t2 && mkdir -p {rel} && cp evil.sh {rel}/pre-commit",
                f"mv {os.path.dirname(rel) or top} t3 && mkdir -p {rel} "
                f"&& cp evil.sh {rel}/pre-commit"]
    refused_all(repo, home, tmp_path, commands, repo / top)
    # HOME and the shared config are under /tmp here, which the sandbox replaces: git in it
    # does not see them (the user's git does).
    commit_works(repo, home, tmp_path, hook_runs=where in ("relative", "absolute", "nested"))


@pytest.mark.slow
def test_an_included_config_in_the_workspace_is_read_only_too(repo: Path, home: Path,
                                                               tmp_path: Path) -> None:
    """Else a command would name a new hooks directory there (or any other code)."""
    (repo / ".gitconfig.shared").write_text("[core]\n\thooksPath = .githooks\n")
    hook_file(repo / ".githooks" / "pre-commit")
    with open(repo / ".git" / "config", "a") as handle:
        handle.write("[include]\n\tpath = ../.gitconfig.shared\n"
                     "[include]\n\tpath = ../.gitconfig.local\n")
    commands = [
        "printf '[core]\\n\\thooksPath = evil\\n' > .gitconfig.shared",
        "echo '[core] fsmonitor = touch /tmp/pwn' >> .gitconfig.shared",
        "printf '[core]\\n\\thooksPath = evil\\n' > .gitconfig.local",
        "cp evil.sh .gitconfig.local", "rm .gitconfig.shared", *rewrites(".githooks/pre-commit"),
    ]
    # The missing include is made uncreatable: an empty read-only file takes its place.
    refused_all(repo, home, tmp_path, commands[:1], repo / ".gitconfig.shared")
    refused_all(repo, home, tmp_path, commands, repo / ".gitconfig.shared",
                repo / ".gitconfig.local", repo / ".githooks")
    assert (repo / ".gitconfig.local").read_bytes() == b""
    commit_works(repo, home, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("path", [".githooks", "tools/git/hooks"])
def test_a_missing_hooks_directory_cannot_be_made(repo: Path, home: Path, tmp_path: Path,
                                                  path: str) -> None:
    git(repo, "config", "core.hooksPath", path)
    (repo / "other").mkdir()
    hook_file(repo / "other" / "pre-commit", EVIL)
    commands = [f"mkdir -p {path} && cp evil.sh {path}/pre-commit",
                f"mkdir -p {os.path.dirname(path) or '.'} && mv other {path}",
                f"rm -rf {path}; ln -s ../other {path}",
                f"cp evil.sh {path}/pre-commit", f"rmdir {path} && mkdir {path}"]
    refused_all(repo, home, tmp_path, commands)
    # Bubblewrap made the mount point, at the first directory on the way that was missing
    # (directories it made below could be renamed): empty, nothing in it.
    first = repo / path.split("/")[0]
    assert first.is_dir() and not first.is_symlink() and os.listdir(first) == []
    # (What the command moved into it went to the empty tmpfs over it, memory that ended
    # with the sandbox: `mv other .githooks` as root here, for which mode 0555 is no bar.)
    commit_works(repo, home, tmp_path, hook_runs=False)


@pytest.mark.slow
def test_hooks_at_the_work_tree_top_only_the_hook_names_are_kept(repo: Path, home: Path,
                                                                  tmp_path: Path) -> None:
    git(repo, "config", "core.hooksPath", ".")
    hook_file(repo / "pre-commit")
    refused_all(repo, home, tmp_path, [*rewrites("pre-commit"), *creations("post-checkout"),
                                       *creations("pre-push")], repo / "pre-commit")
    for name in ("post-checkout", "pre-push"):
        # Absent, or the stub bubblewrap left: empty and not executable (git skips it).
        path = repo / name
        assert not path.exists() or (path.is_file() and not path.is_symlink()
                                     and path.read_bytes() == b""
                                     and not os.access(path, os.X_OK)), name
    # Everything else at the top is writable: create, edit, rename, remove.
    done = run(repo, home, tmp_path, "set -e; echo n > notes.txt; mv notes.txt n2.txt; "
               "echo c >> a.txt; rm n2.txt; mkdir d; rmdir d; echo DONE")
    assert done.returncode == 0 and "DONE" in done.stdout, done.stderr
    assert (repo / "a.txt").read_text() == "a\nc\n"


# F2: hooks that are links to workspace files


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["git-hooks", "hooks-path", "home-hooks"])
def test_a_symlinked_hook_keeps_its_target_read_only(repo: Path, home: Path, tmp_path: Path,
                                                     layout: str) -> None:
    target = hook_file(repo / "scripts" / "pre-commit")
    (repo / "scripts" / "lint.sh").write_text("echo lint\n")
    if layout == "git-hooks":
        (repo / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/pre-commit")
    elif layout == "hooks-path":
        git(repo, "config", "core.hooksPath", ".husky")
        (repo / ".husky").mkdir()
        (repo / ".husky" / "pre-commit").symlink_to("../scripts/pre-commit")
    else:  # the user's own hooks directory, read-only anyway, links into the workspace
        (home / "hooks").mkdir()
        (home / "hooks" / "pre-commit").symlink_to(target)
        (home / ".gitconfig").write_text(f"[core]\n\thooksPath = {home / 'hooks'}\n")
    refused_all(repo, home, tmp_path, [
        *rewrites("scripts/pre-commit"),
        "mv scripts s2 && mkdir scripts && cp evil.sh scripts/pre-commit"], target)
    done = run(repo, home, tmp_path, "echo x >> scripts/lint.sh && echo DONE")
    assert "DONE" in done.stdout, done.stderr
    commit_works(repo, home, tmp_path, hook_runs=layout != "home-hooks")  # HOME under /tmp


@pytest.mark.slow
def test_a_hard_linked_hook_keeps_its_other_names_read_only(repo: Path, home: Path,
                                                            tmp_path: Path) -> None:
    target = hook_file(repo / "scripts" / "pre-commit")
    os.link(target, repo / ".git" / "hooks" / "pre-commit")
    refused_all(repo, home, tmp_path, rewrites("scripts/pre-commit"), target,
                repo / ".git" / "hooks" / "pre-commit")
    commit_works(repo, home, tmp_path)


@pytest.mark.slow
def test_a_missing_worktree_config_that_git_would_read_cannot_be_made(
        repo: Path, home: Path, tmp_path: Path) -> None:
    git(repo, "config", "extensions.worktreeConfig", "true")
    worktree = repo / ".git" / "config.worktree"
    refused_all(repo, home, tmp_path, [
        "printf '[core]\\n\\thooksPath = evil\\n' > .git/config.worktree",
        "git config --worktree core.hooksPath evil", "cp evil.sh .git/config.worktree"])
    assert worktree.read_bytes() == b""  # the stub
    assert "evil" not in git(repo, "config", "--list")
    commit_works(repo, home, tmp_path, hook_runs=False)


# What cannot be kept: said, not guessed


def test_a_replaceable_link_on_the_way_makes_the_profile_incomplete(repo: Path,
                                                                     home: Path) -> None:
    (repo / "githooks").mkdir()
    hook_file(repo / "githooks" / "pre-commit")
    os.rename(repo / ".git" / "hooks", repo / "old-hooks")
    (repo / ".git" / "hooks").symlink_to("../githooks")
    conf = build_confinement((str(repo),), PathRules(), cwd=str(repo), home=str(home))
    assert not conf.complete
    assert any(".git/hooks is a symlink" in n for n in conf.notes), conf.notes
    assert str(repo / "githooks") in conf.read_only  # what it points at is kept all the same


def test_a_hard_link_outside_the_workspace_makes_the_profile_incomplete(
        repo: Path, home: Path, tmp_path: Path) -> None:
    hook = hook_file(repo / ".git" / "hooks" / "pre-commit")
    os.link(hook, tmp_path / "elsewhere")
    conf = build_confinement((str(repo),), PathRules(), cwd=str(repo), home=str(home))
    assert not conf.complete
    assert any("1 more hard link(s)" in n for n in conf.notes), conf.notes


def test_a_config_that_cannot_be_parsed_makes_the_profile_incomplete(repo: Path,
                                                                      home: Path) -> None:
    (home / ".gitconfig").write_text("[core\n\thooksPath = .husky\n[include]\n")
    conf = build_confinement((str(repo),), PathRules(), cwd=str(repo), home=str(home))
    assert not conf.complete
    assert any("cannot tell where the hooks" in n for n in conf.notes), conf.notes


def test_a_plain_repository_costs_no_extra_binds(repo: Path, home: Path) -> None:
    conf = build_confinement((str(repo),), PathRules(), cwd=str(repo), home=str(home))
    assert conf.complete and conf.notes == ()
    assert conf.stub_files == ()
    assert sorted(conf.read_only) == sorted(
        str(repo / ".git" / n) for n in ("hooks", "config", "info"))


def test_a_missing_hooks_dir_in_a_read_only_git_directory_is_not_made(
        repo: Path, home: Path, tmp_path: Path) -> None:
    """Bubblewrap cannot make a mount point there (every command failed); nothing can be
    created there anyway."""
    for entry in (repo / ".git" / "hooks").iterdir():
        entry.unlink()
    (repo / ".git" / "hooks").rmdir()
    done = run(repo, home, tmp_path, "mkdir .git/hooks; echo DONE", ACPD_SANDBOX_GIT="read-only")
    assert done.returncode == 0 and "DONE" in done.stdout, done.stderr
    assert not (repo / ".git" / "hooks").exists()


# The local runner's sandbox parent applies the same profile (stubs, empty directories)


@pytest.mark.slow
def test_the_sandbox_parent_keeps_hooks_the_same_way(repo: Path, home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from acpd.daemon.local import LocalCommandRunner
    from acpd.tools.capabilities import CommandRequest, CommandResult

    monkeypatch.setenv("HOME", str(home))
    git(repo, "config", "core.hooksPath", ".")
    hook_file(repo / "pre-commit")
    (repo / "sub").mkdir()
    git(repo / "sub", "init", "-q", ".")
    git(repo / "sub", "config", "core.hooksPath", "missing/hooks")
    who = "tr '\\0' ' ' </proc/1/cmdline; echo; "

    async def one(command: str) -> CommandResult:
        async def ignore(*_: object) -> None:
            return None
        request = CommandRequest(who + command, str(repo), 30, 1 << 20, roots=(str(repo),),
                                 sandbox=PathRules())
        return await LocalCommandRunner().run(request, ignore, ignore)

    async def main() -> None:
        with anyio.fail_after(60):
            while "acpd.sandbox.server" not in (await one("true")).output:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        result = await one("echo x >> pre-commit; cp evil.sh post-commit; "
                           "cp evil.sh sub/missing/hooks/pre-commit; echo DONE")
        assert "acpd.sandbox.server" in result.output and "DONE" in result.output

    anyio.run(main)
    assert (repo / "pre-commit").read_text() == HOOK
    assert (repo / "post-commit").read_bytes() == b""  # the stub
    # Made by the mounts (the first missing directory on the way, then, once that exists
    # and is pinned, the next): empty directories, no file.
    assert [f for _, _, files in os.walk(repo / "sub" / "missing") for f in files] == []


def test_a_linked_worktree_takes_the_hooks_path_of_its_common_directory(
        tmp_path: Path, home: Path) -> None:
    """git reads a linked worktree's config (and hooks) from the common directory."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main", ".")
    git(main, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty",
        "-m", "i")
    git(main, "config", "core.hooksPath", ".husky")
    ws = tmp_path / "wt"
    git(main, "worktree", "add", "-q", str(ws), "-b", "side")
    hook_file(ws / ".husky" / "pre-commit")
    conf = build_confinement((str(ws),), PathRules(), cwd=str(ws), home=str(home))
    assert str(Path(os.path.realpath(ws)) / ".husky") in conf.read_only
    assert conf.complete, conf.notes


def test_stubs_reach_every_backend(tmp_path: Path) -> None:
    from acpd.sandbox.bwrap import tail_args
    from acpd.sandbox.macos import seatbelt_profile
    from acpd.sandbox.parent import request_of
    from acpd.sandbox.profile import Confinement

    conf = Confinement(cwd="/w", roots=("/w",), stub_files=("/w/pre-push",),
                       pinned=("/w/tools",))
    assert Confinement.from_json(conf.to_json()) == conf
    argv = tail_args(conf)
    i = argv.index("/w/pre-push")
    assert argv[i - 2:i] == ["--ro-bind", "/dev/null"]
    assert '(deny file-write* (literal "/w/pre-push"))' in seatbelt_profile(conf, "/t")
    assert b'"stub_files": ["/w/pre-push"]' in request_of(conf, ["true"], {})


def test_the_hooks_binds_count_toward_the_bound(repo: Path, home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-only paths, stubs and pins: past READ_ONLY_LIMIT bubblewrap would refuse every
    command (a workspace can make as many repositories and hooks paths as it likes)."""
    from acpd.sandbox import build

    git(repo, "config", "core.hooksPath", "a/b/c/hooks")
    hook_file(repo / "a" / "b" / "c" / "hooks" / "pre-commit")
    whole = build_confinement((str(repo),), PathRules(), cwd=str(repo), home=str(home))
    assert whole.complete
    assert {str(repo / p) for p in ("a", "a/b", "a/b/c")} <= set(whole.pinned)
    monkeypatch.setattr(build, "READ_ONLY_LIMIT", 4)
    conf = build_confinement((str(repo),), PathRules(), cwd=str(repo), home=str(home))
    assert not conf.complete
    extra_pins = set(conf.pinned) - {str(repo / ".git")}
    assert len(conf.read_only) + len(conf.stub_files) + len(extra_pins) <= 4
    assert str(repo / "a" / "b" / "c" / "hooks") in conf.read_only  # hooks first
