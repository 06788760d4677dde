"""The pipeline's observer for an LSP client: cards become notifications, asks become
`window/showMessageRequest`.

Every publish of a card sends `acpd/toolStatus` `{id, title, kind, status}` (for status
lines) and, when the client advertised `window.workDoneProgress`, a `$/progress` report on
the run's token. An ask offers exactly two actions, "Allow once" and "Reject"; closing the
message (a null answer) or a client that cannot be asked rejects. The last card is kept so
the face can publish diagnostics from it once the call is over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from acpd.tools.permissions import PermissionAnswer
    from acpd.tools.spec import ToolCallView

TOOL_STATUS = "acpd/toolStatus"
ALLOW_ONCE = "Allow once"
REJECT = "Reject"


class LspObserver:
    def __init__(self, server: LanguageServer, progress_token: str | None) -> None:
        self.server = server
        self.token = progress_token
        self.last: ToolCallView | None = None

    async def publish(self, view: ToolCallView, *, first: bool) -> None:
        self.last = view
        status: dict[str, Any] = {
            "id": view.tool_call_id, "title": view.title, "kind": view.kind,
            "status": view.status,
        }
        self.server.protocol.notify(TOOL_STATUS, status)
        if self.token is not None:
            self.server.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=f"{view.title}: {view.status}")
            )

    async def ask(self, view: ToolCallView) -> PermissionAnswer:
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"acpd: allow {view.title!r}?",
            actions=[types.MessageActionItem(ALLOW_ONCE), types.MessageActionItem(REJECT)],
        )
        try:
            answer = await self.server.window_show_message_request_async(params)
        except Exception:  # the client failed the request: nobody could be asked
            return "unavailable"
        if answer is not None and answer.title == ALLOW_ONCE:
            return "allow_once"
        return "reject_once"
