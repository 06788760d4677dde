"""A minimal ACP agent written with the official Python SDK: the baseline for the benchmarks.

It does the least an agent can do: answers initialize, creates sessions, sets modes, and for a
prompt `stream N` sends N agent_message_chunk updates before answering.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import acp
from acp.schema import AgentCapabilities, TextContentBlock


class MinimalAgent:
    def __init__(self) -> None:
        self.conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> acp.InitializeResponse:
        return acp.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION, agent_capabilities=AgentCapabilities()
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=f"sess_{uuid.uuid4().hex}")

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> Any:
        return acp.SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> Any:
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        count = int(text.split()[1]) if text.startswith("stream ") else 1
        for index in range(count):
            await self.conn.session_update(
                session_id, acp.update_agent_message_text(f"chunk {index} ")
            )
        return acp.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(acp.run_agent(MinimalAgent()))  # type: ignore[arg-type]
