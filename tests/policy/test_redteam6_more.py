"""Red-team 6, findings A6 A7 B1c B1d B9 B10 B11 C2 (rtfixc): each class judged through the
real judge (`CompiledPolicy.judge` with explicit trust, home and sandboxed), and where cheap the
effect the verdict guards against shown with a canary in real bash. Every test here fails on
the code before these fixes (main 002c8ca plus the lead's githooks commits)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
       "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(ws: Path, home: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, env={**ENV, "HOME": str(home)},
                   capture_output=True, text=True, check=True)


def bash(ws: Path, home: Path, cmd: str,
         path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "HOME": str(home)}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(["bash", "-c", cmd], cwd=ws, env=env, capture_output=True,
                          text=True, check=False, timeout=60)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def ws(tmp_path: Path, home: Path) -> Path:
    """The red-team set-up: a committed app, an untracked .env, secrets/, a .pem."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print(1)\n")
    (ws / "README.md").write_text("hello\n")
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("x=1\n")
    git(ws, home, "init", "-q", "-b", "main")
    git(ws, home, "add", "-A")
    git(ws, home, "commit", "-qm", "init")
    (ws / ".env").write_text("SECRET=CANARY_ENV\n")
    (ws / "secrets").mkdir()
    (ws / "secrets" / "k.txt").write_text("CANARY_SECRETS\n")
    (ws / "server.pem").write_text("CANARY_PEM\n")
    return Path(os.path.realpath(ws))


def judge(policy: CompiledPolicy, ws: Path, home: Path, cmd: str, *, sandboxed: bool = False,
          trust: str = "provisional", cwd: Path | None = None) -> tuple[str, tuple[str, ...]]:
    d = policy.judge(cmd, cwd=str(cwd or ws), roots=(str(ws),), trust=trust,  # type: ignore[arg-type]
                     home=str(home), sandboxed=sandboxed)
    return d.verdict, d.rules


def both(policy: CompiledPolicy, ws: Path, home: Path, cmd: str, **kw: object) -> tuple[str, str]:
    return (judge(policy, ws, home, cmd, sandboxed=False, **kw)[0],  # type: ignore[arg-type]
            judge(policy, ws, home, cmd, sandboxed=True, **kw)[0])  # type: ignore[arg-type]


# ---- A6: committed secrets: the sandbox cannot mask git's copy ------------------------------

def test_a6_committed_secret_takes_back_the_sandbox_lifts(default: CompiledPolicy, ws: Path,
                                                          home: Path) -> None:
    line = "printf 'git show HEAD:secrets/k.txt\\n' > r.sh; bash r.sh"
    assert both(default, ws, home, line) == ("ask", "allow")  # nothing tracked yet
    git(ws, home, "add", "-f", "secrets/k.txt")
    git(ws, home, "commit", "-qm", "oops")
    # the effect the sandbox cannot stop: git's copy is not the masked file
    assert "CANARY_SECRETS" in bash(ws, home, "git show HEAD:secrets/k.txt").stdout
    for cmd in (line, "make", "python3 t.py", "npm test", "pytest -q"):
        verdict, rules = judge(default, ws, home, cmd, sandboxed=True)
        assert verdict == "ask", cmd
        assert "sandbox.committed-secret" in rules, cmd
    # what needs no lift stays allowed; a trusted workspace keeps them (documented)
    assert both(default, ws, home, "ls && cat app.py") == ("allow", "allow")
    assert judge(default, ws, home, "bash r.sh", sandboxed=True, trust="trusted")[0] == "allow"


def test_a6_staged_only_counts_and_unstaging_frees(default: CompiledPolicy, ws: Path,
                                                   home: Path) -> None:
    git(ws, home, "add", "-f", "server.pem")  # staged, never committed: in the index
    assert judge(default, ws, home, "bash r.sh", sandboxed=True)[0] == "ask"
    git(ws, home, "rm", "-q", "--cached", "server.pem")
    assert judge(default, ws, home, "bash r.sh", sandboxed=True)[0] == "allow"


# ---- A7: writes into a core.hooksPath directory in the work tree ----------------------------

@pytest.mark.parametrize("hooks", [".husky", ".githooks", "tools/hooks"])
def test_a7_hooks_path_writes_are_denied_like_git_hooks(default: CompiledPolicy, ws: Path,
                                                        home: Path, hooks: str) -> None:
    git(ws, home, "config", "core.hooksPath", hooks)
    (ws / hooks).mkdir(parents=True)
    for cmd in (f"printf '#!/bin/sh\\ntouch /tmp/x\\n' > {hooks}/pre-commit",
                f"echo 'touch /tmp/x' >> {hooks}/pre-commit",
                f"cp app.py {hooks}/pre-commit", f"mv app.py {hooks}/",
                f"cd {hooks} && tee commit-msg < ../app.py",
                f"sed -i 's/x/y/' {hooks}/pre-commit", f"touch {hooks}/post-checkout",
                f"mv src {hooks}", f"cp -r src {hooks}/"):
        assert both(default, ws, home, cmd) == ("deny", "deny"), cmd
    # the same writes next to it stay allowed
    assert both(default, ws, home, "echo x > notes.txt && cp app.py b.py") == ("allow", "allow")


def test_a7_hooks_path_from_the_users_config_and_the_top(
        default: CompiledPolicy, ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))  # the git a command runs reads the daemon's HOME
    (home / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    assert both(default, ws, home, "echo x > .githooks/pre-push") == ("deny", "deny")
    # a hooks path that is the work tree's top: only hook names directly in it count
    (home / ".gitconfig").write_text("[core]\n\thooksPath = .\n")
    assert both(default, ws, home, "echo x > pre-commit") == ("deny", "deny")
    assert both(default, ws, home, "echo x > notes.txt") == ("allow", "allow")


def test_a7_file_tools_prejudge_the_hooks_directory(default: CompiledPolicy, ws: Path,
                                                    home: Path) -> None:
    from acpd.tools.fs.pathguard import prejudge

    git(ws, home, "config", "core.hooksPath", ".husky")
    for tool, args in (("core__write", {"path": ".husky/pre-commit", "content": "x"}),
                       ("core__edit", {"path": ".husky/pre-commit"}),
                       ("core__move_path", {"source": "app.py", "destination": ".husky/x"}),
                       ("core__copy_path", {"source": "app.py", "destination": ".husky"})):
        found = prejudge(default, tool, args, str(ws), (str(ws),))
        assert found is not None and found.verdict == "deny", tool
    assert prejudge(default, "core__write", {"path": "notes.txt", "content": "x"}, str(ws),
                    (str(ws),)) is None


# ---- B1c: version managers -------------------------------------------------------------------

def test_b1c_version_manager_variables_are_blocked(default: CompiledPolicy, ws: Path,
                                                   home: Path) -> None:
    for cmd in ("PYENV_HOOK_PATH=$PWD/hk python3 -V", "PYENV_HOOK_PATH=hk pip --version",
                "export RBENV_HOOK_PATH=hk; ruby -v", "ASDF_DATA_DIR=. node --version",
                "MISE_DATA_DIR=x npm --version", "env NODENV_HOOK_PATH=x node -v",
                "read VOLTA_HOME < f; node -v", "SDKMAN_DIR=. java -version"):
        assert both(default, ws, home, cmd) == ("deny", "deny"), cmd


@pytest.mark.parametrize(("pin", "text", "cmd"), [
    ("rust-toolchain.toml", '[toolchain]\npath = "/tmp/tc"\n', "cargo --version"),
    ("rust-toolchain", "stable\n", "rustc -V"),
    ("go.mod", "module m\n\ngo 1.99\ntoolchain go1.99.0\n", "go version"),
    (".tool-versions", "python path:/tmp/py\n", "python3 --version"),
    ("mise.toml", '[tools]\nnode = "path:/tmp/n"\n', "node -v"),
])
def test_b1c_version_queries_under_a_toolchain_pin_are_trust_gated(
        default: CompiledPolicy, ws: Path, home: Path, pin: str, text: str, cmd: str) -> None:
    assert both(default, ws, home, cmd) == ("allow", "allow")
    (ws / pin).write_text(text)
    verdict, rules = judge(default, ws, home, cmd)
    assert verdict == "ask" and "version.toolchain-pin" in rules
    assert judge(default, ws, home, f"cd src && {cmd}")[0] == "ask"  # an ancestor's pin
    assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow"
    assert judge(default, ws, home, cmd, trust="trusted")[0] == "allow"


def test_b1c_plain_version_queries_stay_free(default: CompiledPolicy, ws: Path,
                                             home: Path) -> None:
    (ws / "rust-toolchain.toml").write_text("[toolchain]\nchannel = 'stable'\n")
    for cmd in ("python3 --version", "node -v", "node --version", "pip --version",
                "git --version"):
        assert both(default, ws, home, cmd) == ("allow", "allow"), cmd
    # a pin above the workspace is the user's own, not the workspace's
    (ws.parent / ".tool-versions").write_text("python 3.11\n")
    (ws / "rust-toolchain.toml").unlink()
    assert both(default, ws, home, "python3 --version") == ("allow", "allow")


# ---- B1d: program names resolved on a writable PATH ------------------------------------------

def test_b1d_a_workspace_directory_on_path(default: CompiledPolicy, ws: Path, home: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    venv_bin = ws / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    system = os.environ["PATH"]
    path = f"{venv_bin}:{system}"
    line = ("printf 'touch CANARY_PATH\\n' > x.sh; cp \"$(command -v dash || command -v sh)\" "
            ".venv/bin/cat; cat x.sh")
    bash(ws, home, line, path=path)
    assert (ws / "CANARY_PATH").exists()  # `cat x.sh` ran the shell the line planted
    monkeypatch.setenv("PATH", path)
    for cmd in ("cat x.sh", "ls", "env cat x", "timeout 5 grep a b", "bash x.sh"):
        verdict, _ = judge(default, ws, home, cmd)
        assert verdict == "ask", cmd
        assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow", cmd
        assert judge(default, ws, home, cmd, trust="trusted")[0] != "ask" or cmd == "bash x.sh"
    assert "path.program-lookup" in judge(default, ws, home, "ls")[1]
    assert judge(default, ws, home, "echo hi && cd src && pwd")[0] == "allow"  # builtins
    # a relative entry and an empty one are the command's own directory
    for bad in (f".:{system}", f":{system}"):
        monkeypatch.setenv("PATH", bad)
        assert judge(default, ws, home, "ls")[0] == "ask", bad
    # a writable entry after the one holding the program cannot shadow it
    monkeypatch.setenv("PATH", f"/usr/bin:/bin:{venv_bin}")
    assert judge(default, ws, home, "ls")[0] == "allow"


# ---- B9: variables that name a file for a modelled program -----------------------------------

def test_b9_file_naming_variables(default: CompiledPolicy, ws: Path, home: Path) -> None:
    out = bash(ws, home, "MAGIC=.env file README.md")
    assert "CANARY_ENV" in out.stdout + out.stderr  # the effect: file prints its magic file
    for cmd in ("MAGIC=.env file README.md", "export MAGIC=secrets/k.txt; file README.md",
                "TAPE=.git/hooks/x tar -c README.md", "export TAPE=/root/x; tar -c README.md",
                "read TAPE < f; tar -c app.py", "GREP_OPTIONS='-f .env' grep a app.py",
                "UNZIP=-o unzip a.zip", "SIMPLE_BACKUP_SUFFIX=/x cp -b a b",
                "declare -x MAGIC=.env; file app.py"):
        assert both(default, ws, home, cmd) == ("deny", "deny"), cmd
    assert both(default, ws, home, "file README.md") == ("allow", "allow")


# ---- B10: cd -P resolves links before `..` ---------------------------------------------------

def test_b10_cd_physical(default: CompiledPolicy, ws: Path, home: Path) -> None:
    (ws / "lnk").symlink_to(ws / ".git" / "hooks")
    out = bash(ws, home, "cd -P lnk/.. && pwd && cd lnk/.. 2>/dev/null; cd - >/dev/null")
    assert out.stdout.splitlines()[0] == str(ws / ".git")  # bash: physical
    for cmd in ("cd -P lnk/..; echo x > config", "cd -Pe lnk/.. && echo x > config",
                "cd -LP lnk/.. && touch description", "cd -P -- lnk/.. && echo x > config",
                "builtin cd -P lnk/.. && echo x > config"):
        assert both(default, ws, home, cmd) == ("deny", "deny"), cmd
    # logical forms stay where bash puts them: the workspace top
    for cmd in ("cd lnk/.. && echo x > notes.txt", "cd -PL lnk/.. && echo x > notes.txt",
                "cd src && ls", "cd -P src && ls"):
        assert both(default, ws, home, cmd) == ("allow", "allow"), cmd


# ---- B11: renames and backups of denied files ------------------------------------------------

def test_b11_renames_and_backups_are_reads(default: CompiledPolicy, ws: Path,
                                           home: Path) -> None:
    (ws / "sub" / "secrets").mkdir(parents=True)
    (ws / "sub" / "secrets" / "a").write_text("x\n")
    (ws / "dd").mkdir()
    out = bash(ws, home, "cp -b README.md server.pem && cat server.pem~")
    assert "CANARY_PEM" in out.stdout  # the effect: the backup holds the old file
    denied = ("mv secrets/k.txt x", "mv -t . secrets/k.txt", "mv secrets/k.txt src/",
              "mv server.pem p.txt", "mv -b README.md server.pem",
              "cp --backup=t README.md server.pem", "cp --b README.md server.pem",
              "mv --exchange README.md server.pem", "cp -bf app.py server.pem",
              "cp -S .bak app.py server.pem", "ln -b app.py server.pem",
              "cp -b server.pem dd")
    for cmd in denied:
        assert judge(default, ws, home, cmd)[0] == "deny", cmd
    for cmd in ("mv secrets s3", "mv -T secrets sx", "mv sub s6"):  # directories: scanned
        assert judge(default, ws, home, cmd)[0] in ("ask", "deny"), cmd
    for cmd in ("mv app.py b.py", "cp -r src dst", "mv src dd/", "cp -fb app.py x.py",
                "cp -t dd app.py", "mv README.md docs.md"):
        assert both(default, ws, home, cmd) == ("allow", "allow"), cmd


# ---- C2: tree -R writes 00Tree.html everywhere -----------------------------------------------

def test_c2_tree_recursive_output(default: CompiledPolicy, ws: Path, home: Path) -> None:
    for cmd in ("tree -R -H x -L 1", "tree -a -R -L 1", "tree -RL 1", "tree -dR"):
        assert both(default, ws, home, cmd) == ("ask", "ask"), cmd
    assert both(default, ws, home, "tree -o .git/x") == ("deny", "deny")
    assert both(default, ws, home, "tree -L 2") == ("allow", "allow")
