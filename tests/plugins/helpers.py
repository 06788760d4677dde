"""Plugin folders for tests: copies of examples/plugins (the WASI one built from its WAT),
tools written on the spot, a config that points acpd at them, and `acpd tools run`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "plugins"


def build_wasm(wat: str | Path, out: Path) -> Path:
    import wasmtime

    text = Path(wat).read_text() if isinstance(wat, Path) else wat
    out.write_bytes(wasmtime.wat2wasm(text))
    out.chmod(0o644)
    return out


def plugins_dir(tmp: Path) -> Path:
    path = tmp / "plugins"
    path.mkdir(mode=0o755, exist_ok=True)
    path.chmod(0o755)
    return path


def add_example(plugins: Path, name: str) -> Path:
    folder = plugins / name
    shutil.copytree(EXAMPLES / name, folder)
    if name == "wasi_files":
        build_wasm(folder / "files.wat", folder / "files.wasm")
    return folder


def add_tool(plugins: Path, name: str, manifest: str, files: dict[str, str | bytes],
             executable: tuple[str, ...] = ()) -> Path:
    folder = plugins / name
    folder.mkdir(mode=0o755)
    (folder / "tool.toml").write_text(manifest)
    for file, content in files.items():
        path = folder / file
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        path.chmod(0o755 if file in executable else 0o644)
    return folder


def native_manifest(name: str, entry: str, *, runtime_ms: int = 5000,
                    stdout: int = 4096, extra: str = "") -> str:
    return (f'tool_name = "{name}"\nversion = "1.0"\ndescription = "test tool {name}"\n'
            f'native = true\nentry = "{entry}"\nmax_runtime_ms = {runtime_ms}\n'
            f"max_stdout_bytes = {stdout}\nmax_stderr_bytes = 1024\n{extra}")


def write_config(tmp: Path, plugins: Path, *, allow_external: bool = True,
                 extra: str = "", policy: str = "") -> Path:
    policy_file = tmp / "policy.toml"
    policy_file.write_text(policy)
    path = tmp / "config.toml"
    path.write_text(
        f'[tools.shell]\npolicy_file = "{policy_file}"\nplugin_dirs = ["{plugins}"]\n'
        f"[tools.filter]\nallow_external = {str(allow_external).lower()}\n{extra}")
    return path


def tools_cli(tmp: Path, cfg: Path, *argv: str, cwd: Path | None = None
              ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "acpd", "tools", *argv, "--config", str(cfg),
         "--data-dir", str(tmp / "data")],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
        cwd=cwd or tmp)


def run_tool(tmp: Path, cfg: Path, tool: str, args: dict[str, Any], *, cwd: Path,
             mode: str = "auto") -> subprocess.CompletedProcess[str]:
    return tools_cli(tmp, cfg, "run", tool, "--args", json.dumps(args), "--cwd", str(cwd),
                     "--mode", mode)
