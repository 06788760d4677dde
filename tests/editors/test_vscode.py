"""The VS Code extension (editors/vscode): compiled with its own tsc, its core (ACP client,
tool status model, terminal bookkeeping; no `vscode` import) run with node's test runner
against the real `acpd serve` with a scripted model, and the .vsix packaged by @vscode/vsce.

scripts/test runs `npm ci` in editors/vscode (as for tests/e2e/ts); the fixture repeats it only
when node_modules is missing or older than package-lock.json, so a direct pytest run works too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "editors" / "vscode"
BIN = EXT / "node_modules" / ".bin"

pytestmark = pytest.mark.node


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=EXT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "ACPD_TEST_PYTHON": sys.executable})


@pytest.fixture(scope="module")
def built() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("Node.js and npm are needed for the VS Code extension (scripts/test checks)")
    modules = EXT / "node_modules"
    lock = EXT / "package-lock.json"
    if not modules.is_dir() or lock.stat().st_mtime > modules.stat().st_mtime:
        done = _run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], 600)
        assert done.returncode == 0, done.stderr[-4000:]
    shutil.rmtree(EXT / "out", ignore_errors=True)
    done = _run([str(BIN / "tsc"), "-p", "."], 300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return EXT / "out"


def test_core_has_no_vscode_import() -> None:
    core = sorted((EXT / "src" / "core").glob("*.ts"))
    assert len(core) >= 5
    for path in core:
        assert not re.search(r"""from\s+["']vscode["']|require\(["']vscode["']\)""",
                             path.read_text()), path


def test_core_against_the_real_daemon(built: Path) -> None:
    tests = sorted(p.name for p in (built / "test").glob("*.test.js"))
    assert tests == [
        "client.test.js", "helpers.test.js", "processRunner.test.js", "terminalBuffer.test.js",
        "toolStatus.test.js",
    ]
    done = _run(["node", "--test", "out/test/"], 300)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-6000:]
    passed = re.search(r"^# pass (\d+)$", report, re.M)
    assert passed and int(passed.group(1)) >= 18, report[-3000:]
    assert re.search(r"^# fail 0$", report, re.M), report[-3000:]
    assert "ok 1 - a scripted session through the ports" in report
    assert "ok 2 - cancel kills the command" in report
    assert "ok 3 - a daemon that cannot start, or dies mid-turn" in report


@pytest.mark.slow
def test_vsix_packages(built: Path, tmp_path: Path) -> None:
    vsix = tmp_path / "acpd.vsix"
    done = _run([str(BIN / "vsce"), "package", "--out", str(vsix)], 300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert "extension/out/vscode/extension.js" in names
    assert "extension/out/core/client.js" in names
    # the SDK is an ES module loaded at run time: it must ship inside the .vsix
    assert "extension/node_modules/@agentclientprotocol/sdk/package.json" in names
    assert not any(n.startswith(("extension/out/test/", "extension/src/")) for n in names)
    settings = manifest["contributes"]["configuration"]["properties"]
    assert {"acpd.command", "acpd.model", "acpd.mode"} <= set(settings)
    views = [v["id"] for v in manifest["contributes"]["views"]["acpd"]]
    assert views == ["acpd.chat", "acpd.tools"]
