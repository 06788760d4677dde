"""A real `acpd lsp` subprocess driven by pytest-lsp's client, initialized with the client
capabilities pytest-lsp recorded from real editors (Neovim 0.11, VS Code 1.65)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

CLIENTS = ("neovim", "visual-studio-code")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Session:
    client: LanguageClient
    workspace: Path
    asked: list[str]
    statuses: list[dict[str, Any]] = field(default_factory=list)

    async def run_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        return await self.execute("acpd.runTool", [{"tool": tool, "arguments": arguments}])

    async def execute(self, command: str, arguments: list[Any] | None) -> Any:
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command, arguments=arguments)
        )


def workspace_in(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello from the workspace\n")
    (workspace / ".env").write_text("API_TOKEN=do-not-read\n")
    return workspace


@asynccontextmanager
async def lsp_session(
    tmp_path: Path, client: str = "neovim", *, answers: list[str | None] | None = None,
    progress: bool | None = None, args: tuple[str, ...] = (), config: str = "",
) -> AsyncIterator[Session]:
    """`answers`: what the client picks for each `window/showMessageRequest`, in order
    (None closes the message); `progress` overrides `window.workDoneProgress`."""
    workspace = workspace_in(tmp_path)
    config_file = tmp_path / "config.toml"
    config_file.write_text(config)
    env = {**os.environ, "ACPD_CONFIG": str(config_file)}
    command = [sys.executable, "-m", "acpd", "lsp", "--config", str(config_file),
               "--data-dir", str(tmp_path / "data"), *args]
    lsp = await ClientServerConfig(server_command=command, server_env=env).start()
    assert isinstance(lsp, LanguageClient)
    asked: list[str] = []
    pending = list(answers or [])
    session = Session(lsp, workspace, asked)

    @lsp.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(
        params: types.ShowMessageRequestParams,
    ) -> types.MessageActionItem | None:
        asked.append(params.message)
        titles = [a.title for a in params.actions or []]
        assert titles == ["Allow once", "Reject"]
        answer = pending.pop(0) if pending else None
        return types.MessageActionItem(answer) if answer is not None else None

    @lsp.feature("acpd/toolStatus")
    def tool_status(params: Any) -> None:
        session.statuses.append(dict(params._asdict() if hasattr(params, "_asdict")
                                     else vars(params)))

    capabilities = client_capabilities(client)
    if progress is not None:
        window = capabilities.window or types.WindowClientCapabilities()
        window.work_done_progress = progress
        capabilities.window = window
    await lsp.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "ws")],
    ))
    try:
        yield session
    finally:
        await lsp.shutdown_session()
        await lsp.stop()
