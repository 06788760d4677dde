"""The workspace walk reuses listings a file watcher vouches for: whatever changes, a warm
walk must find exactly what a cold one finds (masks, read-only paths, git directories)."""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from acpd.sandbox import walk, watched
from acpd.sandbox.build import build_confinement
from acpd.sandbox.profile import Confinement
from acpd.sandbox.rules import PathRules
from tests.sandbox.conftest import git_dir

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")

RULES = PathRules(deny_read=("**/.env", "**/secrets/**", "**/*.pem", "**/id_rsa*"),
                  deny_write=(".git/hooks/**", "**/locked"))
NAMES = (".env", "a.txt", "key.pem", "id_rsa", "secrets", "locked", "HEAD", "config",
         "objects", "hooks", "sub", "b.py")


def findings(conf: Confinement) -> tuple[object, ...]:
    return (sorted(conf.mask_files), sorted(conf.mask_dirs), sorted(conf.read_only),
            sorted(conf.pinned), conf.complete)


def cold(ws: Path, home: str) -> tuple[object, ...]:
    with watched.lock:
        walk._listings.clear()
        watched.forget()
    return findings(build_confinement((str(ws),), RULES, cwd=str(ws), home=home))


def mutate(rnd: random.Random, ws: Path) -> None:
    dirs = [ws, *(p for p in ws.rglob("*") if p.is_dir() and not p.is_symlink())]
    place = rnd.choice(dirs)
    name = rnd.choice(NAMES)
    target = place / name
    op = rnd.randrange(7)
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir() and op < 3:
        shutil.rmtree(target)
    elif op == 3:
        target.mkdir(exist_ok=True)
    elif op == 4 and len(dirs) > 1:
        moved = rnd.choice(dirs[1:])
        if not str(place).startswith(str(moved)) and not target.exists():
            os.rename(moved, target)
    elif op == 5 and not target.exists():
        os.symlink(rnd.choice(["a.txt", "/etc/hostname", "secrets"]), target)
    elif not target.exists():
        target.write_text(str(rnd.random()))


def test_a_warm_walk_finds_what_a_cold_walk_finds_after_any_change(
    tmp_path: Path, home: Path
) -> None:
    rnd = random.Random(2615)
    ws = tmp_path / "ws"
    git_dir(ws / ".git")
    (ws / "pkg" / "deep").mkdir(parents=True)
    build_confinement((str(ws),), RULES, cwd=str(ws), home=str(home))
    reused = 0
    for step in range(120):
        for _ in range(rnd.randint(0, 3)):
            mutate(rnd, ws)
        warm = findings(build_confinement((str(ws),), RULES, cwd=str(ws), home=str(home)))
        reused += watched.trusted(str(ws / "pkg" / "deep"))
        assert warm == cold(ws, str(home)), step
    assert reused > 0 or not (ws / "pkg" / "deep").is_dir()


def test_a_trusted_listing_is_not_reused_for_a_directory_replaced_under_it(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "x.txt").write_text("x")
    build_confinement((str(ws),), RULES, cwd=str(ws), home=str(home))
    assert watched.trusted(str(ws / "a" / "b"))
    shutil.rmtree(ws / "a" / "b")
    (ws / "a" / "b").mkdir()
    (ws / "a" / "b" / ".env").write_text("SECRET")
    conf = build_confinement((str(ws),), RULES, cwd=str(ws), home=str(home))
    assert str(ws / "a" / "b" / ".env") in conf.mask_files


def test_a_whole_walk_is_reused_only_while_nothing_under_the_root_changed(
    tmp_path: Path, home: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b" / "c").mkdir(parents=True)
    (ws / "a" / "b" / "c" / "x.txt").write_text("x")

    def masks() -> tuple[str, ...]:
        return build_confinement((str(ws),), RULES, cwd=str(ws), home=str(home)).mask_files

    assert masks() == ()
    assert str(ws) in walk._wholes  # every listing was watched: the next walk reuses it
    assert masks() == ()
    for place in ("a/b/c", "a", ""):  # deep, shallow, at the root
        secret = ws / place / ".env"
        secret.write_text("SECRET")
        assert str(secret) in masks(), place
        secret.unlink()
        assert masks() == ()
    os.rename(ws, tmp_path / "old")  # the root path now names another directory
    (ws / "d").mkdir(parents=True)
    (ws / "d" / ".env").write_text("SECRET")
    assert masks() == (str(ws / "d" / ".env"),)
    assert masks() == (str(ws / "d" / ".env"),)
