"""A real toolkit (build_toolkit: registry, policy, audit, the native tools on a real data dir)
and a CallEnv for calls made in-process through the one pipeline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acpd.daemon.config import ToolsConfig
from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
from acpd.tools.permissions import PermissionAnswer
from acpd.tools.pipeline import CallEnv, CallResult, MemoryApprovals
from acpd.tools.setup import Toolkit, build_toolkit
from acpd.tools.spec import ToolCallView
from acpd.tools.state import SessionTools


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Cards:
    """The editor side: records each card, allows what is asked."""

    def __init__(self) -> None:
        self.views: list[ToolCallView] = []

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        self.views.append(view)

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        return "allow_once"


@dataclass
class Rig:
    kit: Toolkit
    env: CallEnv
    calls: int = 0

    async def run(self, name: str, args: dict[str, Any]) -> CallResult:
        self.calls += 1
        return await self.kit.pipeline.run(f"t{self.calls}", name, args, self.env)


RigFactory = Callable[..., Rig]


@pytest.fixture
def rig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RigFactory:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))

    def build(tools: dict[str, Any] | None = None, ws: Path | None = None,
              session_id: str = "sess-test") -> Rig:
        workspace = ws or tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        config = ToolsConfig.model_validate(
            {"checkpoint": {"enabled": False}, **(tools or {})}
        )
        kit = build_toolkit(config, tmp_path / "data")
        env = CallEnv(str(workspace), (str(workspace),), "ask", LocalFileSystem(),
                      LocalCommandRunner(), Cards(), MemoryApprovals(), SessionTools(),
                      session_id)
        return Rig(kit, env)

    return build
