"""Symlinks inside a directory `deny_read` masks point somewhere the mask does not cover: what
they point to is masked too (red-team 12 F8). With GNU stow and an existing `~/.aws`, stow
links single files into the dotfiles repository (`~/.aws/credentials ->
~/dotfiles/aws/credentials`); with the dotfiles repository as the workspace, masking `~/.aws`
alone left `cat aws/credentials` reading the secret."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from acpd.sandbox.build import build_confinement
from acpd.sandbox.macos import seatbelt_profile
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules
from tests.sandbox.conftest import sandbox_env, sandbox_run

RULES = PathRules(deny_read=("~/.aws/**", "~/.ssh/**", "~/.config/gh/*.yml", "**/.env"))
CANARIES = ("DOT-AWS-CANARY", "DOT-SSO-CANARY", "DOT-CHAIN-CANARY", "DOT-HOP-CANARY",
            "DOT-SSH-CANARY", "DOT-GH-CANARY", "DOT-DEEP-CANARY")


@pytest.fixture
def stowed(tmp_path: Path) -> tuple[Path, Path]:
    """(dotfiles workspace, HOME): a real `~/.aws` holding links into the workspace (a file,
    a directory, a chain through the workspace, a chain through a directory outside it), a
    real `~/.aws/cli` holding one more; `~/.ssh` itself a link into the workspace; a gh
    config file (matched by a glob) linked in."""
    dot = tmp_path / "dotfiles"
    home = tmp_path / "h"
    other = tmp_path / "elsewhere"
    for d in (dot / "aws" / "sso" / "cache", dot / "ssh", dot / "gh", dot / "deep",
              home / ".aws" / "cli", home / ".config" / "gh", other):
        d.mkdir(parents=True)
    (dot / "aws" / "credentials").write_text("aws_secret=DOT-AWS-CANARY\n")
    (dot / "aws" / "sso" / "cache" / "token.json").write_text("DOT-SSO-CANARY\n")
    (dot / "aws" / "config-final").write_text("DOT-CHAIN-CANARY\n")
    (dot / "aws" / "hop-final").write_text("DOT-HOP-CANARY\n")
    (dot / "ssh" / "id_ed25519").write_text("DOT-SSH-CANARY\n")
    (dot / "gh" / "hosts.yml").write_text("DOT-GH-CANARY\n")
    (dot / "deep" / "cli.json").write_text("DOT-DEEP-CANARY\n")
    (dot / "README.md").write_text("my dotfiles\n")
    (dot / "aws" / "README").write_text("aws notes\n")
    os.symlink(dot / "aws" / "credentials", home / ".aws" / "credentials")
    os.symlink("../../dotfiles/aws/sso", home / ".aws" / "sso")  # relative, a directory
    os.symlink("aws/config-final", dot / "config-link")  # chain: ~/.aws/config -> link -> file
    os.symlink(dot / "config-link", home / ".aws" / "config")
    os.symlink(dot / "aws" / "hop-final", other / "hop")  # chain through a directory outside
    os.symlink(other / "hop", home / ".aws" / "hop")
    os.symlink(dot / "deep" / "cli.json", home / ".aws" / "cli" / "cli.json")
    os.symlink(dot / "ssh", home / ".ssh")  # the pattern's own prefix is a link
    os.symlink(dot / "gh" / "hosts.yml", home / ".config" / "gh" / "hosts.yml")
    os.symlink(tmp_path / "missing", home / ".aws" / "dangling")
    return dot, home


TARGET_FILES = ("aws/credentials", "aws/config-final", "aws/hop-final", "deep/cli.json",
                "gh/hosts.yml")
TARGET_DIRS = ("aws/sso", "ssh")


def build(dot: Path, home: Path, rules: PathRules = RULES) -> Confinement:
    return build_confinement((str(dot),), rules, cwd=str(dot), home=str(home))


def test_what_links_in_a_masked_directory_point_to_is_masked(stowed: tuple[Path, Path]) -> None:
    dot, home = stowed
    conf = build(dot, home)
    real = Path(os.path.realpath(dot))
    for name in TARGET_FILES:
        assert str(real / name) in conf.mask_files, (name, conf.mask_files)
    for name in TARGET_DIRS:
        assert str(real / name) in conf.mask_dirs, (name, conf.mask_dirs)
    assert str(Path(os.path.realpath(home)) / ".aws") in conf.mask_dirs
    for benign in ("README.md", "aws/README", "config-link", "aws"):
        assert str(real / benign) not in (*conf.mask_files, *conf.mask_dirs), benign
    assert conf.complete, conf.notes


def test_the_macos_profile_denies_the_same_targets(stowed: tuple[Path, Path]) -> None:
    dot, home = stowed
    text = seatbelt_profile(build(dot, home), "/tmp/acpd-x")
    real = Path(os.path.realpath(dot))
    assert f'(literal "{real / "aws/credentials"}")' in text
    assert f'(subpath "{real / "aws/sso"}")' in text


def test_a_link_to_a_directory_holding_the_workspace_is_not_masked_and_says_so(
        stowed: tuple[Path, Path], tmp_path: Path) -> None:
    """Masking `/` or a parent of the workspace would hide the workspace: the profile is
    incomplete instead, and the other masks all stay (a mask of `/` used to stand for all of
    them before it was dropped)."""
    dot, home = stowed
    os.symlink("/", home / ".aws" / "root")
    conf = build(dot, home)
    assert not conf.complete
    assert any("holds the workspace" in note for note in conf.notes), conf.notes
    assert "/" not in conf.mask_dirs
    assert str(Path(os.path.realpath(home)) / ".aws") in conf.mask_dirs
    assert str(Path(os.path.realpath(dot)) / "aws/credentials") in conf.mask_files


def test_a_denied_link_to_the_root_keeps_every_other_mask(tmp_path: Path) -> None:
    """`ln -s / x.pem` in the workspace (a script can make it): the walk masks a denied link's
    target, here `/`. That mask is dropped (it holds the workspace) and the profile says it is
    incomplete; `~/.ssh`, /run and the rest stay masked."""
    ws, home = tmp_path / "ws", tmp_path / "h"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id").write_text("KEY")
    ws.mkdir()
    os.symlink("/", ws / "x.pem")
    os.symlink(str(tmp_path), ws / "y.key")
    conf = build_confinement((str(ws),), PathRules(deny_read=("**/*.pem", "**/*.key",
                                                              "~/.ssh/**")),
                             cwd=str(ws), home=str(home))
    assert str(Path(os.path.realpath(home)) / ".ssh") in conf.mask_dirs, conf.mask_dirs
    assert "/" not in conf.mask_dirs
    assert not conf.complete
    assert any("holding it" in note for note in conf.notes), conf.notes


def test_links_back_into_masked_directories_end(stowed: tuple[Path, Path]) -> None:
    dot, home = stowed
    os.symlink(home / ".aws", home / ".aws" / "self")  # back to the masked directory
    os.symlink(dot / "aws" / "sso", dot / "aws" / "sso" / "cache" / "loop")
    conf = build(dot, home)
    assert conf.complete, conf.notes
    assert str(Path(os.path.realpath(dot)) / "aws/sso") in conf.mask_dirs


def test_a_hard_link_of_a_link_target_is_masked_too(stowed: tuple[Path, Path]) -> None:
    dot, home = stowed
    os.link(dot / "aws" / "credentials", dot / "notes.txt")
    conf = build(dot, home)
    assert str(Path(os.path.realpath(dot)) / "notes.txt") in conf.mask_files
    assert conf.complete, conf.notes


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap")
def test_no_command_reads_a_secret_stowed_into_the_workspace(
        stowed: tuple[Path, Path], tmp_path: Path) -> None:
    """The default policy (`~/.aws/**`, `~/.ssh/**`), real bubblewrap, the dotfiles
    repository as the workspace."""
    dot, home = stowed
    env = sandbox_env(home, tmp_path)
    readers = [
        "cat aws/credentials", "cat aws/sso/cache/token.json", "cat aws/config-final",
        "cat config-link", "cat aws/hop-final", "cat ssh/id_ed25519", "cat deep/cli.json",
        "cat ~/.aws/credentials ~/.aws/config ~/.aws/hop ~/.ssh/id_ed25519",
        f"cat {tmp_path}/elsewhere/hop",
        "cp aws/credentials /tmp/c 2>/dev/null; cat /tmp/c",
        "cp -r aws /tmp/a 2>/dev/null; cat /tmp/a/credentials /tmp/a/sso/cache/token.json",
        "python3 -c 'print(open(\"aws/credentials\").read())'",
        "python3 -c 'print(open(\"ssh/id_ed25519\").read())'",
        "grep -r CANARY . 2>/dev/null", "grep -r CANARY ~ 2>/dev/null",
        "tar -cf - . 2>/dev/null | tar -xOf - 2>/dev/null",
    ]
    for command in readers:
        done = sandbox_run(dot, home, tmp_path, command, env=env)
        shown = done.stdout + done.stderr
        assert not any(c in shown for c in CANARIES), (
            command, shown[-2000:])
    done = sandbox_run(dot, home, tmp_path, "cat aws/credentials", env=env)
    assert done.returncode != 0
    assert "Permission denied" in done.stderr
    done = sandbox_run(dot, home, tmp_path, "cat README.md aws/README && ls aws", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("my dotfiles\naws notes\n"), done.stdout
    assert "credentials" in done.stdout  # the name is there, its content is not
    assert (dot / "aws" / "credentials").read_text() == "aws_secret=DOT-AWS-CANARY\n"
