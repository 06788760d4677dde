"""Red-team 6, A4: the sandbox-only allows (scripts, builds, unknown options) hold only when
the profile built for the command enforces every path rule. An incomplete profile (a denied
file's hard link outside the roots, the walk's bound, more masks than bubblewrap takes) gets
the unsandboxed verdict, with a reason naming the gap; decoy files do not stop every command
(bubblewrap's argument limit), and a directory of nothing but denied files is one mask."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acpd.policy.decision import Decision
from acpd.sandbox.status import sandbox_status
from acpd.tools.shellpolicy import ShellPolicies, ShellPolicySettings
from tests.sandbox.conftest import sandbox_env

pytestmark = pytest.mark.skipif(
    not (sandbox_status().available and sandbox_status().kind == "bwrap"),
    reason="needs bubblewrap")

SCRIPT = "printf 'cat packages/api/.env\\n' > r.sh; bash r.sh"


def _judge(ws: Path, command: str) -> Decision:
    async def run() -> Decision:
        shell = ShellPolicies(ShellPolicySettings())
        return await shell.judge(command, cwd=str(ws), roots=(str(ws),))

    return anyio.run(run)


def _sandbox_run(ws: Path, tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "acpd", "sandbox", "run", "--cwd", str(ws), "--",
            "bash", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          env=sandbox_env(home, tmp_path), stdin=subprocess.DEVNULL)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "packages" / "api").mkdir(parents=True)
    (ws / "packages" / "api" / ".env").write_text("DB_PASS=CANARY_DEEP_ENV\n")
    (ws / "README.md").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return Path(os.path.realpath(ws))


def test_complete_profile_keeps_the_sandbox_allow(ws: Path) -> None:
    d = _judge(ws, SCRIPT)
    assert d.verdict == "allow", d


def test_hard_link_outside_the_roots_asks(ws: Path, tmp_path: Path) -> None:
    os.link(ws / "packages" / "api" / ".env", tmp_path / "notes.txt")
    d = _judge(ws, SCRIPT)
    assert d.verdict == "ask" and "sandbox.incomplete" in d.rules, d
    assert any("hard link" in r for r in d.reasons), d
    assert _judge(ws, "cat README.md").verdict == "allow"  # modelled: no sandbox needed
    assert _judge(ws, "make").verdict == "ask"


@pytest.mark.slow
def test_walk_bound_asks_and_the_file_past_it_is_what_a_script_would_read(
        ws: Path, tmp_path: Path) -> None:
    from acpd.sandbox.build import WALK_LIMIT

    many = ws / "node_modules" / "pkg"
    many.mkdir(parents=True)
    for n in range(WALK_LIMIT + 500):
        (many / f"f{n}").touch()
    run = _sandbox_run(ws, tmp_path, "cat packages/api/.env; true")
    if "CANARY_DEEP_ENV" not in run.stdout:
        pytest.skip("the walk reached the file before its bound (directory order)")
    d = _judge(ws, SCRIPT)
    assert d.verdict == "ask" and "sandbox.incomplete" in d.rules, d
    assert any("walk stopped" in r for r in d.reasons), d


@pytest.mark.slow
def test_a_directory_of_decoys_is_one_mask(ws: Path, tmp_path: Path) -> None:
    decoys = ws / "certs"
    decoys.mkdir()
    for n in range(10_000):
        (decoys / f"d{n}.pem").write_text(f"DECOY_{n}\n")
    run = _sandbox_run(ws, tmp_path, "cat README.md; cat certs/d7.pem; ls certs | wc -l")
    assert "hello" in run.stdout, run.stderr
    assert "DECOY_7" not in run.stdout
    assert _judge(ws, SCRIPT).verdict == "allow"


@pytest.mark.slow
def test_scattered_decoys_do_not_stop_every_command(ws: Path, tmp_path: Path) -> None:
    for n in range(3_000):
        d = ws / "pk" / f"p{n}"
        d.mkdir(parents=True)
        (d / "k.pem").write_text(f"DECOY_{n}\n")
        (d / "index.js").write_text("x\n")
    run = _sandbox_run(ws, tmp_path, "cat README.md")
    assert run.returncode == 0 and "hello" in run.stdout, run.stderr
    d = _judge(ws, SCRIPT)
    assert d.verdict == "ask" and "sandbox.incomplete" in d.rules, d
    assert any("deny_read matches" in r for r in d.reasons), d
