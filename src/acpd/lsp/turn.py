"""`acpd.prompt`: one model turn for the LSP face, over the same pieces as the ACP loop.

daemon/turn.py is bound to ACP sessions (session updates, the session store), so this is a
smaller loop over the same parts: the provider (providers/factory.py), the catalog the
pipeline offers in the mode, and `ToolPipeline.run` for every call (same policy, audit and
asks). Limits from `[agent]`: `max_tool_iterations` rounds with tool calls,
`max_tool_calls_per_reply` calls per reply (the rest are answered as not run), `max_tokens`.
The conversation is kept for the life of the server (one per `acpd lsp` process). Streamed
text goes out as `$/progress` reports when the client supports them; the whole reply is the
command's result. A provider failure ends the turn with a line saying why; `$/cancelRequest`
stops the model stream and the running call, and every call of the reply still gets a result.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING

import anyio.lowlevel

from acpd.lsp.observer import LspObserver
from acpd.providers.base import (
    Message,
    ModelRequest,
    ProviderError,
    TextDelta,
    ToolCallEvent,
    ToolCallRequest,
    ToolDefinition,
)

if TYPE_CHECKING:
    from acpd.lsp.server import AcpdLanguageServer
    from acpd.providers.base import Provider

SYSTEM_PROMPT = (
    "You are acpd, a coding agent reached through the user's LSP client. The workspace is "
    "{cwd}. Use the tools to read, search and run commands; every call may need the user's "
    "approval. Say plainly what you ran and what it showed."
)
CANCELLED = "[tool_error]\ncategory: Cancelled\nmessage: the user cancelled the turn\n"
NOT_RUN = "[tool_error]\ncategory: Cancelled\nmessage: not run (max_tool_calls_per_reply)\n"


class NoModel(Exception):
    """No usable model (`--model` or `[agent] model`): none set, or it cannot be built."""


def provider_for(ls: AcpdLanguageServer) -> Provider:
    """The face's provider, built once. Raises NoModel, or the provider's error."""
    found: Provider | None = getattr(ls, "provider", None)
    if found is not None:
        return found
    from acpd.providers.factory import make_provider

    spec = ls.face.config.agent.model
    if not spec:
        raise NoModel("no model: start `acpd lsp --model KIND:NAME` or set [agent] model")
    try:
        found = make_provider(spec, ls.face.config)
    except Exception as exc:  # a bad spec, a script that does not load, a missing key
        raise NoModel(f"the model {spec!r} cannot be used: {exc}") from None
    ls.provider = found
    return found


async def _reply(
    ls: AcpdLanguageServer, provider: Provider, request: ModelRequest, token: str | None
) -> tuple[str, list[ToolCallRequest]]:
    parts: list[str] = []
    calls: list[ToolCallRequest] = []
    async with contextlib.aclosing(provider.stream(request)) as events:
        async for event in events:
            await anyio.lowlevel.checkpoint()
            if isinstance(event, TextDelta):
                parts.append(event.text)
                if token is not None:
                    from lsprotocol import types

                    ls.work_done_progress.report(
                        token, types.WorkDoneProgressReport(message=event.text[-200:])
                    )
            elif isinstance(event, ToolCallEvent):
                calls.append(event.call)
    return "".join(parts), calls


async def run_prompt(ls: AcpdLanguageServer, text: str, token: str | None) -> str:
    """Run the turn; returns all the text the model wrote (and a note when it stopped early).
    Raises NoModel when no model is configured."""
    provider = provider_for(ls)
    agent = ls.face.config.agent
    history = ls.history
    history.append(Message("user", text))
    observer = LspObserver(ls, token)
    env = ls.call_env(observer)
    system = (agent.system_prompt or SYSTEM_PROMPT).replace("{cwd}", env.cwd)
    said: list[str] = []
    for _round in range(agent.max_tool_iterations + 1):
        tools = [ToolDefinition(name, s.description, s.input_schema())
                 for name, s in ls.face.kit.pipeline.catalog(env.mode, env.state)]
        request = ModelRequest(system, list(history), tools, agent.max_tokens)
        try:
            reply, calls = await _reply(ls, provider, request, token)
        except ProviderError as exc:
            said.append(f"\n[acpd] The model call failed: {exc}")
            return "".join(said)
        said.append(reply)
        history.append(Message("assistant", reply, list(calls)))
        if not calls:
            return "".join(said)
        answered = len(history)
        try:
            for n, call in enumerate(calls):
                if n >= agent.max_tool_calls_per_reply:
                    history.append(Message("tool", NOT_RUN, tool_call_id=call.id,
                                           is_error=True))
                    continue
                result = await ls.face.kit.pipeline.run(
                    f"tc_{uuid.uuid4().hex[:20]}", call.name, call.arguments, env,
                    invalid_json=call.invalid_json,
                )
                ls.after_call(result, observer)
                history.append(Message("tool", result.text, tool_call_id=call.id,
                                       is_error=result.error is not None))
        finally:
            # a cancelled turn still answers every call: providers refuse a history with
            # unanswered tool calls, and the next prompt would fail
            for call in calls[len(history) - answered:]:
                history.append(Message("tool", CANCELLED, tool_call_id=call.id, is_error=True))
    said.append(f"\n[acpd] Stopped after {agent.max_tool_iterations} tool rounds.")
    return "".join(said)
