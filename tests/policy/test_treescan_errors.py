"""A tree a command reads recursively is scanned for deny_read files to its end: an entry
that cannot be examined (a symlink loop: `is_dir` raises ELOOP) is passed over, and the
scan goes on to the rest of its directory, where `.env` may be."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy

LOOPS = 300
"""Enough that, in any directory order, a loop comes before `.env` (the scan once stopped at
the first entry that raised)."""


@pytest.fixture()
def ws(tmp_path: Path) -> str:
    work = tmp_path / "ws"
    (work / "deep").mkdir(parents=True)
    for n in range(LOOPS):
        os.symlink(f"loop{n}", work / "deep" / f"loop{n}")  # each names itself: ELOOP
    (work / "deep" / ".env").write_text("TOKEN=hunter2\n")
    (work / "deep" / "a.txt").write_text("a\n")
    return os.path.realpath(work)


@pytest.mark.parametrize("cmd", [
    "grep -r --include='*' hunter2 .",
    "grep -r --include=* hunter2 deep",
    "grep -rn --exclude='*.md' hunter2 .",
    "rg -uu hunter2 deep",
    "rg --hidden --no-ignore hunter2",
])
def test_entries_that_cannot_be_examined_do_not_hide_a_denied_file(
    default: CompiledPolicy, ws: str, cmd: str
) -> None:
    d = default.judge(cmd, cwd=ws)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


def test_the_scan_still_allows_a_tree_with_nothing_denied(
    default: CompiledPolicy, ws: str
) -> None:
    os.unlink(os.path.join(ws, "deep", ".env"))
    d = default.judge("grep -r --include='*' hunter2 deep", cwd=ws)
    assert d.verdict == "allow", d
