"""`acpd lsp`: a pygls server over stdio whose commands run acpd's tool pipeline.

Commands (`workspace/executeCommand`):
- `acpd.runTool` `{"tool": NAME, "arguments": {...}}`: one call through the same pipeline and
  policy as the ACP face and `acpd tools run` (caller "lsp" in the audit log); returns the
  result text (a refusal or failure is a `[tool_error]` text, not a protocol error). A tool
  that does not exist, or arguments the tool's schema refuses, answer InvalidParams.
- `acpd.prompt` `{"text": ...}`: one model turn (lsp/turn.py).

A run shows as `window/workDoneProgress/create` + `$/progress` begin/report/end when the client
advertised `window.workDoneProgress`, `acpd/toolStatus` per card, the result as
`window/logMessage`, and diagnostics as `textDocument/publishDiagnostics` (lsp/diagnostics.py).

Stdout carries protocol only: fd 1 is duplicated for the transport and then pointed at stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

import acpd
from acpd.lsp import diagnostics
from acpd.lsp.observer import LspObserver
from acpd.lsp.params import invalid, prompt_text, run_tool_args
from acpd.tools.errors import ErrorCategory
from acpd.tools.pipeline import USER_DECLINED

if TYPE_CHECKING:
    from acpd.daemon.config import Config
    from acpd.providers.base import Message, Provider
    from acpd.tools.calls import CallResult
    from acpd.tools.pipeline import CallEnv
    from acpd.tools.setup import Toolkit

RUN_TOOL = "acpd.runTool"
PROMPT = "acpd.prompt"
CALLER_ERRORS = (
    ErrorCategory.TOOL_NOT_FOUND, ErrorCategory.INVALID_PARAMETERS, ErrorCategory.TYPE_MISMATCH,
)
REQUEST_FAILED = -32803
"""LSP's RequestFailed: the request was valid but cannot be served (no model)."""
REFUSALS = (ErrorCategory.POLICY_BLOCKED, ErrorCategory.CONFIRMATION_REQUIRED)


@dataclass(slots=True)
class Face:
    config: Config
    kit: Toolkit
    mode: str


class AcpdProtocol(LanguageServerProtocol):
    """`$/cancelRequest` also stops a running command: pygls runs an executeCommand handler
    as a task of its own, which cancelling the request's future does not reach."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.running: dict[Any, asyncio.Task[Any]] = {}

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        task = self.running.pop(msg_id, None)
        super()._handle_cancel_notification(msg_id)
        if task is not None:
            task.cancel()  # the pipeline closes the card, writes the audit line, kills the group


@contextmanager
def cancellable(ls: AcpdLanguageServer) -> Iterator[None]:
    """While the body runs, the client's `$/cancelRequest` for this request cancels it."""
    protocol = ls.protocol
    msg_id, task = protocol.msg_id, asyncio.current_task()
    if not isinstance(protocol, AcpdProtocol) or msg_id is None or task is None:
        yield
        return
    protocol.running[msg_id] = task
    try:
        yield
    finally:
        protocol.running.pop(msg_id, None)


class AcpdLanguageServer(LanguageServer):
    face: Face
    published: set[str]
    """File URIs the diagnostics tool last reported (cleared when it no longer does)."""
    history: list[Message]
    """acpd.prompt's conversation (lsp/turn.py)."""
    provider: Provider | None = None
    calls: int = 0

    def workspace_dir(self) -> str:
        root = self.workspace.root_path if self.protocol.workspace is not None else None
        return os.path.abspath(root or os.getcwd())

    def progress_supported(self) -> bool:
        window = self.client_capabilities.window
        return bool(window is not None and window.work_done_progress)

    def new_call_id(self) -> str:
        self.calls += 1
        return f"lsp_{os.getpid()}_{self.calls}_{time.time_ns()}"

    def call_env(self, observer: LspObserver) -> CallEnv:
        from acpd.daemon.local import LocalCommandRunner, LocalFileSystem
        from acpd.tools.pipeline import CallEnv

        kit, shell = self.face.kit, self.face.config.tools.shell
        workspace = self.workspace_dir()
        rules = kit.pipeline.shell
        from acpd.daemon.confine import policy_rules

        runner = LocalCommandRunner(rules=policy_rules(rules) if rules is not None else None)
        return CallEnv(
            workspace, (workspace,), self.face.mode, LocalFileSystem(), runner, observer,
            kit.approvals.for_workspace(workspace), kit.settings.new_state(), "lsp",
            shell.timeout, shell.output_byte_limit,
        )

    def log(self, text: str, failed: bool) -> None:
        kind = types.MessageType.Error if failed else types.MessageType.Info
        self.window_log_message(types.LogMessageParams(type=kind, message=text))

    def after_call(self, result: CallResult, observer: LspObserver) -> None:
        """The result as `window/logMessage`, and its diagnostics."""
        self.log(result.text, result.failed)
        _diagnostics_after(self, result, observer)

    def publish_diagnostics(self, found: dict[str, list[types.Diagnostic]]) -> None:
        for uri, items in found.items():
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=items)
            )


async def _start_progress(ls: AcpdLanguageServer, title: str) -> str | None:
    if not ls.progress_supported():
        return None
    token = f"acpd-{ls.new_call_id()}"
    try:
        await ls.work_done_progress.create_async(token)
    except Exception:  # the client refused the token: run without progress
        return None
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title))
    return token


def _end_progress(ls: AcpdLanguageServer, token: str | None, message: str) -> None:
    if token is not None:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))


def _diagnostics_after(ls: AcpdLanguageServer, result: CallResult, obs: LspObserver) -> None:
    view = obs.last
    if view is None:
        return
    found = diagnostics.from_tool_output(view.raw_output)
    if found is not None:
        # files reported earlier and clean now are cleared
        cleared: dict[str, list[types.Diagnostic]] = {uri: [] for uri in ls.published - set(found)}
        ls.publish_diagnostics({**cleared, **found})
        ls.published = set(found)
    elif (result.error is not None and result.error.category in REFUSALS
          and result.error.message != USER_DECLINED):  # the user's own no is no finding
        ls.publish_diagnostics(
            diagnostics.from_refusal(result.error.message, view.locations, view.lines)
        )


async def run_tool(ls: AcpdLanguageServer, *args: Any) -> str:
    """`acpd.runTool`: raises JsonRpcInvalidParams for bad arguments."""
    request = run_tool_args(args)
    pipeline = ls.face.kit.pipeline
    if pipeline.registry.resolve(request.tool) is None:
        refused = pipeline.registry.refused.get(request.tool)
        raise invalid(f"acpd.runTool: {refused}" if refused else
                      f"acpd.runTool: no tool named {request.tool!r}")
    token = await _start_progress(ls, f"acpd: {request.tool}")
    observer = LspObserver(ls, token)
    result: CallResult | None = None
    try:
        with cancellable(ls):
            result = await pipeline.run(
                ls.new_call_id(), request.tool, request.arguments, ls.call_env(observer),
                caller="lsp",
            )
    finally:
        _end_progress(ls, token, "failed" if result is None or result.failed else "done")
    ls.after_call(result, observer)
    if result.error is not None and result.error.category in CALLER_ERRORS:
        raise invalid(f"acpd.runTool: {result.error.message}")
    return result.text


async def prompt(ls: AcpdLanguageServer, *args: Any) -> str:
    """`acpd.prompt`: raises JsonRpcInvalidParams for bad arguments."""
    text = prompt_text(args)
    from acpd.lsp.turn import NoModel, run_prompt

    token = await _start_progress(ls, "acpd: prompt")
    try:
        with cancellable(ls):
            reply = await run_prompt(ls, text, token)
    except NoModel as exc:
        raise JsonRpcException(message=str(exc), code=REQUEST_FAILED) from None
    finally:
        _end_progress(ls, token, "done")
    ls.log(reply, False)
    return reply


def watch_policy(ls: AcpdLanguageServer) -> None:
    """Hot reload, as in the ACP face: the shell policy, its plugin overlays and the output
    filters are watched as background tasks of this connection; each reload outcome goes out
    as `acpd/policy_reloaded` and a `window/logMessage` (Warning when the last good policy was
    kept)."""
    shell = ls.face.kit.pipeline.shell
    if shell is None:
        return
    tasks: set[asyncio.Future[None]] = set()

    def start_soon(run: Callable[[], Awaitable[None]]) -> None:
        task: asyncio.Future[None] = asyncio.ensure_future(run())
        tasks.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(tasks.discard)

    async def notify(method: str, params: Any) -> None:
        found = params if isinstance(params, dict) else {}
        errors = found.get("errors")
        text = f"acpd: policy reloaded ({found.get('hash', '?')})"
        if errors:
            text = "acpd: the policy change was not applied: " + "; ".join(map(str, errors))
        kind = types.MessageType.Warning if errors else types.MessageType.Info
        ls.window_log_message(types.LogMessageParams(type=kind, message=text))
        ls.protocol.notify(method.lstrip("_"), params)

    shell.attach(start_soon, notify)


async def initialized(ls: AcpdLanguageServer, params: types.InitializedParams) -> None:
    watch_policy(ls)


def build_server(face: Face) -> AcpdLanguageServer:
    server = AcpdLanguageServer("acpd", acpd.__version__, protocol_cls=AcpdProtocol)
    server.face = face
    server.published = set()
    server.history = []
    server.command(RUN_TOOL)(run_tool)
    server.command(PROMPT)(prompt)
    server.feature(types.INITIALIZED)(initialized)
    return server


def load_face(
    config_path: str | None, data_dir: str | None, mode: str | None, model: str | None = None
) -> Face:
    """Raises ConfigError, RegistrationError or OSError when the config cannot be used."""
    from pathlib import Path

    from acpd.daemon.config import default_data_dir, load_config
    from acpd.tools.setup import build_toolkit

    config = load_config(config_path, {"agent.model": model})
    directory = Path(data_dir) if data_dir else default_data_dir()
    kit = build_toolkit(config.tools, directory)
    return Face(config, kit, mode or config.agent.default_mode)


def run(args: Any) -> int:
    """`acpd lsp`: exit 2 (with the reason on stderr) when the config cannot be used."""
    from acpd.daemon.errors import ConfigError
    from acpd.tools.registry import RegistrationError

    try:
        face = load_face(args.config, args.data_dir, args.mode, args.model)
    except (ConfigError, RegistrationError, OSError) as exc:
        print(f"acpd: {exc}", file=sys.stderr)
        return 2
    transport = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    server = build_server(face)
    try:
        server.start_io(sys.stdin.buffer, transport)
    finally:
        if face.kit.pipeline.audit is not None:
            face.kit.pipeline.audit.close()
    return 0
