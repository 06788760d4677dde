"""Every name of a `deny_read` file is masked: hard links made before the command, in any
directory of the workspace and under any name, to denied files inside or outside it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acpd.sandbox.build import build_confinement
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules
from tests.sandbox.conftest import git_dir, sandbox_env, sandbox_run

RULES = PathRules(deny_read=("**/.env", "**/secrets/**", "~/.ssh/**", "~/.netrc"))
CANARIES = ("ENV-CANARY", "TOKEN-CANARY", "PRIVATE-KEY-CANARY", "NETRC-CANARY")


@pytest.fixture
def linked(tmp_path: Path, home: Path) -> Path:
    """A workspace whose ordinary-looking files are hard links to denied ones."""
    ws = tmp_path / "lws"
    (ws / "docs" / "deep" / "er").mkdir(parents=True)
    (ws / "secrets").mkdir()
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    git_dir(ws / ".git")
    (ws / ".env").write_text("ENV-CANARY\n")
    (ws / "secrets" / "token.txt").write_text("TOKEN-CANARY\n")
    (home / ".netrc").write_text("NETRC-CANARY\n")
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-CANARY")
    (ws / "plain.txt").write_text("plain\n")
    os.link(ws / ".env", ws / "notes.txt")
    os.link(ws / ".env", ws / "docs" / "deep" / "er" / "README")
    os.link(ws / ".env", ws / ".git" / "objects" / "ab")
    os.link(ws / ".env", ws / "node_modules" / "pkg" / "index.js")
    os.link(ws / "secrets" / "token.txt", ws / "docs" / "t.md")
    os.link(home / ".ssh" / "id_ed25519", ws / "key.txt")
    os.link(home / ".netrc", ws / "docs" / "NETRC.txt")
    return ws


OTHER_NAMES = ("notes.txt", "docs/deep/er/README", ".git/objects/ab", "node_modules/pkg/index.js",
               "docs/t.md", "key.txt", "docs/NETRC.txt")


def build(ws: Path, home: Path) -> Confinement:
    return build_confinement((str(ws),), RULES, cwd=str(ws), home=str(home))


def test_every_other_name_of_a_denied_file_is_masked(linked: Path, home: Path) -> None:
    conf = build(linked, home)
    real = Path(os.path.realpath(linked))
    for name in OTHER_NAMES:
        assert str(real / name) in conf.mask_files, name
    assert str(real / "plain.txt") not in conf.mask_files
    assert conf.complete, conf.notes


def test_a_link_outside_the_workspace_makes_the_profile_incomplete(
        linked: Path, home: Path, tmp_path: Path) -> None:
    assert build(linked, home).complete
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.link(linked / ".env", outside / "copy")  # no event anywhere in the workspace
    conf = build(linked, home)
    assert not conf.complete
    assert any(".env (deny_read) has 1 more hard link" in note for note in conf.notes)
    os.unlink(outside / "copy")
    assert build(linked, home).complete


def test_a_denied_name_given_to_an_existing_file_masks_its_older_names(
        tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws2"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "config.json").write_text("ENV-CANARY")
    (ws / "sub").mkdir()
    first = build(ws, home)  # listings of a/ and a/b/ are now known (and reused below)
    assert first.mask_files == ()
    os.link(ws / "a" / "b" / "config.json", ws / "sub" / ".env")
    conf = build(ws, home)
    real = Path(os.path.realpath(ws))
    assert {str(real / "a/b/config.json"), str(real / "sub/.env")} <= set(conf.mask_files)


def test_links_inside_a_masked_directory_count_as_masked_names(
        tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws3"
    (ws / "secrets").mkdir(parents=True)
    (ws / ".env").write_text("ENV-CANARY")
    os.link(ws / ".env", ws / "secrets" / "env-copy")  # hidden with the directory already
    conf = build(ws, home)
    assert conf.complete, conf.notes
    assert str(Path(os.path.realpath(ws)) / "secrets") in conf.mask_dirs


def test_a_big_masked_directory_is_searched_whole_without_a_stat_per_file(
        tmp_path: Path, home: Path) -> None:
    ws = tmp_path / "ws4"
    ws.mkdir()
    cache = home / ".ssh" / "cache"  # ~/.kube/cache-like: thousands of files
    cache.mkdir()
    for i in range(5000):
        (cache / f"f{i}").write_text("x")
    (cache / "f4321").write_text("PRIVATE-KEY-CANARY")
    os.link(cache / "f4321", ws / "innocent.txt")
    conf = build(ws, home)
    assert str(Path(os.path.realpath(ws)) / "innocent.txt") in conf.mask_files
    assert conf.complete, conf.notes


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap")
def test_no_command_reads_a_denied_file_through_another_name(
        linked: Path, home: Path, tmp_path: Path) -> None:
    (linked / "show.sh").write_text("cat \"$@\"\n")
    readers = [
        "cat notes.txt", "python3 -c 'print(open(\"notes.txt\").read())'",
        "bash show.sh docs/deep/er/README", "cat docs/../notes.txt", "cat ./.git/objects/ab",
        "ln -s notes.txt via-link; cat via-link", "cat node_modules/pkg/index.js",
        "cat docs/t.md", "cat key.txt", "cat docs/NETRC.txt", "grep -r CANARY . 2>/dev/null",
        "cp notes.txt /tmp/x 2>/dev/null; cat /tmp/x", "tar -cf - . 2>/dev/null | tar -xOf -",
    ]
    for command in readers:
        done = sandbox_run(linked, home, tmp_path, command)
        shown = done.stdout + done.stderr
        assert not any(c in shown for c in CANARIES), (command, shown[-2000:])
    done = sandbox_run(linked, home, tmp_path, "cat notes.txt")
    assert done.returncode != 0
    assert "Permission denied" in done.stderr
    done = sandbox_run(linked, home, tmp_path, "cat plain.txt")
    assert (done.returncode, done.stdout) == (0, "plain\n"), done.stderr
    assert (linked / "notes.txt").read_text() == "ENV-CANARY\n"


def _mount_base() -> str | None:
    """A directory outside /tmp to mount over inside `unshare -rm`, or None when this machine
    cannot make a user and mount namespace here."""
    for base in ("/mnt", "/srv", "/media", "/opt"):
        if os.path.isdir(base):
            probe = subprocess.run(["unshare", "-rm", "mount", "-t", "tmpfs", "none", base],
                                   capture_output=True, check=False)
            return base if probe.returncode == 0 else None
    return None


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("unshare") is None,
                    reason="bubblewrap and unshare")
def test_a_bind_mount_of_the_workspace_elsewhere_shows_only_masks(
        linked: Path, home: Path, tmp_path: Path) -> None:
    """The workspace (and its parent) bound at other paths, as a container's volume or a
    `mount --bind` would: every masked name is masked there too."""
    base = _mount_base()
    if base is None:
        pytest.skip("no user and mount namespace here")
    parent = linked.parent
    setup = (f"mount -t tmpfs none {base} && mkdir {base}/ws {base}/up && "
             f"mount --bind {shlex.quote(str(linked))} {base}/ws && "
             f"mount --bind {shlex.quote(str(parent))} {base}/up")
    readers = [f"{base}/ws/.env", f"{base}/ws/notes.txt", f"{base}/ws/secrets/token.txt",
               f"{base}/up/{linked.name}/.env", f"{base}/up/{linked.name}/docs/t.md",
               f"{base}/ws/plain.txt"]
    command = "; ".join(f"cat {r}" for r in readers)
    argv = [sys.executable, "-m", "acpd", "sandbox", "run", "--cwd", str(linked), "--",
            "bash", "-c", command]
    done = subprocess.run(["unshare", "-rm", "bash", "-c", f"{setup} && exec \"$@\"", "sh",
                           *argv], capture_output=True, text=True, timeout=60,
                          env=sandbox_env(home, tmp_path), stdin=subprocess.DEVNULL)
    shown = done.stdout + done.stderr
    assert done.stdout == "plain\n", shown[-2000:]
    assert not any(c in shown for c in CANARIES), shown[-2000:]
