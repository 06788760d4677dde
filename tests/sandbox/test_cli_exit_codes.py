"""`acpd sandbox run` passes exit codes through, and a program that cannot run gets the
shell's codes (127 not found, 126 not executable), not bubblewrap's 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.conftest import sandbox_env

pytestmark = pytest.mark.slow  # each case starts `acpd sandbox run` (a Python process)


def run(ws: Path, home: Path, tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "acpd", "sandbox", "run", "--cwd", str(ws), "--", *command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          env=sandbox_env(home, tmp_path), stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("command", "code", "words"), [
    (["no-such-program-xyz"], 127, "command not found"),
    (["./no-such-file"], 127, "No such file or directory"),
    (["./plain.txt"], 126, "Permission denied"),
    (["bash", "-c", "exit 7"], 7, ""),
    (["true"], 0, ""),
])
def test_exit_codes(ws: Path, home: Path, tmp_path: Path, command: list[str], code: int,
                    words: str) -> None:
    (ws / "plain.txt").write_text("not a program\n")
    done = run(ws, home, tmp_path, *command)
    assert done.returncode == code, done.stderr
    assert words in done.stderr
