"""Red-team 13: the round-12 classes by other spellings. A directory above a protected file
(a `core.hooksPath` directory, a linked hook's target, a config include) replaced by a rename,
a link or a copied tree; `cp -T`; a copy whose source the same line makes or changes; linked
worktrees' shared config and hooks; a link far up a hooks path; hooks a checkout on the same
line brings. The attack tests fail on 40c4139; the others check that ordinary lines still
run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy
from acpd.tools.fs.pathguard import prejudge
from tests.policy import test_redteam6_more as rt6
from tests.policy import test_redteam12 as rt12
from tests.policy.test_redteam6_more import ENV, bash, git, judge

home = rt6.home
ws = rt6.ws
repo_dirs = rt12.repo_dirs
verdicts = rt12.verdicts


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _hook_on_a_branch(ws: Path, home: Path, directory: str) -> None:
    """An executable DIRECTORY/pre-commit committed on the branch `withhook` only; main is
    checked out again."""
    git(ws, home, "switch", "-q", "-c", "withhook")
    _write(ws / directory / "pre-commit", "#!/bin/sh\n")
    (ws / directory / "pre-commit").chmod(0o755)
    git(ws, home, "add", directory)
    git(ws, home, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "hook")
    git(ws, home, "switch", "-q", "main")


@pytest.fixture
def guarded(ws: Path, home: Path) -> Path:
    """Three protected files with ordinary names: a linked hook's target
    (scripts/pre-commit), a core.hooksPath directory (tools/git-hooks) and a config include
    (conf/git.inc); evil/ holds replacements for each."""
    _write(ws / "scripts" / "pre-commit", "#!/bin/sh\n")
    (ws / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/pre-commit")
    _write(ws / "tools" / "git-hooks" / "post-commit", "#!/bin/sh\n")
    git(ws, home, "config", "core.hooksPath", "tools/git-hooks")
    _write(ws / "conf" / "git.inc", "[user]\n\tname = x\n")
    git(ws, home, "config", "include.path", "../conf/git.inc")
    for rel in ("pre-commit", "scripts/pre-commit", "tools/git-hooks/post-commit",
                "conf/git.inc", "ev/scripts/pre-commit"):
        _write(ws / "evil" / rel, "#!/bin/sh\n")
    return ws


@pytest.mark.parametrize("cmd", [
    # a rename or a link made in place of a directory above a protected file
    "mv scripts s_old && mv evil scripts", "mv tools t_old && mv evil/tools tools",
    "mv conf c_old && mv evil/conf conf", "mv conf c_old; cp -r evil/conf conf",
    "ln -sfn evil/conf conf", "ln -sT evil/conf conf", "mv tools/git-hooks x",
    # a tree that brings a protected file below its top
    "cp -r evil/. .", "cp -a evil/. .", "cp -r evil/ev/. .",
    # -T: DEST itself, not DEST/its name
    "cp -rT evil scripts", "cp -rT evil/conf conf", "cp -r --no-target-directory evil/tools tools",
    "cp -aT evil/tools/ tools/",
])
def test_a_directory_above_a_protected_file_is_protected(default: CompiledPolicy,
                                                         guarded: Path, home: Path,
                                                         cmd: str) -> None:
    assert verdicts(default, guarded, home, cmd) == {"deny"}, cmd


@pytest.mark.parametrize("cmd", [
    # the link is made where the line removed the directory: not known before it runs
    "mv scripts s_old; ln -s evil scripts", "mv conf c_old && ln -s evil/conf conf",
])
def test_a_link_where_the_line_removed_a_directory_asks(default: CompiledPolicy,
                                                       guarded: Path, home: Path,
                                                       cmd: str) -> None:
    assert "allow" not in verdicts(default, guarded, home, cmd), cmd
    # removing one is no swap: git then runs no hook, or the one a later write (judged) makes
    assert "deny" not in verdicts(default, guarded, home, "rm -rf tools")


def test_the_class_is_real_and_ordinary_copies_still_run(default: CompiledPolicy,
                                                         guarded: Path, home: Path,
                                                         tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    _write(guarded / "evil" / "scripts" / "pre-commit", f"#!/bin/sh\ntouch {canary}\n")
    (guarded / "evil" / "scripts" / "pre-commit").chmod(0o755)
    git(guarded, home, "config", "--unset", "core.hooksPath")
    bash(guarded, home, "mv scripts s_old && mv evil/scripts scripts")
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q",
                    "--allow-empty", "-m", "x"], cwd=guarded, env={**ENV, "HOME": str(home)},
                   capture_output=True, check=False)
    assert canary.exists()  # the hook git ran is the one the rename put in place
    for cmd in ("cp -r src lib && ls lib", "mkdir -p out && cp -r src out/", "mv src lib",
                "cp -r scripts backup", "cp -r evil/pre-commit notes"):
        assert verdicts(default, guarded, home, cmd) == {"allow"}, cmd


def test_the_file_tools_cannot_rename_a_directory_above_a_protected_file(
        default: CompiledPolicy, guarded: Path) -> None:
    w = str(guarded)
    for name in ("scripts", "conf", "tools"):  # the first call (a rename away) has run
        (guarded / name).rename(guarded / f"{name}.old")
        for tool in ("core__move_path", "core__copy_path"):
            args = {"source": f"evil/{name}", "destination": name}
            found = prejudge(default, tool, args, w, (w,))
            assert found is not None and found.verdict == "deny", (tool, args)
    assert prejudge(default, "core__move_path", {"source": "src", "destination": "lib"},
                    w, (w,)) is None


@pytest.mark.parametrize("cmd", [
    "mkdir x && printf '[core]\\n' > x/config && cp -r x/. gd/",
    "ln -s evil x && cp -r x/. gd/", "cp -r evil x && cp -r x/. gd",
    "mkdir -p x/hooks && echo x > x/hooks/pre-commit && cp -r x/. gd/",
    # `..` after a link the line makes goes where the link points (red-team 13b G2)
    "mkdir -p src/s && ln -s src/s l && cp -r evil l/../x && cp -r src/x/. gd/",
])
def test_a_source_the_line_makes_is_not_judged_as_it_is_now(default: CompiledPolicy,
                                                           repo_dirs: Path, home: Path,
                                                           cmd: str) -> None:
    for trust in ("provisional", "trusted"):
        assert judge(default, repo_dirs, home, cmd, trust=trust)[0] != "allow", (cmd, trust)
    # sandboxed, gd's config and hooks are read-only: what the source brings matters when it
    # is unknown (made by a link or a copy) or holds a HEAD
    sandboxed = judge(default, repo_dirs, home, cmd, sandboxed=True)[0]
    assert sandboxed == ("allow" if cmd.startswith(("mkdir -p x/hooks", "mkdir x")) else
                         "ask"), cmd
    made = cmd.replace("x/config", "x/HEAD").replace("x/hooks/pre-commit", "x/hooks/HEAD")
    if made != cmd:
        assert judge(default, repo_dirs, home, made, sandboxed=True)[0] == "ask", made


def test_a_tree_the_line_writes_into_before_copying_it(default: CompiledPolicy,
                                                      repo_dirs: Path, home: Path) -> None:
    (repo_dirs / "x").mkdir()
    cmd = "printf '[core]\\n' > x/config && cp -r x/. gd/"
    for trust in ("provisional", "trusted"):
        assert judge(default, repo_dirs, home, cmd, trust=trust)[0] == "ask", trust
    # under the sandbox git's files (gd/config) stay read-only: only a HEAD matters there
    assert judge(default, repo_dirs, home, "echo x > x/notes && cp -r x/. y",
                 sandboxed=True)[0] == "allow"
    assert judge(default, repo_dirs, home, "echo x > x/HEAD && cp -r x/. y",
                 sandboxed=True)[0] == "ask"


def test_a_link_made_on_the_line_to_a_clone_cannot_make_the_root_a_git_dir(
        default: CompiledPolicy, tmp_path: Path, home: Path) -> None:
    root = tmp_path / "plain"
    (root / "lib").mkdir(parents=True)
    git(root / "lib", home, "init", "-q", "-b", "main")
    git(root / "lib", home, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q",
        "--allow-empty", "-m", "x")
    line = ("ln -s lib l && cp -r l/.git/logs/. . && mkdir objects && "
            "printf '[core]\\n\\tfsmonitor = touch x\\n' > config")
    assert "allow" not in verdicts(default, root, home, line)
    assert judge(default, root, home, "cp -r lib/.git/logs/. .", sandboxed=True)[0] == "ask"
    ig = ("ln -s evil x && cp -r x/. . && rg -n SECRET", "ln -s tc x && cp -r x/. . && cargo -V")
    for cmd in ig:
        assert judge(default, root, home, cmd)[0] == "ask", cmd


def test_ordinary_lines_that_make_and_copy(default: CompiledPolicy, ws: Path,
                                           home: Path) -> None:
    for cmd in ("sed s/a/b/ app.py > app.tmp && mv app.tmp app.py",
                "mkdir -p build && cp README.md build/ && ls build",
                "cp -r src dist && ls dist", "mkdir -p out && cp -r src out/"):
        assert verdicts(default, ws, home, cmd) == {"allow"}, cmd


@pytest.fixture
def worktree(tmp_path: Path, home: Path) -> Path:
    """A husky repository (core.hooksPath = .husky, a tracked hook) and a linked worktree."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, home, "init", "-q", "-b", "main")
    _write(main / ".husky" / "pre-commit", "#!/bin/sh\n")
    (main / ".husky" / "pre-commit").chmod(0o755)
    _write(main / "conf" / "git.inc", "[user]\n\tname = x\n")
    git(main, home, "config", "core.hooksPath", ".husky")
    git(main, home, "config", "include.path", "../conf/git.inc")
    git(main, home, "add", "-A")
    git(main, home, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x")
    git(main, home, "worktree", "add", "-q", "../wt")
    return tmp_path / "wt"


def test_a_linked_worktree_uses_the_common_config_and_hooks(default: CompiledPolicy,
                                                            worktree: Path,
                                                            home: Path) -> None:
    assert verdicts(default, worktree, home, "printf 'touch x\\n' >> .husky/pre-commit") == \
        {"deny"}
    assert judge(default, worktree, home, "git commit --allow-empty -m x")[0] == "ask"
    found = prejudge(default, "core__edit", {"path": ".husky/pre-commit"}, str(worktree),
                     (str(worktree),))
    assert found is not None and found.verdict == "deny"


def test_a_link_anywhere_on_the_hooks_path(default: CompiledPolicy, ws: Path,
                                           home: Path) -> None:
    _write(ws / "real" / "sub" / "git-hooks" / "pre-commit", "#!/bin/sh\n")
    (ws / "lnk").symlink_to("real")
    git(ws, home, "config", "core.hooksPath", "lnk/sub/git-hooks")
    for cmd in ("printf 'touch x\\n' >> real/sub/git-hooks/pre-commit",
                "cp app.py real/sub/git-hooks/post-commit"):
        assert verdicts(default, ws, home, cmd) == {"deny"}, cmd


def test_hooks_a_checkout_on_the_line_brings(default: CompiledPolicy, ws: Path,
                                             home: Path) -> None:
    git(ws, home, "config", "core.hooksPath", ".husky")
    _hook_on_a_branch(ws, home, ".husky")
    assert not (ws / ".husky").exists()
    for cmd in ("git switch withhook && git commit --allow-empty -m x",
                "git stash pop; git commit -m x"):
        assert judge(default, ws, home, cmd)[0] == "ask", cmd
        assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow", cmd
    assert judge(default, ws, home, "git commit --allow-empty -m x")[0] == "allow"
    # with the hooks in .git only, a checkout cannot bring one
    git(ws, home, "config", "--unset", "core.hooksPath")
    assert judge(default, ws, home, "git switch withhook && git commit -m x")[0] == "allow"
    assert os.path.isdir(ws / ".git" / "hooks")


def test_a_tilde_after_the_equals_of_an_assignment_shaped_argument(default: CompiledPolicy,
                                                                   ws: Path,
                                                                   home: Path) -> None:
    out = bash(ws, home, "echo of=~/x a=b:~/y --opt=~/z e=a~/w").stdout.split()
    assert out == [f"of={home}/x", f"a=b:{home}/y", "--opt=~/z", "e=a~/w"]  # bash's rule
    for cmd in ("dd if=README.md of=~/.bashrc", "dd if=~/.ssh/id_rsa of=x",
                "dd if=README.md of=~/.ssh/authorized_keys"):
        assert judge(default, ws, home, cmd, trust="trusted")[0] == "deny", cmd
    # not assignment-shaped: the tilde stays, a relative name inside the workspace
    assert judge(default, ws, home, "sort --output=~/notes README.md")[0] == "allow"


def test_a_parent_step_after_a_link_goes_where_the_kernel_takes_it(default: CompiledPolicy,
                                                                  guarded: Path, home: Path,
                                                                  tmp_path: Path) -> None:
    """`l/../x` with `l -> a/b` is `a/x` (bash and the kernel), not `./x` (a textual
    normpath): a link already there, or one the line makes (red-team 13b G1)."""
    (guarded / "scripts" / "d").mkdir()
    (guarded / "l").symlink_to("scripts/d")
    out = bash(guarded, home, "echo hi > l/../probe && cat scripts/probe")
    assert out.stdout.strip() == "hi"  # the class is real
    (guarded / "scripts" / "probe").unlink()
    for cmd in ("cp evil/pre-commit l/../pre-commit", "echo x >> l/../pre-commit"):
        assert verdicts(default, guarded, home, cmd) == {"deny"}, cmd
    deep = guarded / "src" / "1" / "2" / "3"
    deep.mkdir(parents=True)
    (deep / "up").symlink_to(home)
    assert judge(default, guarded, home, "echo x >> src/1/2/3/up/../home/.bashrc",
                 trust="trusted")[0] == "deny"  # HOME's .bashrc, not src/1/2/3/home/.bashrc
    for cmd in ("mkdir -p tools/d && ln -s tools/d k && echo x >> k/../git-hooks/post-commit",
                "ln -s scripts/d k && cp evil/pre-commit k/../pre-commit"):
        assert "allow" not in verdicts(default, guarded, home, cmd), cmd
    found = prejudge(default, "core__write", {"path": "l/../pre-commit", "content": "x"},
                     str(guarded), (str(guarded),))
    assert found is not None and found.verdict == "deny"
    for cmd in ("cat src/../README.md", "ls src/../scripts && cp -r src/../scripts bk"):
        assert judge(default, guarded, home, cmd, trust="trusted")[0] == "allow", cmd


@pytest.mark.parametrize("layout", ["linked-dir", "linked-hook"])
def test_hooks_a_checkout_brings_through_links(default: CompiledPolicy, ws: Path, home: Path,
                                               layout: str) -> None:
    """`.git/hooks -> ../githooks`, or a hook linked to a work-tree file, where only another
    branch holds the files (red-team 13b G5)."""
    _hook_on_a_branch(ws, home, "githooks")
    hooks = ws / ".git" / "hooks"
    if layout == "linked-dir":
        for sample in hooks.iterdir():
            sample.unlink()
        hooks.rmdir()
        hooks.symlink_to("../githooks")
    else:
        (hooks / "pre-commit").symlink_to("../../githooks/pre-commit")
    cmd = "git switch withhook && git commit --allow-empty -m x"
    assert judge(default, ws, home, cmd)[0] == "ask", layout
    assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow", layout


def test_a_link_in_a_copied_tree_lands_as_an_entry(default: CompiledPolicy, guarded: Path,
                                                   home: Path) -> None:
    """`f/tools -> evil/tools` copied with -L brings evil's hooks over tools/git-hooks; as a
    link, it makes tools point there (red-team 13b G3)."""
    (guarded / "f").mkdir()
    (guarded / "f" / "tools").symlink_to(guarded / "evil" / "tools")
    for cmd in ("cp -rL f/. .", "cp -r --dereference f/. .", "cp -r f/. ."):
        assert verdicts(default, guarded, home, cmd) == {"deny"}, cmd
    assert verdicts(default, guarded, home, "cp -rL f/. out/") == {"allow"}


@pytest.mark.parametrize("cmd", [
    # every `..`, not only the first (red-team 13c H1)
    "ln -s gd/refs/heads l && cp evil/config src/../l/../../config",
    # cp -P copies a link as a link: no plain file write (H2)
    "ln -s gd/refs/heads y && cp -P y l && cp evil/config l/../../config",
    # a write through a link another command of the line makes (H4)
    "ln -s gd l && cp evil/config l/config", "ln -s gd l && echo x > l/config",
    "ln -s gd l && cd l && cp ../evil/config config",
])
def test_a_path_through_what_the_line_makes(default: CompiledPolicy, repo_dirs: Path,
                                            home: Path, cmd: str) -> None:
    (repo_dirs / "src").mkdir(exist_ok=True)
    assert "allow" not in verdicts(default, repo_dirs, home, cmd), cmd


def test_a_backup_is_a_name_made_there(default: CompiledPolicy, guarded: Path,
                                       home: Path) -> None:
    """`-b -S SUFFIX` renames the replaced destination to DEST+SUFFIX (red-team 13c H3)."""
    _write(guarded / "conf" / "git", "x\n")
    out = bash(guarded, home, "cp -b -S .bak README.md conf/git && ls conf")
    assert "git.bak" in out.stdout  # the class is real: a name the argv does not show
    for cmd in ("cp -b -S .inc README.md conf/git", "mv -b -S .inc README.md conf/git",
                "ln -f -b -S .inc README.md conf/git", "cp --backup --suffix=.inc a conf/git"):
        assert verdicts(default, guarded, home, cmd) == {"deny"}, cmd
    assert verdicts(default, guarded, home, "cp -b README.md notes") == {"allow"}


def test_ordinary_lines_that_write_into_what_they_made(default: CompiledPolicy, ws: Path,
                                                       home: Path) -> None:
    for cmd in ("cp -r src out && cp README.md out/x", "mv src lib && echo x > lib/y",
                "mkdir -p out && cp README.md out/", "cp README.md a && cp a b"):
        assert verdicts(default, ws, home, cmd) == {"allow"}, cmd
    # a checkout can put a tracked link where notes.txt is written (red-team 14b, B3): the
    # sandbox holds what it could reach, so only the unsandboxed line asks
    cmd = "git switch main && echo x > notes.txt"
    assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow"
    assert judge(default, ws, home, cmd)[0] == "ask"


def test_many_writes_against_many_checks_end_within_the_budget(default: CompiledPolicy,
                                                               ws: Path) -> None:
    """Every write relies on the directories above it: the comparison is bounded (asks past
    it) and the decision still answers."""
    for cmd in ("; ".join(f"cp a{i} b{i}/x{i}" for i in range(2000)),
                "; ".join(f"ln -s x{i} l{i}/*" for i in range(2000))):
        assert default.judge(cmd, cwd=str(ws), roots=(str(ws),)).verdict == "ask"


def test_a_write_through_a_link_a_checkout_brings(default: CompiledPolicy, repo_dirs: Path,
                                                  home: Path) -> None:
    """A branch that tracks `l -> gd`: after `git switch`, `l/config` is gd's config."""
    git(repo_dirs, home, "switch", "-q", "-c", "br")
    (repo_dirs / "l").symlink_to("gd")
    git(repo_dirs, home, "add", "l")
    git(repo_dirs, home, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "l")
    git(repo_dirs, home, "switch", "-q", "main")
    assert not (repo_dirs / "l").exists()
    for cmd in ("git switch br && echo x > l/config", "git switch br && cp README.md l/config"):
        assert judge(default, repo_dirs, home, cmd, trust="trusted")[0] != "allow", cmd
    assert judge(default, repo_dirs, home, "git switch br && echo x > notes.txt",
                 trust="trusted", sandboxed=True)[0] == "allow"
