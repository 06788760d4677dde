"""`diagnostics` for real: ruff and mypy (from the test venv) on a tiny project through
`acpd tools run`, judged by the shell policy, capped, a missing checker warned about; cargo,
tsc and eslint where they are installed; the card's locations in the real daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.client import RecordingClient
from tests.e2e.harness import acpd, write_script

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
BIN = str(Path(sys.executable).parent)
ALLOW_CHECKERS = """[[rules]]
id = "test.checkers"
verdict = "allow"
commands = ["ruff", "mypy"]
match = ["ruff check ."]
"""


def python_project(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text('[tool.ruff]\n[tool.mypy]\nstrict = true\n')
    (root / "a.py").write_text('import os\n\n\ndef f(x):\n    return x + 1\n\n\n'
                               'y: int = "s"\n')
    return root


def config(tmp: Path, policy: str = ALLOW_CHECKERS, extra: str = "") -> Path:
    (tmp / "policy.toml").write_text(policy)
    path = tmp / "config.toml"
    path.write_text(f'[tools.shell]\npolicy_file = "{tmp / "policy.toml"}"\n'
                    f"plugin_dirs = []\n{extra}")
    return path


def run(tmp: Path, cfg: Path, args: dict[str, Any], cwd: Path, path: str | None = None,
        mode: str = "auto") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"),
           "PATH": path if path is not None else f"{BIN}:{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "acpd", "tools", "run", "diagnostics", "--args",
         json.dumps(args), "--config", str(cfg), "--data-dir", str(tmp / "data"),
         "--cwd", str(cwd), "--mode", mode],
        capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)


def test_ruff_and_mypy_on_a_real_project(tmp_path: Path) -> None:
    project = python_project(tmp_path / "proj")
    done = run(tmp_path, config(tmp_path), {}, project)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("3 diagnostics (2 errors, 1 other) from ruff, mypy"), lines
    assert "a.py:4:1: error [no-untyped-def]: Function is missing a type annotation" in lines
    assert any(line.startswith("a.py:8:10: error [assignment]:") for line in lines)
    assert "a.py:1:8: warning [F401]: `os` imported but unused" in lines
    only_ruff = run(tmp_path, config(tmp_path), {"checker": "ruff"}, project)
    assert only_ruff.stdout.startswith("1 diagnostic (0 errors, 1 other) from ruff")


def test_the_result_is_capped_and_says_so(tmp_path: Path) -> None:
    project = python_project(tmp_path / "proj")
    cfg = config(tmp_path, extra="[tools.diagnostics]\nmax_diagnostics = 2\n")
    done = run(tmp_path, cfg, {}, project)
    lines = done.stdout.splitlines()
    assert "showing the first 2 (max_diagnostics): 1 more" in lines[0]
    assert [line.split(": ")[1] for line in lines[1:3]] == ["error [no-untyped-def]",
                                                           "error [assignment]"]
    assert not any(line.startswith("a.py:1:") for line in lines)


def test_a_missing_checker_is_a_warning(tmp_path: Path) -> None:
    project = python_project(tmp_path / "proj")
    done = run(tmp_path, config(tmp_path), {"checker": "eslint"}, project, path="/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("0 diagnostics (0 errors, 0 other) from no checker")
    assert "warning: eslint: eslint is not installed; skipped" in done.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = run(tmp_path, config(tmp_path), {}, empty)
    assert "no checker is configured in this workspace" in nothing.stdout


def test_the_shell_policy_judges_the_checkers(tmp_path: Path) -> None:
    project = python_project(tmp_path / "proj")
    deny = ALLOW_CHECKERS + ('[[rules]]\nid = "test.nomypy"\nverdict = "deny"\n'
                             'commands = ["mypy"]\nmatch = ["mypy ."]\n')
    denied = run(tmp_path, config(tmp_path, deny), {}, project)
    assert denied.returncode == 1
    assert "category: PolicyBlocked" in denied.stderr
    assert "the shell policy denies it" in denied.stderr and "mypy" in denied.stderr
    ask = ('[[rules]]\nid = "test.askcheckers"\nverdict = "ask"\n'
           'commands = ["ruff", "mypy"]\nmatch = ["mypy ."]\n')
    asked = run(tmp_path, config(tmp_path, ask), {}, project)
    assert asked.returncode == 1 and "ConfirmationRequired" in asked.stderr
    assert not (project / ".mypy_cache").exists()
    hidden = run(tmp_path, config(tmp_path), {}, project, mode="read-only")
    assert hidden.returncode == 1 and "read-only" in hidden.stderr


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_cargo_check_on_a_real_crate(tmp_path: Path) -> None:
    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "t"\nversion = "0.1.0"\n'
                                      'edition = "2021"\n\n[dependencies]\n')
    (crate / "src" / "main.rs").write_text('fn main() {\n    let x: i32 = "s";\n}\n')
    cfg = config(tmp_path, "", extra=f'trusted_workspaces = ["{crate}"]\n')
    done = run(tmp_path, cfg, {}, crate)
    assert done.returncode == 0, done.stderr
    assert "src/main.rs:2:18: error [E0308]: mismatched types" in done.stdout, done.stdout


@pytest.mark.skipif(shutil.which("tsc") is None, reason="tsc is not installed on PATH")
def test_tsc_on_a_real_project(tmp_path: Path) -> None:
    project = tmp_path / "ts"
    (project / "src").mkdir(parents=True)
    (project / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}, '
                                           '"include": ["src"]}')
    (project / "src" / "app.ts").write_text('const n: number = "s";\nexport {};\n')
    allow = (
        '[[rules]]\nid = "test.tsc"\nverdict = "allow"\ncommands = ["tsc"]\n'
        'match = ["tsc --noEmit"]\n')
    done = run(tmp_path, config(tmp_path, allow), {"checker": "tsc"}, project)
    assert "src/app.ts:1:7: error [TS2322]" in done.stdout, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("eslint") is None, reason="eslint is not installed on PATH")
def test_eslint_on_a_real_project(tmp_path: Path) -> None:
    project = tmp_path / "js"
    (project / "src").mkdir(parents=True)
    (project / "eslint.config.mjs").write_text(
        'export default [{ files: ["src/**/*.js"], rules: { eqeqeq: "warn" } }];\n')
    (project / "src" / "app.js").write_text("if (1 == 2) { console.log('x'); }\n")
    allow = ('[[rules]]\nid = "test.eslint"\nverdict = "allow"\ncommands = ["eslint"]\n'
             'match = ["eslint ."]\n')
    done = run(tmp_path, config(tmp_path, allow), {"checker": "eslint"}, project)
    assert "src/app.js:1:7: warning [eqeqeq]" in done.stdout, done.stdout + done.stderr


@pytest.mark.anyio
async def test_the_card_carries_the_diagnostics_locations(
        tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the checkers run in the client's terminal, which the client spawns with its own PATH
    monkeypatch.setenv("PATH", f"{BIN}:{os.environ.get('PATH', '')}")
    project = python_project(tmp_path / "ws")
    cfg = config(tmp_path)
    cfg.write_text('[agent]\ndefault_mode = "auto"\n' + cfg.read_text())
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "diagnostics", "arguments": {}}]}, {"text": "done"}])
    client = RecordingClient()
    env = {"ACPD_CONFIG": str(cfg)}
    async with acpd(tmp_path, data_dir=data_dir, workspace=project, client=client,
                    script=script, env=env) as daemon:
        session = await daemon.open_session()
        assert await daemon.prompt(session, "check") == "end_turn"
        card = client.tool_calls()[-1]
        final = client.final(card["toolCallId"])
        assert final["status"] == "completed", final
        located = {(loc["path"], loc.get("line")) for loc in final["locations"]}
        a_py = str(project / "a.py")
        assert {(a_py, 4), (a_py, 8), (a_py, 1)} <= located
        assert final["rawOutput"]["count"] == 3
        assert final["rawOutput"]["diagnostics"][0]["rule"] == "no-untyped-def"
