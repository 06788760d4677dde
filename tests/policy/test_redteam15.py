"""Red-team 15 (the ten-minute attack after session 12): wrappers that write a file of their own.

GNU time, strace and ltrace were read with a plain option walk that knew neither getopt's
clusters nor its long-option prefixes: in `time -ao .git/config ls` the walk took `-ao` for a
flag and `.git/config` for the command (a workspace script: allowed when trusted), while time
appends to .git/config, in a format `-f` chooses (git then runs what it says). They now have
option tables like every other wrapper: clusters and prefixes read as getopt reads them, the
output file judged as a write, an option the table does not know asks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acpd.policy.engine import CompiledPolicy
from tests.policy import test_redteam6_more as rt6
from tests.policy.test_redteam6_more import bash, judge

home = rt6.home
ws = rt6.ws

WRITES_GIT_CONFIG = [
    "\\time -ao .git/config ls", "/usr/bin/time -f '[core]' -ao .git/config true",
    "command time -qo .git/config ls", "env time --outp .git/config ls",
    "\\time --app --out .git/config ls", "time -vao.git/config ls",
    "strace -fo .git/config ls", "strace --output .git/config ls",
    "strace -qqfo .git/hooks/pre-commit ls", "ltrace -So .git/config ls",
    "nice time -ao .git/config ls", "timeout 5 strace -fo .git/config ls",
]


@pytest.mark.parametrize("cmd", WRITES_GIT_CONFIG)
def test_a_wrappers_own_output_file_is_a_write(default: CompiledPolicy, ws: Path, home: Path,
                                                cmd: str) -> None:
    for trust in ("provisional", "trusted"):
        verdict, rules = judge(default, ws, home, cmd, trust=trust)
        assert verdict == "deny", (cmd, trust, rules)


@pytest.mark.parametrize("cmd", [
    "strace --out=.git/config ls",  # --output or --output-separately: getopt refuses it too
    "strace -Epath=x ls",  # the traced command's environment
    "ltrace -u root ls", "time --no-such-option ls",
])
def test_what_a_wrappers_table_does_not_allow_asks(default: CompiledPolicy, ws: Path,
                                                    home: Path, cmd: str) -> None:
    assert judge(default, ws, home, cmd, trust="trusted")[0] != "allow", cmd


@pytest.mark.parametrize("cmd", [
    "time -p ls", "time ls -la", "\\time -v ls", "/usr/bin/time -f %e ls", "strace -f ls",
    "strace -e trace=openat -o trace.txt ls", "ltrace -c ls", "time -o timing.txt ls",
])
def test_ordinary_timing_and_tracing_still_run(default: CompiledPolicy, ws: Path, home: Path,
                                               cmd: str) -> None:
    assert judge(default, ws, home, cmd, trust="trusted")[0] == "allow", cmd


@pytest.mark.skipif(shutil.which("time") is None, reason="GNU time is not installed")
def test_the_attack_is_real(ws: Path, home: Path) -> None:
    before = (ws / ".git" / "config").read_text()
    bash(ws, home, WRITES_GIT_CONFIG[1])
    assert (ws / ".git" / "config").read_text() == before + "[core]\n"
