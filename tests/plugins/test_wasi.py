"""WASI plugin tools through `acpd tools run`: the example module (built from its WAT),
read-only mounts enforced by wasmtime, nothing outside a mount, deny_read kept out of mounts,
writable mounts only under the preset's allow_write_paths, timeouts and output caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.helpers import (
    add_example,
    add_tool,
    build_wasm,
    plugins_dir,
    run_tool,
    write_config,
)

pytestmark = pytest.mark.slow


def test_the_example_reads_inside_its_mount_and_nothing_else(tmp_path: Path,
                                                             workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "wasi_files")
    (tmp_path / "secret.txt").write_text("outside the workspace\n")
    cfg = write_config(tmp_path, plugins)
    done = run_tool(tmp_path, cfg, "wasi_files", {"path": "hello.txt"}, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello from the workspace"
    for path in ("../secret.txt", "/etc/passwd", str(tmp_path / "secret.txt"),
                 "src/../../secret.txt"):
        refused = run_tool(tmp_path, cfg, "wasi_files", {"path": path}, cwd=workspace)
        assert refused.returncode == 1, (path, refused.stdout)
        assert "open failed: errno" in refused.stdout + refused.stderr
        assert "outside the workspace" not in refused.stdout + refused.stderr
    (workspace / "link").symlink_to(tmp_path / "secret.txt")
    linked = run_tool(tmp_path, cfg, "wasi_files", {"path": "link"}, cwd=workspace)
    assert linked.returncode == 1 and "outside the workspace" not in linked.stdout


def test_a_read_only_mount_refuses_writes(tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "wasi_files")
    cfg = write_config(tmp_path, plugins)
    for path in ("new.txt", "hello.txt", "src/other.txt"):
        done = run_tool(tmp_path, cfg, "wasi_files", {"path": path, "content": "changed"},
                        cwd=workspace)
        assert done.returncode == 1, (path, done.stdout)
        assert "open failed: errno" in done.stdout + done.stderr
    assert not (workspace / "new.txt").exists()
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"


WRITABLE = """tool_name = "scratch"
version = "1"
description = "writes into its scratch mount"
entry = "files.wasm"
[[mounts]]
host = "MOUNT"
guest = "/scratch"
read_only = false
[args]
required = ["path"]
[args.properties.path]
type = "string"
[args.properties.content]
type = "string"
"""


def test_a_writable_mount_needs_the_preset(tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    folder = add_tool(plugins, "scratch", WRITABLE.replace("MOUNT", "data"), {})
    (folder / "data").mkdir()
    build_wasm(Path(__file__).parents[2] / "examples/plugins/wasi_files/files.wat",
               folder / "files.wasm")
    cfg = write_config(tmp_path, plugins)
    refused = run_tool(tmp_path, cfg, "scratch", {"path": "a.txt", "content": "hi"},
                       cwd=workspace)
    assert "allow_write_paths does not cover it" in refused.stderr
    cfg = write_config(tmp_path, plugins, extra=(
        '[tools.capabilities]\nactive_preset = "w"\n[tools.capabilities.presets.w]\n'
        f'tools = ["scratch"]\nallow_write_paths = ["{folder / "data"}"]\n'))
    done = run_tool(tmp_path, cfg, "scratch", {"path": "a.txt", "content": "hi"},
                    cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote 2 bytes")
    assert (folder / "data" / "a.txt").read_text() == "hi"


def test_a_mount_holding_deny_read_files_is_refused(tmp_path: Path, workspace: Path) -> None:
    plugins = plugins_dir(tmp_path)
    add_example(plugins, "wasi_files")
    (workspace / ".env").write_text("TOKEN=abc\n")
    cfg = write_config(tmp_path, plugins, policy='[paths]\ndeny_read = ["**/.env"]\n')
    refused = run_tool(tmp_path, cfg, "wasi_files", {"path": ".env"}, cwd=workspace)
    assert refused.returncode == 1
    assert "category: PolicyBlocked" in refused.stderr
    assert "which deny_read protects" in refused.stderr
    assert "TOKEN" not in refused.stdout + refused.stderr


SPIN = """(module
  (memory (export "memory") 1)
  (func (export "_start") (loop $forever (br $forever))))"""

FLOOD = """(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 100) "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 100))
    (i32.store (i32.const 4) (i32.const 64))
    (loop $more
      (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
      (br $more))))"""


def _module_tool(plugins: Path, name: str, wat: str, extra: str = "") -> None:
    folder = add_tool(plugins, name, f'tool_name = "{name}"\nversion = "1"\n'
                      f'description = "test"\nmax_runtime_ms = 1000\n{extra}', {})
    build_wasm(wat, folder / f"{name}.wasm")


def test_a_spinning_module_is_stopped_and_a_flood_is_cut(tmp_path: Path, workspace: Path
                                                         ) -> None:
    plugins = plugins_dir(tmp_path)
    _module_tool(plugins, "spin", SPIN)
    _module_tool(plugins, "flood", FLOOD, "max_stdout_bytes = 5000\n")
    cfg = write_config(tmp_path, plugins)
    spin = run_tool(tmp_path, cfg, "spin", {}, cwd=workspace)
    assert spin.returncode == 1
    assert "category: Timeout" in spin.stderr and "1000 ms" in spin.stderr
    flood = run_tool(tmp_path, cfg, "flood", {}, cwd=workspace)
    assert flood.returncode == 1
    assert "more than max_stdout_bytes (5000)" in flood.stderr
