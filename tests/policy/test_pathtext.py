"""acpd.policy.pathtext gives the strings posixpath gives (the judge uses it in its place)."""

from __future__ import annotations

import posixpath

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
