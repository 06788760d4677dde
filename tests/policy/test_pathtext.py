"""acpd.policy.pathtext gives the answers posixpath gives (the judge uses it in its place)."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from acpd.policy import pathtext

# Paths of slashes, dots and a few letters: where separators, empty and `.` parts meet.
paths = st.text(alphabet="/.ab~ ", max_size=12)


@given(paths)
def test_dirname(p: str) -> None:
    assert pathtext.dirname(p) == posixpath.dirname(p)


@given(paths)
def test_basename(p: str) -> None:
    assert pathtext.basename(p) == posixpath.basename(p)


@given(paths)
def test_normpath(p: str) -> None:
    assert pathtext.normpath(p) == posixpath.normpath(p)


@given(paths, st.lists(paths, max_size=4))
def test_join(a: str, rest: list[str]) -> None:
    assert pathtext.join(a, *rest) == posixpath.join(a, *rest)


def test_edges() -> None:
    for p in ("", "/", "//", "///a", "a", "a/", "/a/b/", "//a//b//", ".", "..", "/.."):
        assert pathtext.dirname(p) == posixpath.dirname(p)
        assert pathtext.basename(p) == posixpath.basename(p)
        assert pathtext.join(p, "x") == posixpath.join(p, "x")
        assert pathtext.join("x", p) == posixpath.join("x", p)
        assert pathtext.normpath(p) == posixpath.normpath(p)
    assert pathtext.join("a") == posixpath.join("a")


def test_file_tests(tmp_path: Path) -> None:
    """isdir/isfile/islink/lexists answer as os.path's do, on every kind of entry and on
    paths that cannot be stat'ed (missing, a NUL, too long, through a file)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    (tmp_path / "to-d").symlink_to("d")
    (tmp_path / "to-f").symlink_to("f")
    (tmp_path / "dangling").symlink_to("missing")
    (tmp_path / "loop").symlink_to("loop")
    os.mkfifo(tmp_path / "fifo")
    names = ["d", "f", "to-d", "to-f", "dangling", "loop", "fifo", "missing", "f/under",
             "d/", "to-d/", "f/", "a\x00b", "x" * 5000]
    cases = [str(tmp_path / n) for n in names] + ["", "/", "/dev/null", "."]
    for p in cases:
        assert pathtext.isdir(p) == os.path.isdir(p), p
        assert pathtext.isfile(p) == os.path.isfile(p), p
        assert pathtext.islink(p) == os.path.islink(p), p
        assert pathtext.lexists(p) == os.path.lexists(p), p
