"""Glob words are expanded on disk, per decision, the way bash would, and their matches are
judged (policy/globs.py): `ls *` is fine in a workspace without denied files, `cat *` is not
in one with a `.env` under dotglob, `cat */*` reaches `secrets/k`."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from acpd.policy import globs
from acpd.policy.decision import RANK
from acpd.policy.engine import CompiledPolicy


@pytest.fixture()
def ws(tmp_path: Path) -> str:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x\n")
    (tmp_path / "README.md").write_text("r\n")
    (tmp_path / "Notes.txt").write_text("n\n")
    (tmp_path / ".env").write_text("TOKEN=1\n")
    return os.path.realpath(tmp_path)


@pytest.fixture()
def with_secrets(ws: str) -> str:
    os.makedirs(os.path.join(ws, "secrets"))
    Path(ws, "secrets", "k").write_text("key\n")
    return ws


BENIGN = ["ls *", "du -sh *", "cat *", "wc -l *", "ls -la *", "stat *", "head -n1 *.md",
          "grep x *", "cat src/*", "ls */", "wc -l ./*", "cat [RN]*", "file ?EADME.md",
          "ls *.md src/*.py"]


@pytest.mark.parametrize("cmd", BENIGN)
def test_globs_over_harmless_files_are_allowed(default: CompiledPolicy, ws: str,
                                               cmd: str) -> None:
    assert default.judge(cmd, cwd=ws).verdict == "allow", cmd


@pytest.mark.parametrize("cmd", ["ls *", "du -sh *", "cat *", "ls -d */"])
def test_naming_a_denied_directory_is_not_reading_it(default: CompiledPolicy,
                                                     with_secrets: str, cmd: str) -> None:
    assert default.judge(cmd, cwd=with_secrets).verdict == "allow", cmd


@pytest.mark.parametrize("cmd", ["cat */*", "cat s*/k", "head secrets/*", "cat ./*/?",
                                 "wc -c */[a-k]", "grep -r x *", "rg x *", "cp */* /tmp/x"])
def test_globs_that_reach_denied_files(default: CompiledPolicy, with_secrets: str,
                                       cmd: str) -> None:
    d = default.judge(cmd, cwd=with_secrets)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


@pytest.mark.parametrize("cmd", ["cat .e*", "cat .en?", "cat .[e]nv", "ls -d .*", "cat ./.e*",
                                 "shopt -s dotglob; cat *", "cat $(echo) *",
                                 "GLOBIGNORE=x; cat *", "tail -n1 src/../.e*"])
def test_globs_that_match_a_denied_dot_file(default: CompiledPolicy, ws: str,
                                            cmd: str) -> None:
    d = default.judge(cmd, cwd=ws)
    assert RANK[d.verdict] >= RANK["ask"], (cmd, d)


def test_without_dotglob_star_skips_dot_files(ws: str) -> None:
    assert globs.expand("*", [ws], globs.GlobState()) == [("Notes.txt", "README.md", "src")]
    assert ".env" in globs.expand("*", [ws], globs.GlobState(dotglob=True))[0]
    assert globs.expand(".*", [ws], globs.GlobState())[0] == (".env",)
    assert globs.expand(".*", [ws], globs.GlobState(dots=True))[0] == (".", "..", ".env")


@pytest.mark.parametrize("pattern", ["*", ".*", "*.md", "s*/*", "[RN]*", "[!R]*", "[^R]*",
                                     "?EADME.md", "*/", "src/*.py", "nothing*", "*[[:upper:]]*",
                                     "[]x]*", "\\R*"])
def test_expansion_agrees_with_bash(ws: str, pattern: str) -> None:
    """bash (dotglob off, nullglob off) prints the same words, in byte order under LC_ALL=C."""
    out = subprocess.run(["bash", "-c", f"printf '%s\\n' {pattern}"], cwd=ws,
                         capture_output=True, text=True, check=True,
                         env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout.splitlines()
    got = globs.expand(pattern, [ws], globs.GlobState())
    assert got is not None
    if got == [(pattern,)]:  # matched nothing: passed as written (bash strips the quoting)
        assert len(out) == 1
    elif "[:" in pattern:  # a character class is read as any one character: a superset
        assert set(out) <= set(got[0]), pattern
    else:
        assert list(got[0]) == out, pattern


def test_both_sort_orders_are_judged(ws: str) -> None:
    got = globs.expand("*", [ws], globs.GlobState())
    assert got is not None
    assert sorted(got[-1], key=str.casefold) == list(got[-1])


def test_too_many_matches_asks(default: CompiledPolicy, tmp_path: Path) -> None:
    for i in range(globs.MAX_MATCHES + 5):
        (tmp_path / f"f{i}").write_text("")
    d = default.judge("cat f*", cwd=str(tmp_path))
    assert d.verdict == "ask" and "path.glob-too-wide" in d.rules


def test_extglob_forms_ask(default: CompiledPolicy, ws: str) -> None:
    d = default.judge("shopt -s extglob; cat @(x|.env)", cwd=ws)
    assert RANK[d.verdict] >= RANK["ask"]


def test_a_quoted_glob_is_a_literal_name(default: CompiledPolicy, with_secrets: str) -> None:
    assert default.judge("cat '*'", cwd=with_secrets).verdict == "allow"
    assert default.judge('ls "*/"', cwd=with_secrets).verdict == "allow"


def test_a_glob_in_cd_is_followed(default: CompiledPolicy, ws: str) -> None:
    os.makedirs(os.path.join(ws, ".git"))
    for cmd in ("cd .gi* && echo x > config", "cd .g?t && echo x > config",
                "builtin cd .git && echo x > config"):
        d = default.judge(cmd, cwd=ws)
        assert d.verdict == "deny", (cmd, d)


def test_a_redirect_glob_is_expanded(default: CompiledPolicy, ws: str) -> None:
    d = default.judge("cat README.md > .e*", cwd=ws)
    assert d.verdict == "deny", d
    assert default.judge("cat README.md > N*", cwd=ws).verdict == "allow"


def test_a_loop_over_a_glob_is_judged_on_its_matches(default: CompiledPolicy, ws: str) -> None:
    assert default.judge('for f in *; do cat "$f"; done', cwd=ws).verdict == "allow"
    assert default.judge("for f in *.md src/*; do wc -l $f; done", cwd=ws).verdict == "allow"
    for cmd in ('for f in .e*; do cat "$f"; done', "for f in ./.[e]*; do head $f; done"):
        assert default.judge(cmd, cwd=ws).verdict == "deny", cmd


@pytest.mark.parametrize("count", [16, 17, 40])
def test_loop_values_past_the_bound_are_unknown_not_dropped(default: CompiledPolicy, ws: str,
                                                           count: int) -> None:
    words = " ".join(str(i) for i in range(count))
    d = default.judge(f"for f in {words} .env; do cat $f; done", cwd=ws)
    assert RANK[d.verdict] >= RANK["ask"], d


def test_component_escape_is_re_escape() -> None:
    """The per-character escape the component regex uses is re.escape's, for every
    character."""
    for code in range(0x110000):
        assert globs._escaped(chr(code)) == re.escape(chr(code)), hex(code)
