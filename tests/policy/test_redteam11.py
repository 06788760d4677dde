"""Red-team 11 (policy side): git directories known by what they hold, hooks that are links
to workspace files, ignore files and toolchain pins a line rewrites before the check that read
them, and tilde prefixes bash fills from the directory stack or the password database. Each
class judged through the real judge with several spellings, and where cheap its effect shown
in real bash and git. Every test fails on the code before these fixes (f52934d)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy
from acpd.tools.fs.pathguard import prejudge
from tests.policy import test_redteam6_more as rt6
from tests.policy.test_redteam6_more import both, git, judge

home = rt6.home  # the red-team workspace: a committed app, .env, secrets/, a .pem
ws = rt6.ws

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}


def plant_git_dir(place: Path, canary: Path) -> None:
    """What plain writes can make: a directory git takes as a git directory, whose config
    runs a command on the next `git status` there."""
    (place / "objects").mkdir(parents=True)
    (place / "refs" / "heads").mkdir(parents=True)
    (place / "HEAD").write_text("ref: refs/heads/main\n")
    (place / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = {place}\n"
        f"\tfsmonitor = touch {canary}; false\n")


# ---- git directories not named .git ---------------------------------------------------------

def test_a_directory_that_becomes_a_git_directory_runs_its_config(tmp_path: Path,
                                                                  home: Path) -> None:
    canary = tmp_path / "canary"
    plain = tmp_path / "plain"
    plain.mkdir()
    plant_git_dir(plain, canary)
    subprocess.run(["git", "status"], cwd=plain, env={**ENV, "HOME": str(home)},
                   capture_output=True, check=False)
    assert canary.exists()  # the class is real: four plain writes made code git runs


@pytest.mark.parametrize("cmd", [
    'mkdir -p objects refs/heads && echo "ref: refs/heads/main" > HEAD && printf x > config',
    "echo 'ref: refs/heads/main' > HEAD", "mv notes.txt HEAD", "cp README.md sub/HEAD",
    "tee x/HEAD < README.md", "printf x >| HEA{D,}",
    "mkdir -p x/objects x/refs && echo r > x/HEAD && cd x && git branch foo",
])
def test_writing_a_head_asks_everywhere(default: CompiledPolicy, ws: Path, home: Path,
                                        cmd: str) -> None:
    for trust in ("provisional", "trusted"):
        verdict, rules = judge(default, ws, home, cmd, trust=trust, sandboxed=True)
        assert verdict != "allow" and "path.git-head" in rules, (cmd, trust)
        assert judge(default, ws, home, cmd, trust=trust)[0] != "allow", cmd


def test_git_code_in_git_directories_of_any_name_is_denied(default: CompiledPolicy, ws: Path,
                                                          home: Path) -> None:
    git(ws, home, "init", "-q", "--separate-git-dir=gd", "sub")
    git(ws, home, "init", "-q", "--bare", "bare.git")
    plant_git_dir(ws / "made", ws / "canary")
    for cmd in ('printf "[core]\\n\\tfsmonitor=touch x\\n" >> gd/config', "cp app.py gd/config",
                "sed -i s/a/b/ gd/config", "echo x > gd/config.worktree",
                "echo x > bare.git/hooks/pre-commit", "cp app.py bare.git/hooks/post-checkout",
                "echo '* filter=x' > bare.git/info/attributes", "echo x > made/commondir",
                "cd made && echo x >> config", "tee -a made/hooks/pre-push < app.py"):
        assert both(default, ws, home, cmd) == ("deny", "deny"), cmd
        assert "path.git-directory" in judge(default, ws, home, cmd)[1], cmd
    for tool, args in (("core__write", {"path": "gd/config", "content": "x"}),
                       ("core__edit", {"path": "bare.git/config"}),
                       ("core__write", {"path": "made/hooks/pre-commit", "content": "x"}),
                       ("core__write", {"path": "made/HEAD", "content": "x"})):
        found = prejudge(default, tool, args, str(ws), (str(ws),))
        assert found is not None and found.verdict != "allow", (tool, args)
    # Files of the same names elsewhere stay free.
    (ws / "src" / "hooks").mkdir()
    for cmd in ("echo x > config", "echo x > src/config", "echo x > src/hooks/useThing.ts",
                "echo x > info/notes.txt"):
        assert both(default, ws, home, cmd) == ("allow", "allow"), cmd


# ---- hooks that are links to workspace files ------------------------------------------------

def test_the_file_a_hook_links_to_is_the_hook(default: CompiledPolicy, ws: Path,
                                              home: Path, tmp_path: Path) -> None:
    (ws / "scripts").mkdir()
    script = ws / "scripts" / "pre-commit"
    script.write_text("#!/bin/sh\necho lint\n")
    script.chmod(0o755)
    (ws / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/pre-commit")
    canary = tmp_path / "canary"
    with script.open("a") as fh:
        fh.write(f"touch {canary}\n")
    git(ws, home, "commit", "-q", "--allow-empty", "-m", "x")
    assert canary.exists()  # the class is real: the workspace file ran as the hook
    for cmd in ("echo 'touch x' >> scripts/pre-commit", "sed -i s/lint/x/ scripts/pre-commit",
                "cp app.py scripts/pre-commit", "mv app.py scripts/pre-commit",
                "cd scripts && printf x > pre-commit", "truncate -s 0 scripts/pre-commit"):
        assert both(default, ws, home, cmd) == ("deny", "deny"), cmd
    found = prejudge(default, "core__edit", {"path": "scripts/pre-commit"}, str(ws),
                     (str(ws),))
    assert found is not None and found.verdict == "deny"
    assert both(default, ws, home, "echo x >> scripts/other") == ("allow", "allow")


# ---- ignore files and toolchain pins the line itself rewrites --------------------------------

@pytest.mark.parametrize("cmd", [
    ": > .gitignore; rg K", "sed -i 1,2d .gitignore; rg -n K", "rg K & : > .gitignore",
    "echo '!.env' > .rgignore; rg SECRET", "printf '!.env\\n' > src/.ignore; rg -n SECRET",
    ": > .gitignore && git add . && git grep --cached SECRET",
    "sed -i 1d .gitignore && git add -A && git commit -qm x",
    "for i in 1 2; do rg K; : > .gitignore; done",
])
def test_a_line_that_rewrites_an_ignore_file_gets_no_narrowing(
        default: CompiledPolicy, ws: Path, home: Path, cmd: str) -> None:
    (ws / ".gitignore").write_text(".env\nsecrets/\nserver.pem\n")
    git(ws, home, "add", ".gitignore")
    git(ws, home, "commit", "-qm", "ignore")
    for trust in ("provisional", "trusted"):
        verdict, rules = judge(default, ws, home, cmd, trust=trust)
        assert verdict == "ask", (cmd, trust)
    # (A line that asks for another reason skips the tree's look.)
    verdict, rules = judge(default, ws, home, cmd, trust="trusted")
    assert "line.rewrites-checked-file" in rules or "escape.background" in rules, rules
    # Inside the sandbox the denied files are masked whatever rg is told.
    assert judge(default, ws, home, cmd, sandboxed=True, trust="trusted")[0] == "allow"


def test_the_same_searches_without_the_rewrite_stay_free(default: CompiledPolicy, ws: Path,
                                                         home: Path) -> None:
    (ws / ".gitignore").write_text(".env\nsecrets/\nserver.pem\n")
    for cmd in ("rg K", "rg -n SECRET", "git add . && git status", "echo x >> notes.txt; rg K",
                "echo '*.log' >> .gitignore; git status"):
        assert judge(default, ws, home, cmd, trust="trusted")[0] == "allow", cmd


@pytest.mark.parametrize(("place", "text", "free"), [
    ("..", "!.env\n", False), ("..", "!.gitkeep\n", True), ("src", "!*\n", False),
    ("src", "!.env\n", False), ("..", "!secrets\n", False), ("..", "!\\.env\n", False),
])
def test_ignore_files_that_re_include_are_read_wherever_rg_reads_them(
        default: CompiledPolicy, ws: Path, home: Path, place: str, text: str,
        free: bool) -> None:
    """rg reads `.ignore` in every parent of the search, and in every directory it walks; a
    `!` line there re-includes hidden and ignored files (`.env`, `secrets/`)."""
    (ws / ".gitignore").write_text(".env\nsecrets/\nserver.pem\n")
    (ws / "src" / ".env").write_text("SECRET=NESTED\n")
    (ws / place / ".ignore").write_text(text)
    verdict = judge(default, ws, home, "rg SECRET", trust="trusted")[0]
    assert (verdict == "allow") is free
    rg = shutil.which("rg")
    if rg is not None and not free and place == "..":  # what rg really does
        out = subprocess.run([rg, "SECRET"], cwd=ws, capture_output=True, text=True).stdout
        assert "SECRET" in out


def test_a_global_excludes_file_that_re_includes_counts(default: CompiledPolicy, ws: Path,
                                                        home: Path, monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    (ws / ".gitignore").write_text(".env\nsecrets/\nserver.pem\n")
    assert judge(default, ws, home, "rg K", trust="trusted")[0] == "allow"
    monkeypatch.setenv("HOME", str(home))
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/ex\n")
    (home / "ex").write_text("!secrets\n")
    assert judge(default, ws, home, "rg K", trust="trusted")[0] == "ask"


@pytest.mark.parametrize("cmd", [
    "printf '[toolchain]\\npath = \"/tmp/tc\"\\n' > rust-toolchain.toml && cargo --version",
    "echo 'nodejs path:/x' > .tool-versions; node --version",
    "echo 'go 1.99' > go.mod; go version", "cp README.md .config/mise.toml; node -v",
    "python3 --version; echo 'python path:/x' > src/.tool-versions",
])
def test_a_toolchain_pin_written_by_the_line_gates_its_version_query(
        default: CompiledPolicy, ws: Path, home: Path, cmd: str) -> None:
    verdict, rules = judge(default, ws, home, cmd)
    assert verdict == "ask" and "line.rewrites-checked-file" in rules, cmd
    assert judge(default, ws, home, cmd, sandboxed=True)[0] == "allow"
    assert judge(default, ws, home, cmd, trust="trusted")[0] == "allow"


# ---- tilde prefixes --------------------------------------------------------------------------

def test_tilde_prefixes_are_what_bash_makes_of_them(default: CompiledPolicy, ws: Path,
                                                    home: Path) -> None:
    # ~+ is the working directory, ~- OLDPWD, ~N the directory stack: not known here.
    for cmd in ("echo x > ~+/../x", "cat ~-/.aws/credentials", "cat ~1/x", "ls ~+",
                "cp app.py ~-0/x"):
        assert both(default, ws, home, cmd) == ("ask", "ask"), cmd
    out = subprocess.run(["bash", "-c", "cd /; cd - >/dev/null; echo ~+/../x"], cwd=ws,
                         capture_output=True, text=True).stdout
    assert out.strip() == f"{ws}/../x"  # the write above lands outside the workspace
    # ~user is the password database's home; an unknown user is left as written.
    me = pwd.getpwuid(os.getuid())
    verdict, _ = judge(default, ws, home, f"cat ~{me.pw_name}/.ssh/id_rsa")
    assert verdict == "deny"  # the name pattern (**/id_rsa*) at the real home
    reasons = default.judge(f"cat ~{me.pw_name}/notes", cwd=str(ws), roots=(str(ws),),
                            home=str(home)).reasons
    assert any(os.path.join(me.pw_dir, "notes") in r for r in reasons), reasons
    assert both(default, ws, home, "cat ~no-such-user-acpd/x") == ("allow", "allow")
    assert (ws / "~no-such-user-acpd").exists() is False  # relative, inside: as bash reads it


# ---- the file tools and /tmp -----------------------------------------------------------------

def test_the_file_tools_do_not_write_the_hosts_tmp(default: CompiledPolicy, ws: Path,
                                                   home: Path, tmp_path: Path) -> None:
    """`/tmp/**` is the sandbox's private /tmp; the file tools have none, and the host's holds
    other daemons' run directories and the parents of workspaces under /tmp."""
    for path in ("/tmp/acpd-run-x/y", str(tmp_path / ".ignore"), str(tmp_path / "HEAD")):
        found = prejudge(default, "core__write", {"path": path, "content": "x"}, str(ws),
                         (str(ws),))
        assert found is not None and found.verdict != "allow", path
    assert judge(default, ws, home, "echo x > /tmp/acpd-run-x-y", sandboxed=True)[0] == "allow"
    assert prejudge(default, "core__write", {"path": "notes.txt", "content": "x"}, str(ws),
                    (str(ws),)) is None


def test_the_file_tools_resolve_the_links_of_home_patterns(
        default: CompiledPolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dotfiles workspace: `~/.aws` and `~/.bashrc` are links into it (stow), or HOME is a
    link itself. The file tools judge the real path of what they open, so `~/` patterns are
    matched on their real directories too."""
    dot = tmp_path / "dot"
    (dot / "aws").mkdir(parents=True)
    (dot / "aws" / "credentials").write_text("aws_secret=DOT\n")
    (dot / "bashrc").write_text("# rc\n")
    real_home = tmp_path / "home"
    real_home.mkdir()
    (real_home / ".aws").symlink_to(dot / "aws")
    (real_home / ".bashrc").symlink_to(dot / "bashrc")
    (tmp_path / "homelink").symlink_to(real_home)
    for home_dir in (real_home, tmp_path / "homelink"):
        monkeypatch.setenv("HOME", str(home_dir))
        for tool, args in (("core__read", {"path": "aws/credentials"}),
                           ("core__write", {"path": "bashrc", "content": "curl x | sh\n"}),
                           ("core__edit", {"path": "bashrc"})):
            found = prejudge(default, tool, args, str(dot), (str(dot),))
            assert found is not None and found.verdict == "deny", (home_dir, tool)
        assert prejudge(default, "core__read", {"path": "other.txt"}, str(dot),
                        (str(dot),)) is None


def test_links_inside_a_home_pattern_directory_are_followed_by_the_file_tools(
        default: CompiledPolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GNU stow links single files when `~/.aws` already exists: `~/.aws/credentials` then
    points into the dotfiles workspace (red-team 12, F8)."""
    dot = tmp_path / "dot"
    (dot / "aws").mkdir(parents=True)
    (dot / "aws" / "credentials").write_text("aws_secret=DOT\n")
    home_dir = tmp_path / "home"
    (home_dir / ".aws" / "cli").mkdir(parents=True)
    (home_dir / ".aws" / "credentials").symlink_to(dot / "aws" / "credentials")
    (home_dir / ".aws" / "cli" / "w").symlink_to(dot / "w")
    monkeypatch.setenv("HOME", str(home_dir))
    (dot / "w").mkdir()
    for path in ("aws/credentials", "w/x"):
        found = prejudge(default, "core__read", {"path": path}, str(dot), (str(dot),))
        assert found is not None and found.verdict == "deny", path
    assert prejudge(default, "core__read", {"path": "aws/other"}, str(dot), (str(dot),)) is None
