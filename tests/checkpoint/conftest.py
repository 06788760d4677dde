"""A real runner (built from a real config, as the daemon builds it) over a real workspace,
with real bash and the local file system; a tree snapshot to compare byte for byte."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.config import load_config
from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.permissions import PermissionAnswer
from acpd.tools.pipeline import CallEnv, ToolPipeline
from acpd.tools.setup import build_toolkit
from acpd.tools.spec import ContentItem, DiffItem, TextItem, ToolCallView

ALLOW_RM = """
# Everything runs, deletions included: these tests are about undoing what ran. The default
# policy cannot be layered under this (its deny_write on .git cannot be lifted), so it starts
# from nothing; deleting .git content still asks (destroy.git), and the observer approves.
[policy]
inherit_default = false
max_delete_files = 1000000
[paths]
outside_write = "allow"
[[rules]]
id = "everything"
verdict = "allow"
commands = ["*"]
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Observer:
    def __init__(self) -> None:
        self.finals: dict[str, list[ContentItem]] = {}
        self.statuses: dict[str, str] = {}

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        self.statuses[view.tool_call_id] = view.status
        if view.status in ("completed", "failed"):
            self.finals[view.tool_call_id] = list(view.content)

    answer: PermissionAnswer = "reject_once"

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        return self.answer

    def diffs(self, call_id: str) -> dict[str, DiffItem]:
        return {i.path: i for i in self.finals[call_id] if isinstance(i, DiffItem)}

    def text(self, call_id: str) -> str:
        return "\n".join(i.text for i in self.finals[call_id] if isinstance(i, TextItem))


@dataclass
class Rig:
    pipeline: ToolPipeline
    env: CallEnv
    observer: Observer
    workspace: Path
    data_dir: Path
    n: int = 0
    ids: list[str] = field(default_factory=list)

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        self.n += 1
        call_id = f"call-{self.n}"
        self.ids.append(call_id)
        return await self.pipeline.run(call_id, name, args, self.env)

    async def bash(self, command: str) -> Any:
        return await self.call("bash", {"command": command})

    async def slash(self, rest: str) -> str:
        from acpd.checkpoint.commands import slash_undo

        assert self.pipeline.checkpoints is not None
        return await slash_undo(rest, self.pipeline.checkpoints, self.env, self.pipeline.audit)


RigFactory = Callable[..., Rig]


@pytest.fixture
def rig(tmp_path: Path, workspace: Path, data_dir: Path) -> RigFactory:
    def build(checkpoint: str = "", session: str = "s1") -> Rig:
        policy = tmp_path / "policy.toml"
        policy.write_text(ALLOW_RM)
        config = tmp_path / "acpd.toml"
        config.write_text(f'[agent]\ndefault_mode = "auto"\n[tools.shell]\npolicy_file = '
                          f'"{policy}"\n[tools.checkpoint]\n{checkpoint}\n')
        kit = build_toolkit(load_config(str(config)).tools, data_dir)
        observer = Observer()
        env = CallEnv(str(workspace), (str(workspace),), "auto", LocalFileSystem(),
                      LocalCommandRunner(), observer, state=kit.settings.new_state(),
                      session_id=session)
        return Rig(kit.pipeline, env, observer, workspace, data_dir)

    return build


def tree(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under root: (kind, mode, bytes or link target); never follows a link."""
    found: dict[str, tuple[Any, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("l", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("d", mode)
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("f", mode, Path(path).read_bytes())
            else:
                found[rel] = ("other", stat.S_IFMT(st.st_mode))
    return found


NO_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
          "--bounding-set=-dac_override,-dac_read_search"]


def without_read_override(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Python where a mode-000 file really cannot be read: as root, without the
    capabilities that bypass permission bits."""
    prefix = NO_DAC if os.geteuid() == 0 else []
    return subprocess.run(
        [*prefix, sys.executable, "-c", code, *args], capture_output=True, text=True,
        check=False, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
