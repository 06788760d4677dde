"""`acpd lsp` as a command: bad configuration ends it with a reason, stdin EOF ends it, and
nothing but protocol reaches stdout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.harness import REPO


def _lsp(tmp_path: Path, config: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "config.toml"
    path.write_text(config)
    return subprocess.run(
        [sys.executable, "-m", "acpd", "lsp", "--config", str(path), "--data-dir",
         str(tmp_path / "data")], input=stdin, capture_output=True, timeout=120, cwd=REPO,
    )


def test_a_bad_config_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    done = _lsp(tmp_path, "[tools\nbroken = \n", b"")
    assert done.returncode == 2
    assert done.stderr.decode().startswith("acpd: ")
    assert b"Traceback" not in done.stderr and done.stdout == b""


def test_stdin_eof_ends_the_server_and_stdout_carries_only_frames(tmp_path: Path) -> None:
    body = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},'
            b'"processId":null,"rootUri":null}}')
    done = _lsp(tmp_path, "", b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"Content-Length: ")
    assert b'"id":1' in done.stdout.replace(b" ", b"") and b"acpd" in done.stdout
